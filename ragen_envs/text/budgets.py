"""RAGEN's action budgets and the one per-turn budget rule.

A leaf module (it imports nothing of the text layer), so that the prompts that state the budget, the
config that fills it in and the players that spend it all read the same rule without an import cycle
(``config`` imports ``prompts`` for its default templates).
"""

from __future__ import annotations

#: RAGEN's budgets for the grid games (Sokoban, FrozenLake); a game's ``text_defaults`` override them.
RAGEN_BUDGETS: dict[str, int] = {"max_turns": 5, "max_actions_per_turn": 5, "max_actions_per_episode": 10}


def turn_budget(max_actions_per_turn: int, actions_left: int) -> int:
    """The most actions this turn may play: the per-turn cap, never more than the episode has left.

    The turn text states the same number ("up to N this turn"), so a player reading the chat and one
    reading the live episode agree.
    """
    return max(0, min(max_actions_per_turn, actions_left))
