"""A read-only view of a grid game's ``state_dict()`` that claims are checked against.

Sokoban and FrozenLake states (schemas in docs/interfaces.md) become one :class:`Board`: the set of
cells holding each kind of thing, plus the move rules needed to check predictions. Coordinates are
0-based ``(row, col)`` here, whatever base the prompt showed.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

Cell = tuple[int, int]

#: Kinds a claim can name, per game. "floor"/"frozen" is any cell one can stand on.
SOKOBAN_KINDS = ("player", "box", "target", "wall", "floor")
FROZENLAKE_KINDS = ("player", "goal", "hole", "start", "frozen")
#: Kinds that are terrain: a relation to them means the neighbouring cell, not a half-plane.
TERRAIN_KINDS = frozenset({"wall", "hole", "floor", "frozen"})

#: (d_row, d_col) of each direction word; up = row - 1.
DIRECTION_DELTAS: dict[str, Cell] = {
    "up": (-1, 0), "down": (1, 0), "left": (0, -1), "right": (0, 1),
    "up-left": (-1, -1), "up-right": (-1, 1), "down-left": (1, -1), "down-right": (1, 1),
}


def _cells(value: Any) -> frozenset[Cell]:
    return frozenset((int(r), int(c)) for r, c in value)


@dataclass(frozen=True)
class Board:
    """Where everything is on a Sokoban or FrozenLake grid; build it with :meth:`from_state`."""

    game: str
    height: int
    width: int
    kinds: Mapping[str, frozenset[Cell]]
    is_slippery: bool = False

    @classmethod
    def from_state(cls, state: Mapping[str, Any]) -> Board:
        """Read a ``state_dict()``; raises ValueError naming the missing field on a malformed state."""
        game = state.get("game")
        try:
            if game == "sokoban":
                return cls._from_sokoban(state)
            if game == "frozenlake":
                return cls._from_frozenlake(state)
        except (KeyError, TypeError) as err:
            raise ValueError(f"malformed {game} state: missing or bad field {err}") from err
        raise ValueError(f"no grid board for game {game!r}; expected 'sokoban' or 'frozenlake'")

    @classmethod
    def _from_sokoban(cls, state: Mapping[str, Any]) -> Board:
        height, width = int(state["height"]), int(state["width"])
        walls = _cells(state["walls"])
        everything = frozenset((r, c) for r in range(height) for c in range(width))
        kinds = {
            "player": _cells([state["player"]]),
            "box": _cells(state["boxes"]),
            "target": _cells(state["targets"]),
            "wall": walls,
            "floor": everything - walls,
        }
        return cls("sokoban", height, width, kinds)

    @classmethod
    def _from_frozenlake(cls, state: Mapping[str, Any]) -> Board:
        height, width = int(state["height"]), int(state["width"])
        holes = _cells(state["holes"])
        everything = frozenset((r, c) for r in range(height) for c in range(width))
        kinds = {
            "player": _cells([state["player"]]),
            "goal": _cells([state["goal"]]),
            "hole": holes,
            "start": _cells([state["start"]]),
            "frozen": everything - holes,
        }
        return cls("frozenlake", height, width, kinds, bool(state.get("is_slippery", False)))

    def cells_of(self, kind: str) -> frozenset[Cell]:
        """Cells holding ``kind`` (empty for a kind this game does not have). Sokoban's ``floor`` is where one
        can stand now: no wall and no box (a box's cell was once called an empty cell)."""
        if kind == "floor" and self.game == "sokoban":
            return self.kinds["floor"] - self.kinds["box"]
        return self.kinds.get(kind, frozenset())

    @property
    def player(self) -> Cell:
        """The player's cell."""
        return next(iter(self.kinds["player"]))

    def inside(self, cell: Cell) -> bool:
        """Whether ``cell`` lies on the grid."""
        return 0 <= cell[0] < self.height and 0 <= cell[1] < self.width

    def move(self, action: str) -> Board:
        """The board after one intended move (no slipping), under the game's rules.

        Sokoban: walls block, a box is pushed if the cell beyond is free. FrozenLake: the grid
        edge blocks. A finished game (all boxes placed, or standing on a hole or the goal) does
        not change.
        """
        if action not in DIRECTION_DELTAS or "-" in action:
            raise ValueError(f"unknown move {action!r}; expected up, down, left or right")
        if self.finished:
            return self
        dr, dc = DIRECTION_DELTAS[action]
        r, c = self.player
        ahead = (r + dr, c + dc)
        kinds = dict(self.kinds)
        if self.game == "frozenlake":
            if self.inside(ahead):
                kinds["player"] = frozenset({ahead})
            return Board(self.game, self.height, self.width, kinds, self.is_slippery)
        if not self.inside(ahead) or ahead in self.kinds["wall"]:
            return self
        boxes = self.kinds["box"]
        if ahead in boxes:
            beyond = (ahead[0] + dr, ahead[1] + dc)
            if not self.inside(beyond) or beyond in self.kinds["wall"] or beyond in boxes:
                return self
            kinds["box"] = (boxes - {ahead}) | {beyond}
        kinds["player"] = frozenset({ahead})
        return Board(self.game, self.height, self.width, kinds, self.is_slippery)

    @property
    def finished(self) -> bool:
        """Whether the episode would have ended in this state."""
        if self.game == "sokoban":
            return bool(self.kinds["box"]) and self.kinds["box"] <= self.kinds["target"]
        return self.player in self.kinds["hole"] or self.player in self.kinds["goal"]
