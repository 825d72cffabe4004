"""The game-side half of the text protocol.

Every ragen environment (the ``unwrapped`` env) implements :class:`TextGame`. The text layer
(``ragen_envs.text``) talks to games only through these members, so it never needs to know which
game it is driving, and a new game needs nothing in the text layer.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol, runtime_checkable

from ragen_envs.certificate import Certificate

#: Observation formats every grid game renders; Bandit renders all three the same way.
OBSERVATION_FORMATS = ("grid", "coords", "grid+coords")


@runtime_checkable
class TextGame(Protocol):
    """What a game exposes so that it can be played as a chat episode."""

    #: Canonical action names; index ``i`` is action ``i`` of the Discrete action space.
    action_names: tuple[str, ...]
    #: Default text-protocol budgets for this game (keys of ``ProtocolConfig``), e.g. Bandit: 1 turn.
    text_defaults: Mapping[str, Any]
    #: Named symbol vocabularies of the observation text (name -> cell kind -> symbol); the first is the
    #: default, the one a prompt uses unless the protocol overrides symbols. Empty for a game without cells.
    symbol_sets: Mapping[str, Mapping[str, str]]
    #: The current level's certificate (None before the first reset, or for a given level without one);
    #: ``reset``'s ``info["certificate"]`` holds its ``to_dict()``.
    certificate: Certificate | None

    def action_aliases(self) -> dict[str, int]:
        """Lower-case spellings the parser accepts (``"up"``, ``"north"``, ``"u"``) -> action id."""
        ...

    def rules_text(self) -> str:
        """Plain-English rules of the game: goal, what each action does, rewards, how it ends."""
        ...

    def legend_text(self, symbols: Mapping[str, str] | None = None, coordinate_base: int = 0) -> str:
        """How to read the observation: the symbol legend and the (row, col) convention."""
        ...

    def observation_text(
        self,
        fmt: str = "grid",
        symbols: Mapping[str, str] | None = None,
        coordinate_base: int = 0,
    ) -> str:
        """The current state as text in one of :data:`OBSERVATION_FORMATS`."""
        ...

    def level_key(self) -> bytes | None:
        """The current level's start as canonical bytes, equal exactly for levels a player could not tell
        apart; ``ragen_envs.splits`` hashes it to decide the level's split. None: the game has one level
        (up to presentation), which every split shares."""
        ...

    def state_dict(self) -> dict[str, Any]:
        """A JSON-serialisable snapshot of the true state (see docs/protocol.md for the schema)."""
        ...

    def plan_turn(self, turn_actions: int, actions_left: int, turns_left: int) -> list[int]:
        """The action ids an optimal player sends this turn from the current state: at most
        ``turn_actions`` of them (the turn's budget), with ``actions_left`` actions and ``turns_left``
        turns (this one included) left in the episode. Never empty; the scripted players of
        ``ragen_envs.text.players`` call it."""
        ...


def grid_lines(observation: str, symbols: set[str]) -> list[str]:
    """The leading lines of ``observation`` made only of single-character ``symbols``: the grid part of a
    state text, for a game's ``from_text`` (rebuilding a game from a chat). ValueError when there is none."""
    lines = []
    for line in observation.split("\n"):
        if line and set(line) <= symbols:
            lines.append(line)
        elif lines:
            break
    if not lines:
        raise ValueError("the observation has no grid in the default symbols (is the format 'coords'?)")
    return lines


def text_budget(max_actions_per_episode: int) -> dict[str, int]:
    """Text-protocol budgets under which a solution of ``max_actions_per_episode`` moves fits.

    RAGEN's 5 actions per turn stay; turns grow to fit the actions (never below RAGEN's 5), so
    turns x actions per turn >= actions per episode.
    """
    per_turn = 5
    turns = max(5, -(-max_actions_per_episode // per_turn))
    return {"max_turns": turns, "max_actions_per_turn": per_turn, "max_actions_per_episode": max_actions_per_episode}
