"""Tile images, GIFs, text panels and the pygame window of ragen_envs.rendering."""

from __future__ import annotations

import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragen_envs.rendering import (
    GRID_LINE_COLOR,
    SHAPES,
    FrameOutput,
    HumanWindow,
    TileStyle,
    frame_with_text,
    render_tiles,
    save_gif,
)

STYLES = [
    TileStyle((200, 230, 255)),
    TileStyle((20, 40, 90), "circle", (230, 40, 40)),
    TileStyle((250, 210, 60), "cross"),
]


def test_render_tiles_shape_background_shape_and_grid_lines():
    codes = np.array([[0, 1, 2], [2, 1, 0]])
    image = render_tiles(codes, STYLES, tile_size=20)
    assert image.shape == (40, 60, 3) and image.dtype == np.uint8
    for r in range(2):
        for c in range(3):
            style = STYLES[codes[r, c]]
            top, left = r * 20, c * 20
            # Just inside the top-left corner: background; the centre: the shape's colour when there is one.
            assert tuple(image[top + 2, left + 2]) == style.background
            centre = tuple(image[top + 10, left + 10])
            assert centre == (style.background if style.shape == "none" else style.color)
            assert tuple(image[top, left + 10]) == GRID_LINE_COLOR
            assert tuple(image[top + 10, left]) == GRID_LINE_COLOR
    assert (image[-1] == GRID_LINE_COLOR).all() and (image[:, -1] == GRID_LINE_COLOR).all()


def test_every_shape_draws_something_distinct():
    masks = {}
    for shape in SHAPES:
        tile = render_tiles(np.zeros((1, 1), int), [TileStyle((255, 255, 255), shape, (0, 0, 0))], tile_size=32)
        masks[shape] = (tile[1:-1, 1:-1] == 0).all(axis=2)
    assert not masks["none"].any()
    drawn = [s for s in SHAPES if s != "none"]
    for shape in drawn:
        assert masks[shape].sum() > 10, shape
    for i, a in enumerate(drawn):
        for b in drawn[i + 1:]:
            assert (masks[a] != masks[b]).any(), (a, b)


@settings(max_examples=40, deadline=None)
@given(
    codes=st.lists(st.lists(st.integers(0, 2), min_size=1, max_size=5), min_size=1, max_size=5).filter(
        lambda rows: len({len(r) for r in rows}) == 1
    ),
    tile_size=st.integers(4, 24),
)
def test_each_block_is_the_single_tile_picture(codes, tile_size):
    codes = np.array(codes)
    image = render_tiles(codes, STYLES, tile_size)
    singles = [render_tiles(np.array([[k]]), STYLES, tile_size) for k in range(len(STYLES))]
    for r in range(codes.shape[0]):
        for c in range(codes.shape[1]):
            block = image[r * tile_size:(r + 1) * tile_size, c * tile_size:(c + 1) * tile_size]
            # Compare all but the last row/column, where the board's closing line may sit.
            expected = singles[codes[r, c]]
            assert np.array_equal(block[:-1, :-1], expected[:-1, :-1])


@pytest.mark.parametrize(
    ("codes", "styles", "tile_size", "match"),
    [
        (np.array([[0, 3]]), STYLES, 16, "0..2"),
        (np.array([[-1]]), STYLES, 16, "0..2"),
        (np.array([[0.0]]), STYLES, 16, "integers"),
        (np.zeros((2, 2, 2), int), STYLES, 16, "2-D"),
        (np.zeros((0, 3), int), STYLES, 16, "non-empty"),
        (np.zeros((1, 1), int), [], 16, "at least one"),
        (np.zeros((1, 1), int), STYLES, 2, "tile_size"),
    ],
)
def test_render_tiles_rejects_bad_input(codes, styles, tile_size, match):
    with pytest.raises((ValueError, TypeError), match=match):
        render_tiles(codes, styles, tile_size)


def test_tile_style_rejects_bad_fields():
    with pytest.raises(ValueError, match="shape"):
        TileStyle((0, 0, 0), "hexagon")
    with pytest.raises(ValueError, match="background"):
        TileStyle((0, 0, 256))
    with pytest.raises(ValueError, match="color"):
        TileStyle((0, 0, 0), "circle", (1, 2))


@pytest.mark.render
def test_save_gif_round_trip(tmp_path):
    from PIL import Image

    frames = [render_tiles(np.array([[k % 3, 0]]), STYLES, 16) for k in range(5)]
    frames.append(frame_with_text(frames[0], "a longer frame"))
    path = save_gif(frames, tmp_path / "sub" / "play.gif", fps=5)
    assert path.exists()
    with Image.open(path) as gif:
        assert gif.n_frames == 6
        assert gif.size == (frames[-1].shape[1], frames[-1].shape[0])
        assert gif.info["duration"] == 200
        gif.seek(1)
        first_tile = np.asarray(gif.convert("RGB"))[:16, :16]
    assert np.abs(first_tile.astype(int) - frames[1][:16, :16].astype(int)).max() <= 8


def test_save_gif_rejects_bad_input(tmp_path):
    with pytest.raises(ValueError, match="at least one frame"):
        save_gif([], tmp_path / "x.gif")
    with pytest.raises(ValueError, match="fps"):
        save_gif([np.zeros((4, 4, 3), np.uint8)], tmp_path / "x.gif", fps=0)
    with pytest.raises(TypeError, match="uint8"):
        save_gif([np.zeros((4, 4, 3), np.float32)], tmp_path / "x.gif")
    with pytest.raises(ValueError, match=r"frames\[1\]"):
        save_gif([np.zeros((4, 4, 3), np.uint8), np.zeros((4, 4), np.uint8)], tmp_path / "x.gif")


@pytest.mark.render
def test_frame_with_text_keeps_frame_and_writes_text():
    frame = render_tiles(np.array([[0, 1], [2, 0]]), STYLES, 16)
    empty = frame_with_text(frame, "", panel_width=200)
    assert empty.shape == (32, 232, 3)
    assert np.array_equal(empty[:, :32], frame)
    assert (empty[:, 32:] == 255).all()
    short = frame_with_text(frame, "go right", panel_width=200)
    assert (short[:, 32:] < 128).any()  # dark text pixels in the panel
    long = frame_with_text(frame, "word " * 400, panel_width=200)
    assert long.shape[0] > frame.shape[0] and long.shape[1] == 232
    assert np.array_equal(long[:32, :32], frame)


def test_frame_with_text_rejects_bad_input():
    frame = np.zeros((8, 8, 3), np.uint8)
    with pytest.raises(TypeError, match="text"):
        frame_with_text(frame, None)
    with pytest.raises(ValueError, match="panel_width"):
        frame_with_text(frame, "x", panel_width=5)
    with pytest.raises(ValueError, match="shape"):
        frame_with_text(np.zeros((8, 8), np.uint8), "x")


@pytest.mark.render
def test_human_window_shows_and_closes(monkeypatch):
    monkeypatch.setenv("SDL_VIDEODRIVER", "dummy")
    window = HumanWindow("test")
    frame = render_tiles(np.array([[0, 1]]), STYLES, 16)
    window.show(frame, fps=1000)
    assert window._screen.get_size() == (32, 16)
    window.show(frame, fps=1000)
    window.close()
    window.close()


def test_frame_output_returns_rgb_frames_without_pygame_and_shows_human_ones(monkeypatch):
    frame = render_tiles(np.array([[0, 1]]), STYLES, 16)
    output = FrameOutput("test")
    with monkeypatch.context() as without_pygame:
        without_pygame.setitem(sys.modules, "pygame", None)  # rgb_array must not need the [render] extra
        assert output.emit(frame, "rgb_array", fps=4) is frame and not output.window_open
        with pytest.raises(ImportError, match=r"ragen-envs\[render\]"):
            output.emit(frame, "human", fps=4)
    monkeypatch.setenv("SDL_VIDEODRIVER", "dummy")
    pygame = pytest.importorskip("pygame")

    assert output.emit(frame, "human", fps=1000) is None and output.window_open and pygame.display.get_init()
    output.close()
    output.close()
    assert not output.window_open and not pygame.display.get_init()
    with pytest.raises(ValueError, match="render_mode"):
        output.emit(frame, "ansi", fps=4)


@pytest.mark.parametrize("name", ["bandit", "frozenlake", "sokoban"])
def test_every_game_opens_a_human_window_and_closes_it(monkeypatch, name):
    pygame = pytest.importorskip("pygame")
    monkeypatch.setenv("SDL_VIDEODRIVER", "dummy")
    import ragen_envs

    env = ragen_envs.make(name, render_mode="human").unwrapped
    env.metadata = {**env.metadata, "render_fps": 1000}
    env.reset(seed=0)
    assert env.render() is None and pygame.display.get_init()
    env.close()
    assert not pygame.display.get_init()
    rgb = ragen_envs.make(name, render_mode="rgb_array")
    rgb.reset(seed=0)
    assert rgb.render().ndim == 3


def test_missing_optional_packages_name_the_extra(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "pygame", None)
    with pytest.raises(ImportError, match=r"ragen-envs\[render\]"):
        HumanWindow("x")
    monkeypatch.setitem(sys.modules, "PIL", None)
    with pytest.raises(ImportError, match=r"ragen-envs\[render\]"):
        save_gif([np.zeros((4, 4, 3), np.uint8)], tmp_path / "x.gif")
