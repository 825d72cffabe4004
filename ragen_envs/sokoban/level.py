"""A Sokoban level (walls, targets, boxes, player), its seeded generator, and its certificate.

Cells are ``(row, col)`` from the top-left corner of the full grid, border walls included. Inside
the search code a cell is the flat index ``row * width + col`` and a set of cells is a Python int
used as a bit mask, which makes set operations and "every neighbour of every cell" single shifts.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from ragen_envs.certificate import Certificate
from ragen_envs.deadline import check_deadline
from ragen_envs.sokoban.config import SokobanConfig
from ragen_envs.sokoban.reverse_search import search_backwards
from ragen_envs.sokoban.room import Draws, carve_room

#: Action ids of the Discrete(4) space, by index.
ACTION_NAMES: tuple[str, ...] = ("Up", "Down", "Left", "Right")

Cell = tuple[int, int]


@dataclass(frozen=True)
class SokobanCertificate:
    """An optimal solution: the fewest moves, and among those the fewest pushes. Sokoban's own record,
    kept on the level and in level-file caches; :func:`certificate` gives the typed one every game shares."""

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
    def from_dict(cls, values: dict[str, Any]) -> SokobanCertificate:
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
    certificate: SokobanCertificate | None = None
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
                boxes: tuple[Cell, ...], player: Cell, certificate: SokobanCertificate | None = None,
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

    def with_certificate(self, certificate: SokobanCertificate | None) -> SokobanLevel:
        """The same position carrying ``certificate``."""
        return SokobanLevel(self.height, self.width, self.walls, self.targets, self.boxes, self.player,
                            certificate, self.seed)

    def to_text(self) -> str:
        """The level in standard notation (see :func:`~ragen_envs.sokoban.format_level`)."""
        from ragen_envs.sokoban.notation import format_level

        return format_level(self)

    def level_key(self) -> bytes:
        """The start position as canonical bytes (walls, targets, boxes, player; not the certificate or
        seed): equal for two levels exactly when they have the same grid. Decides the split; the same puzzle
        moved inside the grid or framed by more walls is another grid."""
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


# -- generation ------------------------------------------------------------------------------------
# Seeded level generation: ``generate(config, seed)`` is a pure function of its arguments.
#
# Each attempt carves a room, places the targets, and searches backwards from the solved room (see
# :mod:`ragen_envs.sokoban.reverse_search`). The start position is drawn from the states the
# search settled whose certificate lies in the difficulty band: among those with the fewest boxes
# already on targets, the ones with the most pushes (``start_selection="hardest"``) or with a push
# count drawn uniformly from those present (``"spread"``); then one of them uniformly. Its
# certificate is read off the search. An attempt whose search finds no such state is discarded; after
# ``config.max_attempts`` failed attempts a :class:`GenerationError` says what to change.


class GenerationError(RuntimeError):
    """No level in the difficulty band was found within ``max_attempts`` rooms."""


def generate(config: SokobanConfig | Mapping[str, Any] | None, seed: int) -> SokobanLevel:
    """The level of ``seed`` under ``config``, with its certificate (an optimal solution)."""
    config = SokobanConfig.coerce(config)
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ValueError(f"seed must be a non-negative int, got {seed!r}")
    seed = int(seed)
    draws = Draws(np.random.default_rng(seed))
    for _ in range(config.max_attempts):
        check_deadline()
        level = _attempt(config, draws, seed)
        if level is not None:
            return level
    band = f"{config.min_pushes}..{config.max_pushes if config.max_pushes is not None else 'any'}"
    raise GenerationError(
        f"no {config.height}x{config.width} level with {config.num_boxes} box(es) and a certificate of "
        f"{band} pushes found in {config.max_attempts} attempts (seed {seed}); widen the push band, raise "
        f"search_budget (now {config.search_budget}) or max_attempts, or use a larger room"
    )


def _attempt(config: SokobanConfig, draws: Draws, seed: int) -> SokobanLevel | None:
    h, w, n = config.height, config.width, config.num_boxes
    floor = carve_room(draws, h, w, config.carving_steps, config.p_change_direction)
    cells = []
    m = floor
    while m:
        low = m & -m
        m ^= low
        cells.append(low.bit_length() - 1)
    if len(cells) < n + 1:
        return None
    targets = 0
    for i in range(n):  # partial Fisher-Yates: n distinct cells
        j = i + draws.below(len(cells) - i)
        cells[i], cells[j] = cells[j], cells[i]
        targets |= 1 << cells[i]
    search = search_backwards(w, floor, targets, config.search_budget)
    lo = config.min_pushes
    hi = config.max_pushes if config.max_pushes is not None else 1 << 30
    # Prefer starts with as few boxes already on targets as the search offers (Boxoban's levels
    # start with none). Then take the push count (the most found, as gym-sokoban keeps its hardest
    # reverse-played state; or one drawn uniformly from those present) and a state uniformly
    # among those with that count.
    by_pushes: dict[int, list[tuple[int, int, int]]] = {}
    fewest_placed = n
    for boxes, records in search.records.items():
        placed = (boxes & targets).bit_count()
        if placed > fewest_placed or placed == n:
            continue
        for _, pushes, players in records:
            if lo <= pushes <= hi:
                if placed < fewest_placed:
                    fewest_placed, by_pushes = placed, {}
                by_pushes.setdefault(pushes, []).append((boxes, players, players.bit_count()))
    if not by_pushes:
        return None
    counts = sorted(by_pushes)
    chosen = counts[-1] if config.start_selection == "hardest" else counts[draws.below(len(counts))]
    candidates = by_pushes[chosen]
    k = draws.below(sum(count for _, _, count in candidates))
    for boxes, players, count in candidates:
        if k < count:
            break
        k -= count
    for _ in range(k):
        players &= players - 1  # drop the lowest set bits until the k-th is lowest
    player = (players & -players).bit_length() - 1
    actions, pushes = search.solution_from(boxes, player)
    everything = (1 << (h * w)) - 1
    # cells_of lists cells in flat-index order, which is the sorted order the class keeps.
    return SokobanLevel.trusted(
        h, w,
        walls=frozenset(cells_of(everything & ~floor, w)),
        targets=tuple(cells_of(targets, w)),
        boxes=tuple(cells_of(boxes, w)),
        player=divmod(player, w),
        certificate=SokobanCertificate(tuple(actions), pushes),
        seed=seed,
    )


def certificate(level: SokobanLevel) -> Certificate | None:
    """The level's typed certificate: its optimal solution always wins, so the success probability is 1;
    the extras are :meth:`SokobanCertificate.to_dict` (``solution`` names, ``actions``, ``moves``,
    ``pushes``). None for a level given without a solution."""
    found = level.certificate
    if found is None:
        return None
    return Certificate(optimal_steps=found.moves, optimal_actions=found.solution, optimal_success_probability=1.0,
                       extras=found.to_dict())
