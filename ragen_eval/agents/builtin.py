"""Agents that need no model: ``random`` (a floor) and ``oracle`` (plays the certificate; a ceiling).

Both read the live episode passed to ``act`` (``episode=``), so they only run in-process; over
HTTP ``ragen-eval serve`` uses its own chat policies that read the observation text instead.
Answers are written in the protocol's own format, so the parser scores them like model output.
Each answer is a pure function of (agent seed, episode seed, turn), so concurrency, resume and
sharding never change what a built-in agent plays.
"""

from __future__ import annotations

from types import MappingProxyType
from typing import TYPE_CHECKING, Any

import numpy as np

from ragen_envs.text.parser import format_reply

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
    """Uniformly random actions: 1 to ``max_actions_per_turn`` of them each turn, each uniform."""

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
        names = list(episode.env.unwrapped.action_names)
        rng = np.random.default_rng([self.seed, int(episode.seed), episode.turn])
        out = []
        for _ in range(n):
            k = int(rng.integers(1, episode.config.max_actions_per_turn + 1))
            chosen = [names[i] for i in rng.integers(0, len(names), size=k)]
            out.append(Completion(text=_answer(episode, chosen, "random play"), finish_reason="stop"))
        return out

    async def aclose(self) -> None:
        """Nothing to release."""


class OracleAgent:
    """Optimal play from the level's certificate and true state.

    * Sokoban: the certificate's optimal move sequence, ``max_actions_per_turn`` moves a turn.
    * FrozenLake: :func:`ragen_envs.frozen_lake.planning.plan_turn` from where the player really is:
      a shortest path without slipping; with slipping the finite-horizon optimal policy (value
      iteration on the true lake), each turn using an even share of the remaining action budget,
      since the moves of one answer are executed blind.
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
        state = episode.env.unwrapped.state_dict()
        names = list(episode.env.unwrapped.action_names)
        plan = _PLANNERS[state["game"]](episode, state)
        text = _answer(episode, [names[a] for a in plan], "following the certificate")
        return [Completion(text=text, finish_reason="stop") for _ in range(n)]

    async def aclose(self) -> None:
        """Nothing to release."""


def _budget(episode: TextEpisode) -> tuple[int, int, int]:
    """(actions this turn may use, actions left in the episode, turns left)."""
    cfg = episode.config
    actions_left = cfg.max_actions_per_episode - episode.num_actions
    turns_left = cfg.max_turns - episode.turn
    return min(cfg.max_actions_per_turn, actions_left), actions_left, turns_left


def _sokoban_plan(episode: TextEpisode, state: dict[str, Any]) -> list[int]:
    solution = _sokoban_solution(episode.certificate)
    per_turn, _, _ = _budget(episode)
    done = episode.num_actions
    rest = solution[done:done + max(per_turn, 1)]
    # Past the certificate's end only an unsolvable-in-budget level remains: repeat a harmless move.
    return rest or solution[-1:] or [0]


def _sokoban_solution(certificate: dict[str, Any]) -> list[int]:
    for key in ("solution", "actions", "moves"):
        value = certificate.get(key)
        if isinstance(value, list) and all(isinstance(a, int) for a in value):
            return value
    raise ValueError(f"Sokoban certificate has no action-id solution: keys {sorted(certificate)}")


def _frozenlake_plan(episode: TextEpisode, state: dict[str, Any]) -> list[int]:
    from ragen_envs.frozen_lake.level import FrozenLakeLevel
    from ragen_envs.frozen_lake.planning import plan_turn

    per_turn, actions_left, turns_left = _budget(episode)
    return plan_turn(FrozenLakeLevel(tuple(state["rows"])), tuple(state["player"]),
                     is_slippery=state["is_slippery"], success_rate=episode.certificate["success_rate"],
                     turn_actions=per_turn, actions_left=actions_left, turns_left=turns_left)


def _bandit_plan(episode: TextEpisode, state: dict[str, Any]) -> list[int]:
    rewards = [arm["expected_reward"] for arm in state["arms"]]
    return [int(np.argmax(rewards))]


_PLANNERS = MappingProxyType({"sokoban": _sokoban_plan, "frozenlake": _frozenlake_plan, "bandit": _bandit_plan})
