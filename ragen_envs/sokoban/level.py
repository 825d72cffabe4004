"""A Sokoban level (walls, targets, boxes, player) and its certificate (an optimal solution).

Cells are ``(row, col)`` from the top-left corner of the full grid, border walls included. Inside
the search code a cell is the flat index ``row * width + col`` and a set of cells is a Python int
used as a bit mask, which makes set operations and "every neighbour of every cell" single shifts.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

#: Action ids of the Discrete(4) space, by index.
ACTION_NAMES: tuple[str, ...] = ("Up", "Down", "Left", "Right")

Cell = tuple[int, int]


def action_offsets(width: int) -> tuple[int, int, int, int]:
    """Flat-index step of each action (Up, Down, Left, Right) on a grid ``width`` cells wide."""
    return (-width, width, -1, 1)


@dataclass(frozen=True)
class Certificate:
    """An optimal solution: the fewest moves, and among those the fewest pushes."""

    solution: tuple[int, ...]  # action ids
    pushes: int

    @property
    def moves(self) -> int:
        """Number of moves (steps) of the solution."""
        return len(self.solution)

    @property
    def action_names(self) -> list[str]:
        """The solution as action names (``"Up"``, ...)."""
        return [ACTION_NAMES[a] for a in self.solution]

    def to_dict(self) -> dict[str, Any]:
        """JSON-friendly form: ``solution`` (names), ``actions`` (ids), ``moves``, ``pushes``."""
        return {"solution": self.action_names, "actions": list(self.solution), "moves": self.moves,
                "pushes": self.pushes}

    @classmethod
    def from_dict(cls, values: dict[str, Any]) -> Certificate:
        """Inverse of :meth:`to_dict` (reads ``actions``, or ``solution`` names)."""
        if "actions" in values:
            actions = tuple(int(a) for a in values["actions"])
        else:
            actions = tuple(ACTION_NAMES.index(str(a).capitalize()) for a in values["solution"])
        return cls(actions, int(values["pushes"]))


@dataclass(frozen=True)
class SokobanLevel:
    """One Sokoban position. Validated on construction; see :func:`~ragen_envs.sokoban.parse_level`."""

    height: int
    width: int
    walls: frozenset[Cell]
    targets: tuple[Cell, ...]
    boxes: tuple[Cell, ...]
    player: Cell
    certificate: Certificate | None = None
    seed: int | None = None  # the level seed it was generated from, if any

    def __post_init__(self) -> None:
        object.__setattr__(self, "walls", frozenset(self.walls))
        object.__setattr__(self, "targets", tuple(sorted(self.targets)))
        object.__setattr__(self, "boxes", tuple(sorted(self.boxes)))
        h, w = self.height, self.width
        if h < 3 or w < 3:
            raise ValueError(f"a Sokoban level needs at least 3x3 cells, got {h}x{w}")

        def check(cell: Any, what: str) -> None:
            if not (isinstance(cell, tuple) and len(cell) == 2 and 0 <= cell[0] < h and 0 <= cell[1] < w):
                raise ValueError(f"{what} {cell!r} is not a (row, col) cell of the {h}x{w} grid")
            if cell in self.walls:
                raise ValueError(f"{what} at {cell} is inside a wall")

        for cell in self.walls:
            if not (isinstance(cell, tuple) and len(cell) == 2 and 0 <= cell[0] < h and 0 <= cell[1] < w):
                raise ValueError(f"wall {cell!r} is not a (row, col) cell of the {h}x{w} grid")
        check(self.player, "player")
        for cell in self.boxes:
            check(cell, "box")
        for cell in self.targets:
            check(cell, "target")
        if not self.boxes:
            raise ValueError("a Sokoban level needs at least one box")
        if len(set(self.boxes)) != len(self.boxes):
            raise ValueError("two boxes share a cell")
        if len(set(self.targets)) != len(self.targets):
            raise ValueError("two targets share a cell")
        if len(self.boxes) != len(self.targets):
            raise ValueError(f"the level has {len(self.boxes)} boxes but {len(self.targets)} targets")
        if self.player in self.boxes:
            raise ValueError(f"the player and a box share the cell {self.player}")
        area = self.area_cells()
        for cell in self.boxes + self.targets:
            if cell not in area:
                raise ValueError(f"the cell {cell} holds a box or target the player can never reach")

    @classmethod
    def trusted(cls, height: int, width: int, walls: frozenset[Cell], targets: tuple[Cell, ...],
                boxes: tuple[Cell, ...], player: Cell, certificate: Certificate | None = None,
                seed: int | None = None) -> SokobanLevel:
        """Build without validation, for the generator's own output (sorted, valid by construction)."""
        level = object.__new__(cls)
        for name, value in (("height", height), ("width", width), ("walls", walls), ("targets", targets),
                            ("boxes", boxes), ("player", player), ("certificate", certificate), ("seed", seed)):
            object.__setattr__(level, name, value)
        return level

    def area_cells(self) -> frozenset[Cell]:
        """Cells the player could ever stand on or push a box to: the walled region around the player.

        Raises ValueError if that region reaches the edge of the grid (the level is not enclosed).
        """
        seen = {self.player}
        stack = [self.player]
        while stack:
            r, c = stack.pop()
            if r in (0, self.height - 1) or c in (0, self.width - 1):
                raise ValueError(
                    f"the player's area is not enclosed by walls: it reaches the grid edge at {(r, c)}"
                )
            for nxt in ((r - 1, c), (r + 1, c), (r, c - 1), (r, c + 1)):
                if nxt not in seen and nxt not in self.walls:
                    seen.add(nxt)
                    stack.append(nxt)
        return frozenset(seen)

    @property
    def is_solved(self) -> bool:
        """True when every box stands on a target."""
        return set(self.boxes) == set(self.targets)

    def with_certificate(self, certificate: Certificate | None) -> SokobanLevel:
        """The same position carrying ``certificate``."""
        return SokobanLevel(self.height, self.width, self.walls, self.targets, self.boxes, self.player,
                            certificate, self.seed)

    def to_text(self) -> str:
        """The level in standard notation (see :func:`~ragen_envs.sokoban.format_level`)."""
        from ragen_envs.sokoban.notation import format_level

        return format_level(self)

    def level_key(self) -> bytes:
        """The start position as canonical bytes (walls, targets, boxes, player; not the certificate or
        seed): equal for two levels exactly when a player would see the same puzzle. Decides the split."""
        return b"sokoban\n" + self.to_text().encode()


@dataclass(frozen=True)
class Board:
    """A level's geometry as flat indices and bit masks, the form the search code works on."""

    width: int
    floor: int  # mask of the player's area (boxes' cells included)
    targets: int  # mask of target cells
    boxes: int  # mask of box cells
    player: int  # flat index

    @classmethod
    def of(cls, level: SokobanLevel) -> Board:
        """The board of ``level``."""
        w = level.width

        def mask(cells: Any) -> int:
            m = 0
            for r, c in cells:
                m |= 1 << (r * w + c)
            return m

        return cls(w, mask(level.area_cells()), mask(level.targets), mask(level.boxes),
                   level.player[0] * w + level.player[1])


def cells_of(mask: int, width: int) -> list[Cell]:
    """The (row, col) cells of a bit mask, in flat-index order."""
    out = []
    while mask:
        low = mask & -mask
        i = low.bit_length() - 1
        out.append(divmod(i, width))
        mask ^= low
    return out
