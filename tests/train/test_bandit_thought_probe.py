"""experiments/bandit_thought/probe.py: the Bandit thought without its arm list, in the probe's process only."""

from __future__ import annotations

import json

import pytest

from ragen_train import thoughts
from ragen_train.demos import DemoConfig, level_seeds, play_demo
from tests.script_modules import load_script

probe = load_script("experiments/bandit_thought/probe.py")


def test_the_thought_loses_its_arm_list_and_keeps_the_rest():
    state = {"game": "bandit", "arms": [
        {"name": "Owl", "expected_reward": 0.1, "variance": 0.0, "low_risk": True},
        {"name": "Tiger", "expected_reward": 0.25, "variance": 0.1875, "low_risk": False}]}
    assert thoughts.templated_thought(state, ["Tiger"]) == (
        "The arms are Owl and Tiger. Tiger is the riskier arm, but Tiger pays more on average. I choose Tiger.")
    assert probe.without_list(state, ["Tiger"]) == "Tiger is the riskier arm, but Tiger pays more on average. I choose Tiger."
    assert probe.without_list(state, ["Owl"]) == "Owl is the safer arm. I choose Owl."


def test_a_template_without_the_list_is_refused(monkeypatch):
    monkeypatch.setattr(probe, "LISTED", lambda state, actions: "Tiger pays more. I choose Tiger.")
    with pytest.raises(ValueError, match="no longer begins with the arm list"):
        probe.without_list({}, ["Tiger"])


def test_a_probe_run_trains_on_thoughts_without_the_list_and_leaves_the_package_alone(tiny_model_dir, tmp_path,
                                                                                      monkeypatch):
    monkeypatch.setattr(thoughts, "_bandit", thoughts._bandit)  # the probe rebinds it; put it back after the test
    out = tmp_path / "chosen"
    assert probe.main(["--model", str(tiny_model_dir), "--out", str(out), "--env", "bandit_heldout", "--episodes", "4",
                       "--mode", "oracle", "--thought", "grounded", "--epochs", "1", "--batch-size", "2"]) == 0
    assert (out / "model.safetensors").is_file()
    config = DemoConfig(**json.loads((out / "sft_config.json").read_text())["demos"][0])
    thought = play_demo(config, 0, level_seeds(config)[0]).messages[-1]["content"]  # the first demonstration, again
    assert thought.startswith("<think>") and "The arms are" not in thought and "I choose" in thought
    monkeypatch.undo()
    assert play_demo(config, 0, level_seeds(config)[0]).messages[-1]["content"].startswith("<think>The arms are ")
