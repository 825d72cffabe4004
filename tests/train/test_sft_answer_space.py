"""Answers after a space (``DemoConfig.answer_space``): the same play, each answer opened by a space, so an
action's name is spelled in the tokens it has after a space in the prompt."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from ragen_train.demos import DemoConfig, level_seeds, play_demo

pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from ragen_train.sft import config_from_args  # noqa: E402

pytestmark = pytest.mark.train


@pytest.mark.parametrize(("env", "settings"), [
    ("bandit_heldout", {}),
    ("frozenlake", {"mode": "format"}),
    ("simple_sokoban", {"detour_turns": 2}),
    ("frozenlake", {"protocol": {"think": False}}),
])
def test_the_same_play_with_each_answer_opened_by_a_space(env: str, settings: dict) -> None:
    plain = DemoConfig(env=env, num_episodes=16, seed=5, thought="grounded", **{"mode": "oracle", **settings})
    spaced = replace(plain, answer_space=True)
    for index, seed in enumerate(level_seeds(plain)):
        ours, theirs = play_demo(spaced, index, seed).record["turns"], play_demo(plain, index, seed).record["turns"]
        assert len(ours) == len(theirs)
        for turn, reference in zip(ours, theirs):
            head, _, answer = reference["response"].partition("<answer>")
            assert turn["response"] == f"{head}<answer> {answer}"  # one space, nothing else moved
            # the game's own parser read the same actions from it
            assert turn["format_ok"] and turn["actions_parsed"] == reference["actions_parsed"]


def test_a_spaced_answer_spells_the_arm_as_the_prompt_does(tiny_model_dir: Path) -> None:
    tok = transformers.AutoTokenizer.from_pretrained(tiny_model_dir)
    config = DemoConfig(env="bandit_heldout", mode="oracle", num_episodes=8, seed=0, thought="grounded")
    spaced = replace(config, answer_space=True)
    for index, seed in enumerate(level_seeds(config)):
        for demo_config, same in ((spaced, True), (config, False)):
            demo = play_demo(demo_config, index, seed)
            name = demo.record["turns"][0]["actions_parsed"][0]
            prompt, reply = demo.messages[-2]["content"], demo.messages[-1]["content"]
            in_prompt = tok(f" {name}", add_special_tokens=False)["input_ids"]
            assert f" {name}" in prompt
            answer = tok(reply, add_special_tokens=False)["input_ids"]
            # the answer's name is the prompt's tokens, right before </answer>, only when the answer is spaced
            closing = tok("</answer>", add_special_tokens=False)["input_ids"]
            assert answer[-len(closing):] == closing
            assert (answer[-len(closing) - len(in_prompt):-len(closing)] == in_prompt) is same


def test_answer_space_is_off_unless_asked_and_set_for_every_game_on_the_command_line() -> None:
    assert not DemoConfig().answer_space
    # a run without it writes the config it wrote before the field existed, so older run directories resume
    assert "answer_space" not in DemoConfig().to_dict()
    assert DemoConfig(answer_space=True).to_dict()["answer_space"] is True
    with pytest.raises(ValueError, match="answer_space must be true or false"):
        DemoConfig(answer_space="yes")
    config = config_from_args(["--out", "x", "--env", "simple_sokoban,bandit", "--answer-space"])
    assert [d.answer_space for d in config.demos] == [True, True]
    assert not any(d.answer_space for d in config_from_args(["--out", "x", "--env", "bandit"]).demos)
