"""Built-in agents: well-formed answers, determinism, and the oracle reaching the certificate's optimum."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest

from ragen_envs.text import TextEpisode

from ragen_eval.agents import make_agent
from ragen_eval.agents.builtin import OracleAgent, RandomAgent

TEST_SEEDS = range(200_000_000, 200_000_040)


def _play(agent, env, seed, protocol=None):
    episode = TextEpisode(env, seed, config=protocol)
    while not episode.done:
        completion = asyncio.run(agent.act(episode.messages, episode=episode))[0]
        turn = episode.step(completion.text, finish_reason=completion.finish_reason)
        assert turn["format_ok"], turn["format_errors"]
    return episode


@pytest.mark.parametrize("env", ["sokoban", "frozenlake_det", "bandit", "larger_sokoban"])
def test_oracle_solves_every_level_its_certificate_solves_within_budget(env):
    for seed in list(TEST_SEEDS)[:20]:
        episode = _play(OracleAgent(), env, seed)
        cert = episode.certificate
        optimum = cert.get("moves", cert.get("shortest_path_length"))
        within_budget = optimum <= episode.config.max_actions_per_episode
        assert episode.success == within_budget, (seed, cert)
        if episode.success:
            assert episode.num_actions == optimum


def test_oracle_on_slippery_lake_approaches_the_optimum():
    successes = [_play(OracleAgent(), "frozenlake", seed).success for seed in TEST_SEEDS]
    optimum = np.mean([TextEpisode("frozenlake", seed).certificate["optimal_success_prob"] for seed in TEST_SEEDS])
    random_rate = np.mean([_play(RandomAgent(), "frozenlake", seed).success for seed in TEST_SEEDS])
    # The certificate's per-step optimum is an upper bound (the protocol plays several blind moves a turn).
    assert random_rate + 0.1 < np.mean(successes) <= optimum + 0.15


def test_oracle_bandit_picks_the_best_arm_and_respects_no_think_format():
    episode = _play(OracleAgent(), "bandit", 200_000_003, protocol={"think": False})
    assert episode.record()["turns"][0]["actions_executed"] == episode.certificate["best_arm_names"]
    assert "<think>" not in episode.record()["turns"][0]["response"]


def test_random_agent_is_a_pure_function_of_seed_episode_and_turn():
    first = [_play(RandomAgent(seed=3), "sokoban", s).record()["turns"] for s in TEST_SEEDS[:5]]
    again = [_play(RandomAgent(seed=3), "sokoban", s).record()["turns"] for s in TEST_SEEDS[:5]]
    other = [_play(RandomAgent(seed=4), "sokoban", s).record()["turns"] for s in TEST_SEEDS[:5]]
    responses = [[t["response"] for t in turns] for turns in first]
    assert responses == [[t["response"] for t in turns] for turns in again]
    assert responses != [[t["response"] for t in turns] for turns in other]
    counts = [len(t["actions_parsed"]) for turns in first for t in turns]
    assert min(counts) >= 1 and max(counts) <= 5


def test_builtins_need_the_episode_and_factory_checks_names():
    with pytest.raises(ValueError, match="live episode"):
        asyncio.run(RandomAgent().act([{"role": "user", "content": "hi"}]))
    assert make_agent("builtin", "oracle").name == "oracle"
    with pytest.raises(ValueError, match="'random' and 'oracle'"):
        make_agent("builtin", "gpt")
    with pytest.raises(ValueError, match="unknown backend"):
        make_agent("tpu", "x")
    with pytest.raises(ValueError, match="base URL"):
        make_agent("openai", "x")
