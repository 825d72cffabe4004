"""The scripted players: oracle play and random play, under the one per-turn budget rule.

Every player in the project that needs no model plays through this module: the harness's built-in
``oracle`` and ``random`` agents (on the live episode), the served chat policies (on a game rebuilt
from the chat's text) and the SFT demonstrations. So the leaderboard's oracle row and the SFT warm
start imitate one policy, and the random floor is the same player everywhere. Each player is a pure
function of the game state and the random generator it is handed.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from ragen_envs.text.budgets import RAGEN_BUDGETS, turn_budget
from ragen_envs.text.config import ProtocolConfig
from ragen_envs.text.parser import format_reply
from ragen_envs.text_game import TextGame

if TYPE_CHECKING:
    from ragen_envs.text.episode import TextEpisode


def oracle_turn(game: TextGame, max_actions_per_turn: int, actions_left: int, turns_left: int) -> list[int]:
    """The optimal action ids for this turn: the game's own plan (:meth:`TextGame.plan_turn`) under the budget.

    ``turns_left`` counts this turn. At least one action even when the budget is spent, so the reply
    stays well formed; the episode executes none past its budget.
    """
    return list(game.plan_turn(max(turn_budget(max_actions_per_turn, actions_left), 1), actions_left, turns_left))


def random_turn(action_count: int, turn_actions: int, rng: np.random.Generator) -> list[int]:
    """One to ``turn_actions`` (at least one) uniformly random action ids out of ``action_count``."""
    count = int(rng.integers(1, max(turn_actions, 1) + 1))
    return [int(i) for i in rng.integers(0, action_count, size=count)]


def oracle_actions(episode: TextEpisode) -> list[str]:
    """The oracle's action names for ``episode``'s current turn, planned on its true state."""
    config = episode.config
    plan = oracle_turn(episode.game, config.max_actions_per_turn, episode.actions_left,
                       config.max_turns - episode.turn)
    return [episode.game.action_names[a] for a in plan]


def random_actions(episode: TextEpisode, rng: np.random.Generator) -> list[str]:
    """The random player's action names for ``episode``'s current turn, drawn from ``rng``."""
    names = episode.game.action_names
    plan = random_turn(len(names), turn_budget(episode.config.max_actions_per_turn, episode.actions_left), rng)
    return [names[a] for a in plan]


def oracle_responses(
    solution: Sequence[str | int],
    config: ProtocolConfig | None = None,
    action_names: Sequence[str] | None = None,
) -> list[str]:
    """One reply per turn that plays a known ``solution`` in chunks of ``config.max_actions_per_turn``.

    ``solution`` holds action names, or action ids when ``action_names`` (the game's) is given. The
    replies follow ``config``'s answer format (think or no-think, separator); feed them to
    ``TextEpisode.step`` in order. For replaying a stored solution (e.g. a certificate's moves);
    live play uses :func:`oracle_actions`.
    """
    config = config or ProtocolConfig()
    if isinstance(solution, (str, bytes)):
        raise TypeError(f"solution must be a sequence of actions, not one string: {solution!r:.80}")
    names = []
    for action in solution:
        if isinstance(action, str) and action.strip():
            names.append(action)
        elif isinstance(action, int) and not isinstance(action, bool) and action_names is not None:
            if not 0 <= action < len(action_names):
                raise ValueError(f"action id {action} is outside 0..{len(action_names) - 1}")
            names.append(action_names[action])
        else:
            raise TypeError(
                f"solution items must be action names, or action ids together with action_names; got {action!r}"
            )
    per_turn = config.max_actions_per_turn or RAGEN_BUDGETS["max_actions_per_turn"]
    replies = []
    for start in range(0, len(names), per_turn):
        chunk = names[start : start + per_turn]
        thought = f"Following the known solution, moves {start + 1}-{start + len(chunk)}: {', '.join(chunk)}."
        replies.append(format_reply(chunk, config.action_separator, thought if config.think else None))
    return replies
