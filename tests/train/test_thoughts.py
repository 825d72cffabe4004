"""Templated thoughts: on every preset of the three games they are non-empty, true by the consistency
checker, and commit to the answer's moves; on hand-built states they say exactly what was worked out by hand."""

from __future__ import annotations

import csv
import dataclasses
import json
import math
from collections import Counter
from pathlib import Path

import pytest

import ragen_envs
from ragen_envs import PRESETS
from ragen_eval.consistency import aggregate, score_episode, score_turn
from ragen_train.demos import DemoConfig, play_demo, play_demos
from ragen_train.thoughts import TEMPLATED_GAMES, templated_thought

def _game(preset: str) -> str:
    env = ragen_envs.make(preset)
    env.reset(seed=0)
    return env.unwrapped.state_dict()["game"]


GAME_PRESETS = [p.name for p in PRESETS if _game(p.name) in TEMPLATED_GAMES]


def test_games_without_a_template_are_refused_by_name() -> None:
    assert len(GAME_PRESETS) >= 13
    with pytest.raises(ValueError, match="no templated thought for game 'countdown'"):
        play_demos(DemoConfig(env="countdown", mode="oracle", num_episodes=1, seed=0, thought="templated"))


@pytest.mark.parametrize("env", GAME_PRESETS)
def test_oracle_thoughts_are_true_on_every_preset(env: str) -> None:
    demos = play_demos(DemoConfig(env=env, mode="oracle", num_episodes=6, seed=4, thought="templated"))
    scores = [score_episode(d.record) for d in demos]
    for demo, score in zip(demos, scores):
        for turn, scored in zip(demo.record["turns"], score["turns"]):
            assert turn["format_ok"] and turn["think"], turn["response"]
            assert scored["n_claims"] >= 2 and scored["n_false"] == 0 and scored["n_unverifiable"] == 0, \
                (turn["think"], scored["claims"])
            assert scored["plan_agrees"], (turn["think"], turn["actions_parsed"])
    assert aggregate(scores)["claim_accuracy"] == 1.0


@pytest.mark.parametrize("env", ["simple_sokoban", "larger_sokoban", "frozenlake_det", "frozenlake", "bandit"])
def test_random_players_thoughts_are_true_too(env: str) -> None:
    """The format player walks into walls, pushes boxes into corners and picks the worse arm: the thought
    still predicts what its moves do."""
    demos = play_demos(DemoConfig(env=env, mode="format", num_episodes=8, seed=2, thought="templated"))
    total = aggregate([score_episode(d.record) for d in demos])
    assert total["n_claims"] >= total["n_turns"] and total["claim_accuracy"] == 1.0


def _sokoban_state(rows: list[str]) -> dict:
    def cells(symbols: str) -> list[list[int]]:
        return [[r, c] for r, row in enumerate(rows) for c, x in enumerate(row) if x in symbols]

    return {"game": "sokoban", "height": len(rows), "width": len(rows[0]), "rows": rows, "walls": cells("#"),
            "boxes": cells("$*"), "targets": cells(".*+"), "player": cells("@+")[0]}


def test_a_sokoban_thought_says_what_was_worked_out_by_hand() -> None:
    before = _sokoban_state(["######", "#    #", "# $@ #", "# .  #", "######"])
    after = _sokoban_state(["######", "#    #", "# @  #", "# *  #", "######"])
    thought = templated_thought(before, ["Up", "Left", "Down"], coordinate_base=1)
    assert thought == ("I am at (3, 4). The box is at (3, 3). The target is at (4, 3). The target is directly below "
                       "the box. I will go Up, Left, Down. After these moves I will be at (3, 3), and that solves the "
                       "puzzle.")
    turn = {"state_before": before, "state_after": after, "think": thought, "actions_parsed": ["Up", "Left", "Down"],
            "actions_executed": ["Up", "Left", "Down"], "infos": []}
    score = score_turn(turn, game="sokoban", coordinate_base=1)
    assert {c["canonical"]: c["verdict"] for c in score["claims"]} == {
        "at(player,2,3)": True, "at(box,2,2)": True, "at(target,3,2)": True, "rel(target,box,down,line)": True,
        "after(up,left,down|at(player,2,2))": True, "after(up,left,down|all_placed)": True}


def test_placed_boxes_are_counted_not_listed() -> None:
    before = _sokoban_state(["#######", "#     #", "# $@  #", "# .  *#", "#######"])
    after = _sokoban_state(["#######", "#     #", "# @   #", "# *  *#", "#######"])
    thought = templated_thought(before, ["Up", "Left", "Down"])
    assert thought == ("I am at (2, 3). The box is at (2, 2). The target is at (3, 2). One box is on a target. The "
                       "target is directly below the box. I will go Up, Left, Down. After these moves I will be at "
                       "(2, 2), and that solves the puzzle.")
    turn = {"state_before": before, "state_after": after, "think": thought, "actions_parsed": ["Up", "Left", "Down"],
            "actions_executed": ["Up", "Left", "Down"], "infos": []}
    assert {c["canonical"]: c["verdict"] for c in score_turn(turn, game="sokoban")["claims"]} == {
        "at(player,2,3)": True, "at(box,2,2)": True, "at(target,3,2)": True, "placed(1)": True,
        "rel(target,box,down,line)": True, "after(up,left,down|at(player,2,2))": True,
        "after(up,left,down|all_placed)": True}
    # The count is checked: the same thought with "Two boxes" is false, where "on(box,target)" called it true.
    wrong = {**turn, "think": thought.replace("One box is on a target", "Two boxes are on targets")}
    assert {c["canonical"]: c["verdict"] for c in score_turn(wrong, game="sokoban")["claims"]}["placed(2)"] is False


def test_a_slippery_lake_thought_places_me_and_the_goal_and_predicts_nothing() -> None:
    state = {"game": "frozenlake", "height": 4, "width": 4, "rows": ["SFFF", "FHFH", "FFFH", "HFFG"],
             "player": [1, 2], "start": [0, 0], "goal": [3, 3], "holes": [[1, 1], [1, 3], [2, 3], [3, 0]],
             "is_slippery": True}
    thought = templated_thought(state, ["Down", "Down"])
    # holes lie to the player's left and right, and the thought does not name them
    assert thought == ("I am at (1, 2) and the goal is at (3, 3). The goal is down and to the right of me. "
                       "I will go Down, Down.")
    score = score_turn({"state_before": state, "think": thought, "actions_parsed": ["Down", "Down"]}, game="frozenlake")
    assert {c["canonical"]: c["verdict"] for c in score["claims"]} == {
        "at(player,1,2)": True, "at(goal,3,3)": True, "rel(goal,player,down-right)": True}
    # without slipping the outcome is certain, so the thought predicts it
    steady = templated_thought({**state, "is_slippery": False}, ["Down", "Down", "Right"])
    assert steady.endswith("I will go Down, Down, Right. After these moves I will reach the goal at (3, 3).")


@pytest.mark.parametrize("env", ["simple_sokoban", "larger_sokoban", "boxoban", "frozenlake_det", "frozenlake_8x8"])
def test_grounded_thoughts_are_templated_ones_without_the_outcome(env: str) -> None:
    """Turn by turn, the grounded thought is the templated one cut after the plan, and holds no prediction."""
    config = DemoConfig(env=env, mode="oracle", num_episodes=4, seed=5, thought="templated")
    templated = play_demos(config)
    grounded = play_demos(dataclasses.replace(config, thought="grounded"))
    kinds = Counter()
    for full, cut in zip(templated, grounded):
        assert len(full.record["turns"]) == len(cut.record["turns"])
        for before, after in zip(full.record["turns"], cut.record["turns"]):
            plan = before["think"].index("I will go ")
            assert after["think"] == before["think"][:before["think"].index(".", plan) + 1]
            scored = score_turn(after, game=after["state_before"]["game"])
            assert scored["n_false"] == 0 and scored["plan_agrees"]
            kinds.update(c["kind"] for c in scored["claims"])
    assert kinds["position"] > 0 and kinds["prediction"] == 0


def test_a_grounded_sokoban_thought_ends_at_the_plan() -> None:
    before = _sokoban_state(["######", "#    #", "# $@ #", "# .  #", "######"])
    assert templated_thought(before, ["Up", "Left", "Down"], coordinate_base=1, outcome=False) == (
        "I am at (3, 4). The box is at (3, 3). The target is at (4, 3). The target is directly below the box. "
        "I will go Up, Left, Down.")


def test_a_bandit_thought_states_the_chosen_arms_risk_and_reward() -> None:
    state = {"game": "bandit", "arms": [{"name": "Dragon", "expected_reward": 0.25, "variance": 0.1875},
                                        {"name": "Phoenix", "expected_reward": 0.1, "variance": 0.0}]}
    assert templated_thought(state, ["Dragon"]) == (
        "The arms are Dragon and Phoenix. Dragon is the riskier arm, but Dragon pays more on average. I choose Dragon.")
    assert templated_thought(state, ["Phoenix"]) == (
        "The arms are Dragon and Phoenix. Phoenix is the safer arm. I choose Phoenix.")
    with pytest.raises(ValueError, match="one of the arms"):
        templated_thought(state, ["Griffin"])


def test_templated_thoughts_are_what_sft_trains_on(tiny_model_dir: Path) -> None:
    """The thought is inside the assistant tokens, under loss mask 1."""
    pytest.importorskip("transformers")
    from ragen_train.policy import load_tokenizer
    from ragen_train.sft import tokenize_chat

    tokenizer = load_tokenizer(tiny_model_dir)
    config = DemoConfig(env="frozenlake_det", mode="oracle", num_episodes=1, thought="templated")
    demo = play_demo(config, 0, 7)
    ids, mask = tokenize_chat(tokenizer, demo.messages)
    trained = tokenizer.decode([t for t, m in zip(ids, mask) if m], skip_special_tokens=True)
    for turn in demo.record["turns"]:
        assert f"<think>{turn['think']}</think>" in trained


def test_the_accuracy_script_reports_what_the_checker_finds(tmp_path: Path, capsys) -> None:
    """experiments/thinking_model/thought_accuracy.py: its figures are the harness's summary of the same demos."""
    pytest.importorskip("transformers")
    from ragen_eval.summary import summarize
    from tests.script_modules import load_script

    out = tmp_path / "accuracy.json"
    script = load_script("experiments/thinking_model/thought_accuracy.py")
    assert script.main(["--episodes", "4", "--env", "frozenlake_det,bandit", "--seed", "3", "--out", str(out)]) == 0
    assert "| frozenlake_det | 4 |" in capsys.readouterr().out
    figures = {m["env"]: m for m in json.loads(out.read_text())["presets"]}
    records = [d.record for d in play_demos(DemoConfig(env="frozenlake_det", mode="oracle", num_episodes=4, seed=3,
                                                       thought="templated"))]
    consistency = summarize(records)["overall"]["consistency"]
    assert figures["frozenlake_det"]["n_claims"] == consistency["n_claims"] > 0
    # a Bandit thought of the oracle: the list of arms, the chosen arm's risk, its reward
    assert figures["frozenlake_det"]["claim_accuracy"] == 1.0 and figures["bandit"]["claims_per_turn"] == 3.0
    assert figures["frozenlake_det"]["turns"] == sum(len(r["turns"]) for r in records)
    with pytest.raises(SystemExit):
        script.main(["--env", "sokobann"])


def test_sft_trains_on_templated_thoughts_from_the_command_line(tiny_model_dir: Path, tmp_path: Path) -> None:
    pytest.importorskip("transformers")
    from ragen_train.cli import main

    out = tmp_path / "sft"
    assert main(["sft", "--model", str(tiny_model_dir), "--env", "frozenlake_det,bandit", "--episodes", "4,4",
                 "--mode", "oracle", "--thought", "templated", "--epochs", "1", "--batch-size", "4",
                 "--max-steps", "2", "--out", str(out)]) == 0
    settings = json.loads((out / "sft_config.json").read_text())
    assert [d["thought"] for d in settings["demos"]] == ["templated", "templated"]
    losses = [float(row["loss"]) for row in csv.DictReader(open(out / "sft_metrics.csv"))]
    assert len(losses) == 2 and all(math.isfinite(x) and x > 0 for x in losses)
