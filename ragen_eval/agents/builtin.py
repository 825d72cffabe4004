"""Agents that need no model: ``random`` (a floor) and ``oracle`` (optimal play; a ceiling).

Both read the live episode passed to ``act`` (``episode=``), so they only run in-process; over
HTTP ``ragen-eval serve`` uses the chat policies, which rebuild the game from the observation text
and then call the same players. The players themselves live in :mod:`ragen_envs.text.players`, so
the leaderboard's rows and the SFT demonstrations come from one oracle and one random player.
Answers are written in the protocol's own format, so the parser scores them like model output.
Each answer is a pure function of (agent seed, episode seed, turn), so concurrency, resume and
sharding never change what a built-in agent plays.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ragen_envs.text.parser import format_reply
from ragen_envs.text.players import oracle_actions, random_actions

from ragen_eval.agents.base import Completion, SamplingParams

if TYPE_CHECKING:
    from ragen_envs.text import TextEpisode


def _require_episode(agent: str, episode: TextEpisode | None) -> TextEpisode:
    if episode is None:
        raise ValueError(f"the built-in {agent} agent reads the live episode; pass episode= "
                         "(over HTTP use `ragen-eval serve --agent {agent}`)")
    return episode


def _answer(episode: TextEpisode, action_names: list[str], thought: str) -> str:
    config = episode.config
    return format_reply(action_names, config.action_separator, thought if config.think else None)


class RandomAgent:
    """Uniformly random actions (:func:`ragen_envs.text.players.random_actions`): 1 to the turn's budget."""

    def __init__(self, seed: int = 0):
        self.name = "random"
        self.seed = int(seed)

    async def act(
        self,
        messages: list[dict[str, str]],
        *,
        n: int = 1,
        sampling: SamplingParams = SamplingParams(),
        episode: TextEpisode | None = None,
    ) -> list[Completion]:
        """``n`` random answers for the episode's current turn."""
        episode = _require_episode("random", episode)
        rng = np.random.default_rng([self.seed, int(episode.seed), episode.turn])
        return [Completion(text=_answer(episode, random_actions(episode, rng), "random play"), finish_reason="stop")
                for _ in range(n)]

    async def aclose(self) -> None:
        """Nothing to release."""


class OracleAgent:
    """Optimal play on the true state (:func:`ragen_envs.text.players.oracle_actions`, each game's ``plan_turn``).

    * Sokoban: the certificate's optimal moves, as many a turn as the budget allows.
    * FrozenLake: a shortest path without slipping; with slipping the finite-horizon optimal policy
      from where the player really is, each turn an even share of the remaining actions, since the
      moves of one answer run blind.
    * Bandit: the arm with the highest expected reward.
    """

    def __init__(self) -> None:
        self.name = "oracle"

    async def act(
        self,
        messages: list[dict[str, str]],
        *,
        n: int = 1,
        sampling: SamplingParams = SamplingParams(),
        episode: TextEpisode | None = None,
    ) -> list[Completion]:
        """``n`` copies of the optimal answer for the episode's current turn."""
        episode = _require_episode("oracle", episode)
        text = _answer(episode, oracle_actions(episode), "following the certificate")
        return [Completion(text=text, finish_reason="stop") for _ in range(n)]

    async def aclose(self) -> None:
        """Nothing to release."""
