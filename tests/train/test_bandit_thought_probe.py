"""experiments/bandit_thought/probe.py: the Bandit thought without its arm list, each arm's role in its own sentence
and "Of the two," after the list, each in the probe's process only."""

from __future__ import annotations

import json

import pytest

from ragen_eval.consistency import score_turn
from ragen_train import thoughts
from ragen_train.demos import DemoConfig, level_seeds, play_demo
from tests.script_modules import load_script

probe = load_script("experiments/bandit_thought/probe.py")


def _probe_run(variant: str, model_dir, out, monkeypatch, *extra: str) -> tuple[str, DemoConfig]:
    """Train ``variant`` (with ragen-train sft's ``extra`` arguments) on 4 bandit_heldout demonstrations and play its
    first demonstration again: the reply it trained on, and the run's demo config (to replay it once the package is
    rebound back)."""
    monkeypatch.setattr(thoughts, "_bandit", thoughts._bandit)  # the probe rebinds it; put it back after
    assert probe.main([variant, "--model", str(model_dir), "--out", str(out), "--env", "bandit_heldout",
                       "--episodes", "4", "--mode", "oracle", "--thought", "grounded", "--epochs", "1",
                       "--batch-size", "2", *extra]) == 0
    assert (out / "model.safetensors").is_file()
    config = DemoConfig(**json.loads((out / "sft_config.json").read_text())["demos"][0])
    return play_demo(config, 0, level_seeds(config)[0]).messages[-1]["content"], config


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
    thought, config = _probe_run("without-list", tiny_model_dir, tmp_path / "chosen", monkeypatch)
    assert thought.startswith("<think>") and "The arms are" not in thought and "I choose" in thought
    monkeypatch.undo()
    assert play_demo(config, 0, level_seeds(config)[0]).messages[-1]["content"].startswith("<think>The arms are ")


@pytest.mark.parametrize("risky_pays_more", [True, False])
def test_the_per_arm_thought_gives_each_listed_arm_its_role_in_order_and_only_true_claims(risky_pays_more):
    bold = {"name": "Tiger", "expected_reward": 0.25 if risky_pays_more else 0.05, "variance": 0.1875,
            "low_risk": False}
    state = {"game": "bandit", "arms": [{"name": "Owl", "expected_reward": 0.1, "variance": 0.0, "low_risk": True},
                                        bold]}
    best = "Tiger" if risky_pays_more else "Owl"
    thought = probe.per_arm(state, [best.lower()])
    if risky_pays_more:
        assert thought == ("The arms are Owl and Tiger. Owl is the safer arm. Tiger is the riskier arm and pays more "
                           "on average. I choose Tiger.")
    else:
        assert thought == ("The arms are Owl and Tiger. Owl is the safer arm and pays more on average. Tiger is the "
                           "riskier arm. I choose Owl.")
    claims = score_turn({"state_before": state, "think": thought, "actions_parsed": [best]}, game="bandit")["claims"]
    assert {c["canonical"]: c["verdict"] for c in claims} == {
        "arms(owl,tiger)": True, "risk(owl,low)": True, "risk(tiger,high)": True, f"reward({best.lower()},high)": True}
    with pytest.raises(ValueError, match="needs one of the arms"):
        probe.per_arm(state, ["Shark"])


def test_a_per_arm_run_trains_on_the_per_arm_thoughts(tiny_model_dir, tmp_path, monkeypatch):
    thought, config = _probe_run("per-arm", tiny_model_dir, tmp_path / "perarm", monkeypatch)
    assert thought.count(" is the safer arm") == thought.count(" is the riskier arm") == 1
    monkeypatch.undo()
    package = play_demo(config, 0, level_seeds(config)[0]).messages[-1]["content"]  # the package names one role
    assert package.count(" is the safer arm") + package.count(" is the riskier arm") == 1


def test_of_the_two_keeps_the_list_and_the_claims_and_parts_the_repeated_name():
    state = {"game": "bandit", "arms": [
        {"name": "Owl", "expected_reward": 0.1, "variance": 0.0, "low_risk": True},
        {"name": "Tiger", "expected_reward": 0.25, "variance": 0.1875, "low_risk": False}]}
    thought = probe.of_the_two(state, ["Tiger"])
    assert thought == ("The arms are Owl and Tiger. Of the two, Tiger is the riskier arm, but Tiger pays more on "
                       "average. I choose Tiger.")
    turn = {"state_before": state, "think": thought, "actions_parsed": ["Tiger"]}
    claims = {c["canonical"]: c["verdict"] for c in score_turn(turn, game="bandit")["claims"]}
    assert claims == {"arms(owl,tiger)": True, "risk(tiger,high)": True, "reward(tiger,high)": True}


def test_an_of_the_two_run_takes_the_packages_answer_space(tiny_model_dir, tmp_path, monkeypatch):
    reply, config = _probe_run("of-the-two", tiny_model_dir, tmp_path / "fix", monkeypatch, "--answer-space")
    choice = reply.split("I choose ")[-1].split(".")[0]
    assert ". Of the two, " in reply and reply.endswith(f"</think><answer> {choice}</answer>")
    monkeypatch.undo()
    package = play_demo(config, 0, level_seeds(config)[0]).messages[-1]["content"]
    assert ". Of the two, " not in package and package.endswith(f"</think><answer> {choice}</answer>")


def test_an_unknown_variant_is_refused(capsys):
    assert probe.main(["spaced-answer", "--out", "x"]) == 2
    assert "without-list,per-arm,of-the-two" in capsys.readouterr().err
    assert probe.main(["per-arm+of-the-two", "--out", "x"]) == 2


words = load_script("experiments/bandit_thought/words.py")


def test_the_whole_token_copy_spells_each_arm_name_one_way(tiny_model_dir, tmp_path):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from ragen_envs.bandit.names import NAME_POOLS

    out = tmp_path / "words"
    assert words.main([str(tiny_model_dir), str(out)]) == 0
    before, after = AutoTokenizer.from_pretrained(tiny_model_dir), AutoTokenizer.from_pretrained(out)
    names = [n for pool in NAME_POOLS.values() for n in (*pool.low_risk, *pool.high_risk)]
    assert len(after) == len(before) + len(names) == AutoModelForCausalLM.from_pretrained(out).config.vocab_size
    for name in names:
        (token,) = after.convert_ids_to_tokens(after(name)["input_ids"])
        assert token == name  # one token, the same in the prompt's " Tiger" and the answer's "<answer>Tiger"
        assert after.convert_ids_to_tokens(after(f"Arms: {name}.")["input_ids"])[-3:] == ["Ġ", name, "."]
    # whole words only: a name inside a longer word keeps the old pieces, and other text is untouched
    text = "Tigers nap beside the Oaken Bowl. Reward: 1.0"
    assert after(text)["input_ids"] == before(text)["input_ids"]
    assert after.decode(after(f"<answer>{names[0]}</answer>")["input_ids"]) == f"<answer>{names[0]}</answer>"
    with pytest.raises(SystemExit):
        words.main([str(tiny_model_dir), str(out)])  # an existing OUT is refused
