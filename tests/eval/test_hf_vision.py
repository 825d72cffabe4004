"""The hf backend plays image observations with a tiny vision-language model built here (no hub)."""

from __future__ import annotations

import asyncio
import json

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("PIL")  # the image processor reads the data URLs with pillow

from ragen_envs.text import TextEpisode  # noqa: E402
from ragen_eval.agents.base import SamplingParams  # noqa: E402
from ragen_eval.cli import main  # noqa: E402


@pytest.fixture(scope="module")
def vision_dir(tmp_path_factory):
    from ragen_train.tiny import build_tiny_vision_checkpoint

    return build_tiny_vision_checkpoint(tmp_path_factory.mktemp("vlm") / "tiny-vlm")


@pytest.fixture(scope="module")
def vision_agent(vision_dir):
    from ragen_eval.agents.hf_agent import HFAgent

    return HFAgent(str(vision_dir))


def test_the_picture_reaches_the_model_as_image_tokens_and_pixels(vision_agent):
    episode = TextEpisode("visual_sokoban", 0)
    processor = vision_agent.processor
    inputs = processor.apply_chat_template(episode.messages, add_generation_prompt=True, tokenize=True,
                                           return_dict=True, return_tensors="pt")
    image_id = vision_agent.model.config.image_token_index
    # (32 / 8)^2 patches, one image token each (the CLS feature is dropped by the default strategy).
    assert int((inputs["input_ids"] == image_id).sum()) == 16
    assert tuple(inputs["pixel_values"].shape) == (1, 3, 32, 32)
    # A different picture with the same text changes the pixels the model sees.
    other = TextEpisode("visual_sokoban", 0)
    other.step("<think>x</think><answer>Up || Up || Left</answer>")
    other_inputs = processor.apply_chat_template([other.messages[-1]],
                                                 add_generation_prompt=True, tokenize=True, return_dict=True,
                                                 return_tensors="pt")
    assert not bool((other_inputs["pixel_values"] == inputs["pixel_values"]).all())


def test_replies_are_reproducible_and_counted(vision_agent):
    messages = TextEpisode("visual_frozenlake", 3).messages
    sampling = SamplingParams(temperature=1.0, max_tokens=12, seed=5)

    async def twice():
        return (await vision_agent.act(messages, n=2, sampling=sampling),
                await vision_agent.act(messages, n=2, sampling=sampling))

    first, second = asyncio.run(twice())
    assert [c.text for c in first] == [c.text for c in second]
    for completion in first:
        assert completion.completion_tokens <= 12 and completion.prompt_tokens > 16
        assert completion.finish_reason in ("stop", "length")
        assert completion.finish_reason == "stop" or completion.completion_tokens == 12


def test_a_checkpoints_own_sampling_defaults_do_not_reach_the_run(vision_dir, tmp_path):
    """A generation_config with top_k=1 (as some instruct releases ship) once made T=1 sampling greedy."""
    import shutil

    from ragen_eval.agents.hf_agent import HFAgent

    greedy_defaults = tmp_path / "vlm"
    shutil.copytree(vision_dir, greedy_defaults)
    path = greedy_defaults / "generation_config.json"
    saved = json.loads(path.read_text()) if path.exists() else {}
    path.write_text(json.dumps({**saved, "top_k": 1, "do_sample": True}))
    sampling = SamplingParams(temperature=1.0, max_tokens=12, seed=5)
    replies = asyncio.run(HFAgent(str(greedy_defaults)).act(TextEpisode("visual_frozenlake", 3).messages, n=4,
                                                             sampling=sampling))
    assert len({r.text for r in replies}) > 1


def test_the_tiny_vision_model_plays_a_visual_preset_end_to_end(vision_dir, tmp_path):
    code = main(["--backend", "hf", "--model", str(vision_dir), "--env", "visual_sokoban", "--episodes", "2",
                 "--max-tokens", "16", "--out", str(tmp_path), "--run-name", "vlm", "--no-progress"])
    assert code == 0
    episodes = [json.loads(line) for line in (tmp_path / "vlm" / "episodes.jsonl").read_text().splitlines()]
    assert len(episodes) == 2 and all(not e.get("error") for e in episodes)
    turns = [t for e in episodes for t in e["turns"]]
    assert turns and all(t["image"].startswith("sha256:") for t in turns)
    assert all(t["finish_reason"] in ("stop", "length") for t in turns)


def test_a_text_model_refuses_a_chat_with_pictures(tiny_model_dir):
    from ragen_eval.agents.hf_agent import HFAgent

    agent = HFAgent(str(tiny_model_dir))
    with pytest.raises(ValueError, match="text-only"):
        asyncio.run(agent.act(TextEpisode("visual_sokoban", 0).messages))


def test_a_served_text_model_answers_pictures_with_a_400(tiny_model_dir):
    import httpx

    from ragen_eval.serve import ServeConfig, serve_in_thread

    with serve_in_thread(ServeConfig(port=0, agent=str(tiny_model_dir))) as url:
        response = httpx.post(url + "/chat/completions", json={
            "model": "m", "messages": TextEpisode("visual_sokoban", 0).messages}, timeout=60)
    assert response.status_code == 400 and "text-only" in response.json()["error"]["message"]
