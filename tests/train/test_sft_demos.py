"""Demonstrations for the SFT warm start: well-formed, judged by the real game, oracle vs format-only."""

from __future__ import annotations

import numpy as np
import pytest

from ragen_envs.splits import SPLIT_SIZE
from ragen_envs.text import TextEpisode, parse_response
from ragen_train.demos import DemoConfig, describe_state, play_demos, play_episode


def _turns(demos):
    return [turn for demo in demos for turn in demo.record["turns"]]


@pytest.mark.parametrize("env", ["bandit", "frozenlake", "simple_sokoban"])
@pytest.mark.parametrize("mode", ["oracle", "format"])
def test_every_reply_is_well_formed_and_within_budget(env: str, mode: str) -> None:
    demos = play_demos(DemoConfig(env=env, mode=mode, num_episodes=12, seed=3))
    assert len(demos) == 12
    for demo in demos:
        record = demo.record
        protocol = record["protocol"]
        assert record["num_actions"] <= protocol["max_actions_per_episode"]
        assert record["num_turns"] <= protocol["max_turns"]
        replies = [m["content"] for m in demo.messages if m["role"] == "assistant"]
        assert replies == [t["response"] for t in record["turns"]]
        for turn in record["turns"]:
            assert turn["format_ok"], turn["format_errors"]
            assert turn["penalty"] == 0.0
            assert 1 <= len(turn["actions_parsed"]) <= protocol["max_actions_per_turn"]
            assert not turn["actions_dropped"]


def test_bandit_oracle_always_pulls_a_best_arm_and_format_player_does_not() -> None:
    oracle = play_demos(DemoConfig(env="bandit", mode="oracle", num_episodes=100, seed=0))
    random = play_demos(DemoConfig(env="bandit", mode="format", num_episodes=100, seed=0))

    def best_rate(demos):
        return np.mean([d.record["turns"][0]["actions_executed"][0] in d.record["certificate"]["best_arm_names"]
                        for d in demos])

    assert best_rate(oracle) == 1.0
    assert 0.3 < best_rate(random) < 0.7  # two arms, uniform choice


def test_frozenlake_oracle_solves_every_deterministic_lake() -> None:
    demos = play_demos(DemoConfig(env="frozenlake_det", mode="oracle", num_episodes=40, seed=1))
    assert all(d.record["success"] for d in demos)
    for d in demos:  # and takes the certified shortest path
        assert d.record["num_actions"] == d.record["certificate"]["shortest_path_length"]


def test_frozenlake_oracle_beats_random_under_slipping() -> None:
    oracle = play_demos(DemoConfig(env="frozenlake", mode="oracle", num_episodes=150, seed=2))
    random = play_demos(DemoConfig(env="frozenlake", mode="format", num_episodes=150, seed=2))
    oracle_rate = np.mean([d.record["success"] for d in oracle])
    random_rate = np.mean([d.record["success"] for d in random])
    optimal = np.mean([d.record["certificate"]["optimal_success_prob"] for d in oracle])
    assert oracle_rate > random_rate + 0.1
    # it sends several actions per turn, so it can trail the step-by-step optimum, but not by much
    assert oracle_rate > optimal - 0.2


def test_sokoban_oracle_solves_levels_whose_solution_fits_the_budget() -> None:
    demos = play_demos(DemoConfig(env="simple_sokoban", mode="oracle", num_episodes=30, seed=5))
    fits = [d for d in demos if len(_solution(d.record["certificate"])) <= d.record["protocol"]["max_actions_per_episode"]]
    assert fits, "no level had a short enough solution"
    assert all(d.record["success"] for d in fits)


def _solution(certificate):
    return [int(a) for a in certificate["actions"]]


def test_demo_sets_are_deterministic_and_seeded() -> None:
    a = play_demos(DemoConfig(env="frozenlake", mode="format", num_episodes=8, seed=7))
    b = play_demos(DemoConfig(env="frozenlake", mode="format", num_episodes=8, seed=7))
    c = play_demos(DemoConfig(env="frozenlake", mode="format", num_episodes=8, seed=8))
    assert [d.record for d in a] == [d.record for d in b]
    assert [d.record["seed"] for d in a] != [d.record["seed"] for d in c]
    assert all(0 <= d.record["seed"] < SPLIT_SIZE for d in a)  # the train split only


def test_successful_only_keeps_only_successes() -> None:
    demos = play_demos(DemoConfig(env="frozenlake", mode="format", num_episodes=40, seed=0, successful_only=True))
    assert 0 < len(demos) < 40
    assert all(d.record["success"] for d in demos)


@pytest.mark.parametrize("base", [0, 1])
def test_thought_positions_follow_the_prompt_coordinate_base(base: int) -> None:
    episode = TextEpisode("frozenlake", 11, {"coordinate_base": base})
    r, c = episode.game.state_dict()["player"]
    assert describe_state(episode).startswith(f"I am at ({r + base}, {c + base})")


def test_no_think_protocol_gets_answer_only_replies() -> None:
    demos = play_demos(DemoConfig(env="frozenlake", mode="oracle", num_episodes=5, seed=0,
                                  protocol={"think": False}))
    for turn in _turns(demos):
        assert turn["response"].startswith("<answer>")
        parsed = parse_response(turn["response"], ("Left", "Down", "Right", "Up"), think=False)
        assert parsed.format_ok


def test_bad_inputs_raise() -> None:
    with pytest.raises(ValueError, match="mode"):
        DemoConfig(mode="expert")
    with pytest.raises(ValueError, match="num_episodes"):
        DemoConfig(num_episodes=0)
    with pytest.raises(ValueError, match="mode"):
        play_episode(TextEpisode("bandit", 0), "greedy", np.random.default_rng(0))
