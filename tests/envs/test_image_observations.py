"""Image observations: the stdlib PNG writer and reader, frame styling, and the protocol's image/both modes."""

from __future__ import annotations

import hashlib
import io
import json
import struct
import zlib

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragen_envs import make
from ragen_envs.images import decode_png, encode_png, image_digest, png_from_data_url, styled_frame
from ragen_envs.text import ProtocolConfig, TextEpisode, format_reply, oracle_actions, replay


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 9), st.integers(1, 9), st.integers(0, 2**32 - 1), st.integers(0, 9))
def test_png_round_trips_any_frame(height, width, seed, level):
    frame = np.random.default_rng(seed).integers(0, 256, (height, width, 3), dtype=np.uint8)
    png = encode_png(frame, level)
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    np.testing.assert_array_equal(decode_png(png), frame)


def test_png_chunks_are_well_formed_by_an_independent_walk():
    frame = np.arange(2 * 3 * 3, dtype=np.uint8).reshape(2, 3, 3)
    png = encode_png(frame)
    offset, kinds = 8, []
    while offset < len(png):
        (length,) = struct.unpack(">I", png[offset:offset + 4])
        kind, body = png[offset + 4:offset + 8], png[offset + 8:offset + 8 + length]
        (crc,) = struct.unpack(">I", png[offset + 8 + length:offset + 12 + length])
        assert crc == zlib.crc32(kind + body)
        kinds.append(kind)
        offset += 12 + length
    assert kinds == [b"IHDR", b"IDAT", b"IEND"]
    raw = zlib.decompress(png[8 + 12 + 13 + 8:-12 - 4])
    assert raw == b"\x00" + frame[0].tobytes() + b"\x00" + frame[1].tobytes()


def test_pillow_reads_our_png_and_we_read_pillows_filtered_png():
    image_module = pytest.importorskip("PIL.Image")
    rng = np.random.default_rng(1)
    # A smooth gradient with noise makes pillow's encoder choose the sub, up, average and Paeth filters.
    y, x = np.mgrid[0:40, 0:50]
    frame = ((np.stack([x * 5, y * 6, x + y], axis=2) + rng.integers(0, 3, (40, 50, 3))) % 256).astype(np.uint8)
    read = np.asarray(image_module.open(io.BytesIO(encode_png(frame))).convert("RGB"))
    np.testing.assert_array_equal(read, frame)
    buffer = io.BytesIO()
    image_module.fromarray(frame).save(buffer, format="PNG", optimize=True)
    np.testing.assert_array_equal(decode_png(buffer.getvalue()), frame)


def test_styled_frame_scales_by_nearest_neighbour_and_grays_by_luma():
    frame = np.array([[[255, 0, 0], [0, 255, 0]], [[0, 0, 255], [10, 20, 30]]], dtype=np.uint8)
    big = styled_frame(frame, size=6)
    assert big.shape == (6, 6, 3)
    np.testing.assert_array_equal(big, np.repeat(np.repeat(frame, 3, axis=0), 3, axis=1))
    gray = styled_frame(frame, style="gray")
    expected = [[round(0.299 * 255), round(0.587 * 255)],
                [round(0.114 * 255), round(0.299 * 10 + 0.587 * 20 + 0.114 * 30)]]
    np.testing.assert_array_equal(gray[:, :, 0], expected)
    assert (gray == gray[:, :, :1]).all()
    wide = styled_frame(np.zeros((4, 8, 3), np.uint8), size=16)
    assert wide.shape == (8, 16, 3)
    with pytest.raises(ValueError, match="style"):
        styled_frame(frame, style="sepia")


@pytest.mark.parametrize("bad", [{"observation": "video"}, {"image_size": 2}, {"image_size": True},
                                 {"image_style": "sepia"}])
def test_bad_image_options_are_refused_naming_the_field(bad):
    with pytest.raises(ValueError, match=next(iter(bad))):
        ProtocolConfig(**bad)


def _image_of(content):
    urls = [part["image_url"]["url"] for part in content if part["type"] == "image_url"]
    assert len(urls) == 1
    return png_from_data_url(urls[0])


def test_visual_preset_shows_the_rgb_array_frame_and_records_its_digest():
    episode = TextEpisode("visual_sokoban", 3)
    assert episode.config.observation == "image"
    env = make("simple_sokoban", render_mode="rgb_array")
    env.reset(seed=episode.seed)
    user = episode.messages[1]["content"]
    assert [part["type"] for part in user] == ["text", "image_url", "text"]
    assert "Turn 1 of" in user[0]["text"] and "Actions left" in user[2]["text"]
    assert "#" not in user[0]["text"].split("State:")[-1]  # image mode: no grid text
    first = _image_of(user)
    # The same level as simple_sokoban's: the image is that env's own rgb_array frame, unchanged.
    np.testing.assert_array_equal(decode_png(first), env.render())
    turns = []
    while not episode.done:
        image = episode.image
        turns.append(episode.step(format_reply(oracle_actions(episode), "||", "plan")))
        assert turns[-1]["image"] == "sha256:" + hashlib.sha256(image).hexdigest()
    assert episode.success
    assert turns[0]["image"] == image_digest(first)
    line = json.dumps(episode.record())
    assert "data:image" not in line and "base64" not in line
    replay(json.loads(line))  # the resolved protocol in the record rebuilds the same chat
    # Every later user message carries the picture of the state after the previous turn.
    later = [m["content"] for m in episode.history[3::2]]
    assert [image_digest(_image_of(c)) for c in later] == [t["image"] for t in turns[1:]]


def test_both_mode_keeps_the_grid_text_and_text_mode_is_unchanged():
    text = TextEpisode("simple_sokoban", 0)
    both = TextEpisode("simple_sokoban", 0, ProtocolConfig(observation="both", image_size=96, image_style="gray"))
    plain = text.messages[1]["content"]
    assert isinstance(plain, str) and "image" not in text.step("<answer>Up</answer>")
    parts = both.messages[1]["content"]
    # The same text, the picture's legend added.
    assert (parts[0]["text"] + parts[2]["text"]).replace("\n" + both.game.image_legend, "") == plain
    frame = decode_png(_image_of(parts))
    assert frame.shape == (96, 96, 3) and (frame == frame[:, :, :1]).all()
    assert TextEpisode("visual_frozenlake", 0, {"observation": "text"}).messages[1]["content"] == \
        TextEpisode("frozenlake", 0).messages[1]["content"]


def test_image_mode_refuses_a_human_window():
    with pytest.raises(ValueError, match="render_mode"):
        TextEpisode("visual_frozenlake", 0, render_mode="human")


@pytest.mark.parametrize("env", ["simple_sokoban", "frozenlake", "bandit"])
def test_the_legend_describes_the_picture_only_when_there_is_one(env):
    def intro(observation):
        content = TextEpisode(env, 0, {"observation": observation}).messages[1]["content"]
        return content if isinstance(content, str) else content[0]["text"]

    picture = TextEpisode(env, 0).game.image_legend
    assert picture not in intro("text")
    assert picture in intro("image") and picture in intro("both")


@pytest.mark.parametrize(("visual", "text"),
                         [("visual_sokoban", "simple_sokoban"), ("visual_frozenlake", "frozenlake")])
def test_a_visual_preset_plays_exactly_as_its_text_preset(visual, text):
    from ragen_envs.text import random_actions

    for seed in range(6):
        records = []
        for name in (visual, text):
            episode, rng = TextEpisode(name, seed), np.random.default_rng(seed)
            while not episode.done:
                episode.step(format_reply(random_actions(episode, rng), "||", "try"))
            records.append(episode.record())
        seen, plain = records
        assert seen["protocol"].pop("observation") == "image" and plain["protocol"].pop("observation") == "text"
        for turn in seen["turns"]:
            assert turn.pop("image").startswith("sha256:")
        for key in ("env", "env_id"):
            seen.pop(key), plain.pop(key)
        assert seen == plain


def test_pictures_need_neither_pillow_nor_pygame(tmp_path):
    import subprocess
    import sys

    code = ("import sys; sys.modules['PIL'] = None; sys.modules['pygame'] = None\n"
            "from ragen_envs.text import TextEpisode, save_episode_frames\n"
            "e = TextEpisode('visual_sokoban', 1); e.step('<think>a</think><answer>Down</answer>')\n"
            f"print(len(save_episode_frames(e.record(), {str(tmp_path)!r})))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "2" and len(list(tmp_path.glob("*.png"))) == 2
