"""Image observations over HTTP: ragen-eval sends the pictures, ragen-eval serve takes them, runs keep digests."""

from __future__ import annotations

import json

import httpx
import pytest

from ragen_envs.images import decode_png, image_digest, png_from_data_url
from ragen_eval.agents.base import Completion, SamplingParams
from ragen_eval.agents.chat_policies import ChatRandomAgent
from ragen_eval.cli import main
from ragen_eval.serve import MAX_IMAGES, ServeConfig, serve_in_thread


class RecordingAgent(ChatRandomAgent):
    """The served random policy, keeping every request's messages as the server handed them over."""

    def __init__(self) -> None:
        super().__init__()
        self.requests: list[list[dict]] = []

    async def act(self, messages, *, n=1, sampling=SamplingParams(), episode=None) -> list[Completion]:
        self.requests.append(messages)
        return await super().act(messages, n=n, sampling=sampling, episode=episode)


def _episodes(run) -> list[dict]:
    return [json.loads(line) for line in (run / "episodes.jsonl").read_text().splitlines()]


def test_ragen_eval_sends_pngs_and_the_run_keeps_only_their_digests(tmp_path):
    agent = RecordingAgent()
    with serve_in_thread(ServeConfig(port=0), agent) as url:
        code = main(["--model", "served", "--base-url", url, "--env", "visual_sokoban", "--episodes", "3",
                     "--out", str(tmp_path), "--run-name", "r", "--no-progress"])
    assert code == 0
    sent = []
    for messages in agent.requests:
        parts = messages[-1]["content"]
        assert [p["type"] for p in parts] == ["text", "image_url", "text"]
        png = png_from_data_url(parts[1]["image_url"]["url"])
        assert decode_png(png).shape == (192, 192, 3)
        sent.append(image_digest(png))
    episodes = _episodes(tmp_path / "r")
    recorded = [turn["image"] for episode in episodes for turn in episode["turns"]]
    assert sorted(recorded) == sorted(sent) and len(recorded) == len(agent.requests)
    text = (tmp_path / "r" / "episodes.jsonl").read_text()
    assert "data:image" not in text and "iVBORw0KGgo" not in text
    # The served random policy read the chat's text parts: every reply was well formed.
    assert all(turn["format_ok"] for episode in episodes for turn in episode["turns"])


def test_the_served_oracle_wins_from_the_grid_text_beside_the_picture(tmp_path):
    with serve_in_thread(ServeConfig(port=0, agent="oracle")) as url:
        code = main(["--model", "served", "--base-url", url, "--env", "visual_sokoban", "--episodes", "4",
                     "--protocol", "observation=both", "--out", str(tmp_path), "--run-name", "o", "--no-progress"])
    assert code == 0
    episodes = _episodes(tmp_path / "o")
    assert len(episodes) == 4 and all(e["success"] for e in episodes)
    assert all(turn["image"].startswith("sha256:") for e in episodes for turn in e["turns"])


@pytest.mark.parametrize(("part", "needle"), [
    ({"type": "image_url", "image_url": {"url": "http://example.com/a.png"}}, "data:image/"),
    ({"type": "image_url", "image_url": "data:image/png;base64,"}, "data:image/"),
    ({"type": "image_url"}, "data:image/"),
])
def test_image_parts_that_would_make_the_server_fetch_are_refused(part, needle):
    with serve_in_thread(ServeConfig(port=0, agent="random")) as url:
        response = httpx.post(url + "/chat/completions",
                              json={"model": "m", "messages": [{"role": "user", "content": [part]}]})
    assert response.status_code == 400 and needle in response.json()["error"]["message"]


def test_a_request_with_too_many_images_is_refused():
    image = {"type": "image_url", "image_url": {"url": "data:image/png;base64,"}}
    with serve_in_thread(ServeConfig(port=0, agent="random")) as url:
        response = httpx.post(url + "/chat/completions", json={
            "model": "m", "messages": [{"role": "user", "content": [image] * (MAX_IMAGES + 1)}]})
    assert response.status_code == 400 and str(MAX_IMAGES) in response.json()["error"]["message"]


def test_show_frames_writes_the_pictures_the_model_was_shown(tmp_path, capsys):
    assert main(["--model", "oracle", "--env", "visual_sokoban", "--episodes", "2", "--out", str(tmp_path),
                 "--run-name", "o", "--no-progress"]) == 0
    record = _episodes(tmp_path / "o")[0]
    key = f"visual_sokoban:{record['seed']}"
    assert main(["show", str(tmp_path / "o"), "--episode", key, "--frames", str(tmp_path / "frames")]) == 0
    names = sorted(p.name for p in (tmp_path / "frames").iterdir())
    assert names == ["final.png"] + [f"turn_{k:02d}.png" for k in range(1, len(record["turns"]) + 1)]
    for turn in record["turns"]:
        assert image_digest((tmp_path / "frames" / f"turn_{turn['turn']:02d}.png").read_bytes()) == turn["image"]
    # The end: the box on its target, drawn green (the box-on-target tile colour), no brown box left.
    final = decode_png((tmp_path / "frames" / "final.png").read_bytes())
    assert ((final == (40, 160, 60)).all(axis=2)).any() and not ((final == (170, 110, 40)).all(axis=2)).any()
    assert main(["show", str(tmp_path / "o"), "--frames", str(tmp_path / "x")]) == 2
    assert "--frames needs --episode" in capsys.readouterr().err


def test_visual_presets_are_a_group_of_their_own():
    from ragen_eval.config import expand_envs

    assert expand_envs("visual") == ["visual_sokoban", "visual_frozenlake"]
    for group in ("all", "sokoban_all", "frozenlake_all"):
        assert not any(name.startswith("visual_") for name in expand_envs(group))
