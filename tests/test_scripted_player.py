"""One scripted player: the harness's oracle, the served oracle and the SFT demos play the same moves.

The eval oracle (``ragen_eval.agents.builtin``) and the SFT demo oracle (``ragen_train.demos``) once
planned FrozenLake separately and disagreed on 31 of 100 ``frozenlake`` test seeds; these tests play
each on the same seeds and require the same actions turn by turn.
"""

from __future__ import annotations

import asyncio

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ragen_envs
from ragen_envs.splits import split_seeds
from ragen_envs.text import TextEpisode, random_turn, turn_budget

from ragen_eval.agents.builtin import OracleAgent, RandomAgent
from ragen_eval.agents.chat_policies import ChatOracleAgent, read_chat
from ragen_train.demos import play_episode

#: (preset, number of test-split seeds): every game, and both FrozenLake sizes in full.
ORACLE_CASES = [("frozenlake", 100), ("frozenlake_8x8", 40), ("frozenlake_det", 20), ("sokoban", 15),
                ("bandit", 10), ("bandit_heldout", 10)]


def _actions_by_turn(episode: TextEpisode) -> list[list[str]]:
    return [turn["actions_parsed"] for turn in episode.record()["turns"]]


def _play_agent(agent, env: str, seed: int, *, chat_only: bool = False) -> TextEpisode:
    episode = TextEpisode(env, seed)
    while not episode.done:
        live = None if chat_only else episode
        (completion,) = asyncio.run(agent.act(episode.messages, episode=live))
        turn = episode.step(completion.text)
        assert turn["format_ok"], turn["format_errors"]
    return episode


def _play_demo(env: str, seed: int) -> TextEpisode:
    episode = TextEpisode(env, seed)
    play_episode(episode, "oracle", np.random.default_rng(0))
    return episode


@pytest.mark.parametrize(("env", "count"), ORACLE_CASES)
def test_eval_oracle_and_demo_oracle_play_the_same_actions(env: str, count: int) -> None:
    differ = []
    for seed in split_seeds("test", count, env=env):
        evaluated, demo = _play_agent(OracleAgent(), env, seed), _play_demo(env, seed)
        if _actions_by_turn(evaluated) != _actions_by_turn(demo):
            differ.append(seed)
    assert not differ, f"the eval and demo oracles differ on {len(differ)} of {count} {env} seeds: {differ[:5]}"


@pytest.mark.parametrize(("env", "count"), [("frozenlake", 30), ("frozenlake_det", 10), ("bandit", 10),
                                            ("bandit_reversed", 10)])
def test_chat_oracle_plays_the_in_process_oracles_actions(env: str, count: int) -> None:
    # From the chat text alone the served oracle rebuilds the game and asks the same player.
    for seed in split_seeds("test", count, env=env):
        chat = _play_agent(ChatOracleAgent(), env, seed, chat_only=True)
        assert _actions_by_turn(chat) == _actions_by_turn(_play_agent(OracleAgent(), env, seed)), seed


def test_chat_oracle_plays_sokoban_as_well_as_the_certificate() -> None:
    # Re-solving from the shown position may pick another optimal route, never a longer one.
    for seed in split_seeds("test", 8, env="simple_sokoban"):
        chat = _play_agent(ChatOracleAgent(), "simple_sokoban", seed, chat_only=True)
        assert chat.success
        assert chat.num_actions == len(chat.certificate["actions"])


@settings(max_examples=200, deadline=None)
@given(per_turn=st.integers(1, 8), left=st.integers(-3, 30))
def test_turn_budget_is_the_per_turn_cap_within_what_is_left(per_turn: int, left: int) -> None:
    budget = turn_budget(per_turn, left)
    assert 0 <= budget <= per_turn
    assert budget == (per_turn if left >= per_turn else max(left, 0))


@pytest.mark.parametrize("env", ["frozenlake", "sokoban"])
def test_turn_budget_is_what_the_turn_text_promises(env: str) -> None:
    # Random play spends the budget unevenly, so turns with few actions left occur.
    for seed in range(6):
        episode = TextEpisode(env, seed)
        agent = RandomAgent(seed=seed)
        while not episode.done:
            config = episode.config
            assert read_chat(episode.messages).turn_actions == turn_budget(config.max_actions_per_turn,
                                                                           episode.actions_left)
            (completion,) = asyncio.run(agent.act(episode.messages, episode=episode))
            episode.step(completion.text)


@settings(max_examples=200, deadline=None)
@given(count=st.integers(1, 6), budget=st.integers(0, 7), seed=st.integers(0, 2**32 - 1))
def test_random_turn_draws_one_to_budget_valid_actions_from_its_generator(count: int, budget: int,
                                                                          seed: int) -> None:
    plan = random_turn(count, budget, np.random.default_rng(seed))
    assert 1 <= len(plan) <= max(budget, 1)
    assert all(0 <= a < count for a in plan)
    assert plan == random_turn(count, budget, np.random.default_rng(seed))


@pytest.mark.parametrize("env", ["sokoban", "frozenlake"])
def test_random_agent_never_sends_more_than_the_turn_allows(env: str) -> None:
    for seed in range(12):
        episode = TextEpisode(env, seed)
        while not episode.done:
            allowed = turn_budget(episode.config.max_actions_per_turn, episode.actions_left)
            (completion,) = asyncio.run(RandomAgent(seed=1).act(episode.messages, episode=episode))
            turn = episode.step(completion.text)
            assert 1 <= len(turn["actions_parsed"]) <= allowed


@pytest.mark.parametrize("env", ["frozenlake", "frozenlake_8x8", "frozenlake_det", "bandit", "bandit_reversed"])
def test_games_rebuilt_from_a_chat_plan_like_the_live_game(env: str) -> None:
    for seed in split_seeds("test", 6, env=env):
        episode = TextEpisode(env, seed)
        if episode.config.max_turns > 1:  # rebuild mid-episode, after a random first turn
            (completion,) = asyncio.run(RandomAgent(seed=seed).act(episode.messages, episode=episode))
            episode.step(completion.text)
        if episode.done:
            continue
        view = read_chat(episode.messages)
        rebuilt = type(episode.game).from_text(view.action_names, view.observation, view.intro)
        live = episode.game.state_dict()
        shown = "player" if "player" in live else "arms"  # where the player stands; a bandit's arms
        assert rebuilt.state_dict()[shown] == live[shown]
        budget = (view.turn_actions, view.actions_left, view.turns_left)
        assert rebuilt.plan_turn(*budget) == episode.game.plan_turn(*budget)


def test_a_bandit_level_given_at_reset_must_have_the_configured_arms() -> None:
    env = ragen_envs.make("bandit").unwrapped
    env.reset(seed=0)
    with pytest.raises(ValueError, match=r"options\['level'\] must be a BanditLevel with 2 arms"):
        env.reset(options={"level": "Phoenix, Dragon"})
