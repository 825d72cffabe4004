"""FrozenLake as text: the symbol vocabulary, the rules and legend an LLM reads, and the state in words."""

from __future__ import annotations

from collections.abc import Mapping
from fractions import Fraction

import numpy as np

from ragen_envs.frozen_lake.config import FrozenLakeConfig
from ragen_envs.symbols import merge_symbols

#: Cell kinds in the order of the observation codes 0..5.
CELL_KINDS = ("frozen", "hole", "goal", "player", "player_in_hole", "player_on_goal")

#: RAGEN's vocabulary: player, frozen, hole, goal, player in a hole, player on the goal.
DEFAULT_SYMBOLS: Mapping[str, str] = {
    "player": "P",
    "frozen": "_",
    "hole": "O",
    "goal": "G",
    "player_in_hole": "X",
    "player_on_goal": "√",
}

#: Named vocabularies (the TextGame's ``symbol_sets``); the first is the default.
SYMBOL_SETS: Mapping[str, Mapping[str, str]] = {"ragen": DEFAULT_SYMBOLS}

ACTION_NAMES = ("Left", "Down", "Right", "Up")

ACTION_ALIASES: Mapping[str, int] = {
    "left": 0, "l": 0, "west": 0, "move left": 0,
    "down": 1, "d": 1, "south": 1, "move down": 1,
    "right": 2, "r": 2, "east": 2, "move right": 2,
    "up": 3, "u": 3, "north": 3, "move up": 3,
}

_DESCRIPTIONS = {
    "player": "you, standing on frozen ice",
    "frozen": "frozen ice, safe to stand on",
    "hole": "a hole: stepping in ends the game with no reward",
    "goal": "the goal: reaching it ends the game with reward 1",
    "player_in_hole": "you, fallen into a hole (game over)",
    "player_on_goal": "you, on the goal (you won)",
}


def resolve_symbols(base: Mapping[str, str], override: Mapping[str, str] | None) -> dict[str, str]:
    """``base`` with ``override`` applied, checked by :func:`ragen_envs.symbols.merge_symbols`."""
    return merge_symbols("FrozenLake", base, override)


def cell_separator(symbols: Mapping[str, str]) -> str:
    """Cells are written side by side when every symbol is one character, else separated by a space."""
    return "" if all(len(s) == 1 for s in symbols.values()) else " "


def probability_text(probability: float) -> str:
    """``probability`` written exactly and readably, never in exponent notation.

    A short decimal (``0.8``) when one is exact, else a small fraction (``1/3``), else every digit the
    float needs. ``Fraction(text)`` reads it back exactly, so a player that plans from the rules plans
    with the true value.
    """
    value = float(probability)
    decimal = np.format_float_positional(value, unique=True, trim="0")
    if len(decimal) <= 6:  # at most four decimals: 0.8, 0.25, 0.125
        return decimal
    fraction = Fraction(value).limit_denominator(1000)
    if float(fraction) == value:
        return f"{fraction.numerator}/{fraction.denominator}"
    return decimal


def rules_text(config: FrozenLakeConfig) -> str:
    """The rules in plain English, matching the configured slipping."""
    lines = [
        "FrozenLake: you stand on a frozen lake drawn as a grid. Walk to the goal without falling into a hole.",
        "Actions: Left, Down, Right, Up each try to move you one cell in that direction.",
        "Walking into the edge of the lake leaves you where you are.",
    ]
    if config.is_slippery:
        success = probability_text(config.success_rate)
        # The side chance from the value as printed, so that 1/3 gives 1/3 and not 0.33333333333333337.
        side = probability_text(float((1 - Fraction(success)) / 2))
        lines.append(
            f"The ice is slippery: a move goes the way you chose with probability {success}; "
            f"otherwise you slide sideways, at a right angle to it (probability {side} for each side). "
            "You never slide backwards."
        )
    else:
        lines.append("The ice is not slippery: every move goes exactly where you chose.")
    lines.append("Reaching the goal ends the game with reward 1; falling into a hole ends it with reward 0.")
    return "\n".join(lines)


def legend_text(symbols: Mapping[str, str], coordinate_base: int) -> str:
    """What each symbol means and how coordinates are counted."""
    lines = ["Symbols:"]
    lines += [f"  {symbols[kind]}  {_DESCRIPTIONS[kind]}" for kind in CELL_KINDS]
    lines.append(
        f"Positions are (row, col): row counts down from the top row, col counts right from the left column, "
        f"both starting at {coordinate_base}."
    )
    return "\n".join(lines)
