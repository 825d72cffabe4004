"""Countdown, Sudoku and the 2x2 cube rebuilt from a chat (``from_text``), and won by ``serve --agent oracle``."""

from __future__ import annotations

import asyncio
import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragen_envs.text import TextEpisode
from ragen_envs.text.parser import format_reply
from ragen_envs.text.players import oracle_actions

from ragen_eval.agents.builtin import OracleAgent
from ragen_eval.agents.chat_policies import ChatOracleAgent, plan_from_chat, read_chat
from ragen_eval.serve import ServeConfig, serve_in_thread
from tests.eval.test_serve import play_in_process, play_over_http

NEW_GAMES = ["countdown", "sudoku", "sudoku_9x9", "rubiks_2x2", "rubiks_2x2_hard"]


def _rebuilt(episode: TextEpisode):
    view = read_chat(episode.messages)
    return type(episode.game).from_text(view.action_names, view.observation, view.intro)


@settings(max_examples=60, deadline=None)
@given(preset=st.sampled_from(NEW_GAMES), seed=st.integers(0, 2**31 - 1), played=st.integers(0, 2))
def test_the_state_shown_rebuilds_to_the_same_level_and_plan(preset: str, seed: int, played: int) -> None:
    episode = TextEpisode(preset, seed)
    assert _rebuilt(episode).level_key() == episode.game.level_key()
    for _ in range(played):  # mid-episode: the rebuilt game stands where the live one stands
        if episode.done:
            return
        episode.step(format_reply(oracle_actions(episode), episode.config.action_separator, "t"))
    if episode.done:
        return
    rebuilt, live = _rebuilt(episode), episode.game.state_dict()
    shown = {"countdown": ("numbers", "target"), "sudoku": ("rows",), "rubiks_2x2": ("faces",)}[live["game"]]
    assert {k: rebuilt.state_dict()[k] for k in shown} == {k: live[k] for k in shown}
    if live["game"] != "countdown":  # Countdown answers any expression that hits; the others have one plan
        budget = (3, episode.actions_left, episode.config.max_turns - episode.turn)
        assert rebuilt.plan_turn(*budget) == episode.game.plan_turn(*budget)


def test_other_games_chats_are_not_taken_for_these() -> None:
    for preset, seed in itertools.product(["sokoban", "frozenlake", "bandit_heldout", *NEW_GAMES], range(3)):
        episode = TextEpisode(preset, seed)
        view = read_chat(episode.messages)
        claims = [cls.__name__ for cls in {type(TextEpisode(p, 0).game) for p in NEW_GAMES}
                  if cls.from_text(view.action_names, view.observation, view.intro) is not None]
        assert claims == ([type(episode.game).__name__] if preset in NEW_GAMES else []), preset


@settings(max_examples=80, deadline=None)
@given(preset=st.sampled_from(NEW_GAMES), seed=st.integers(0, 100), data=st.data())
def test_a_garbled_state_is_rebuilt_or_refused_with_a_value_error(preset: str, seed: int, data) -> None:
    episode = TextEpisode(preset, seed)
    view = read_chat(episode.messages)
    chars = list(view.observation)
    alphabet = sorted(set(chars) | set("0123456789.WOGRBY "))
    for _ in range(data.draw(st.integers(1, 4))):  # rewrite a few characters of the state
        chars[data.draw(st.integers(0, len(chars) - 1))] = data.draw(st.sampled_from(alphabet))
    try:
        game = type(episode.game).from_text(view.action_names, "".join(chars), view.intro)
    except ValueError:
        return
    assert game is not None and game.plan()  # what it rebuilds it can play


def test_an_impossible_cube_is_refused() -> None:
    episode = TextEpisode("rubiks_2x2", 0)
    view = read_chat(episode.messages)
    solved_net = "   WW\n   WW\nOO GG RR BB\nOO GG RR BB\n   YY\n   YY"
    twisted = solved_net.replace("WW\nOO GG", "WG\nOO GW", 1)  # one sticker swap: no turns reach it
    for net in (solved_net, twisted):
        with pytest.raises(ValueError, match="not a scrambled cube"):
            type(episode.game).from_text(view.action_names, net, view.intro)


@pytest.mark.parametrize("preset", NEW_GAMES)
def test_served_oracle_wins_every_level_over_http(preset: str) -> None:
    seeds = list(range(10))
    with serve_in_thread(ServeConfig(port=0, agent="oracle")) as url:
        served = play_over_http(url, preset, seeds)
    local = play_in_process(OracleAgent(), preset, seeds)
    assert all(e.success for e in served), [e.seed for e in served if not e.success]
    assert [e.total_reward for e in served] == pytest.approx([e.total_reward for e in local])
    for episode in served:
        assert all(turn["format_ok"] for turn in episode.record()["turns"])


def test_the_chat_oracle_names_the_rebuilt_games_actions() -> None:
    episode = TextEpisode("countdown", 3)
    (completion,) = asyncio.run(ChatOracleAgent().act(episode.messages))
    assert episode.step(completion.text)["reward"] == 1.0
    assert plan_from_chat(read_chat(TextEpisode("sudoku", 3).messages))
