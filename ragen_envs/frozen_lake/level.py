"""A FrozenLake map, its pure, seeded generator, and its certificate.

A level is a rectangle of Gymnasium's letters: ``S`` start, ``F`` frozen, ``H`` hole, ``G`` goal.
:func:`generate` is a pure function of ``(config, seed)``, so the same pair gives the same lake in
any process, and every lake it returns has a path of frozen cells from start to goal.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

from ragen_envs.certificate import Certificate
from ragen_envs.deadline import check_deadline
from ragen_envs.frozen_lake.config import FrozenLakeConfig
from ragen_envs.frozen_lake.planning import (
    neighbour_table,
    path_on_cells,
    reach_probability,
    shortest_path,
    success_within,
)

LETTERS = frozenset("SFHG")


@dataclass(frozen=True)
class FrozenLakeLevel:
    """One lake, stored as rows of ``S F H G`` (exactly one ``S`` and one ``G``)."""

    rows: tuple[str, ...]

    def __post_init__(self) -> None:
        if not self.rows or not self.rows[0]:
            raise ValueError("a FrozenLake level needs at least one row and one column")
        width = len(self.rows[0])
        for i, row in enumerate(self.rows):
            if len(row) != width:
                raise ValueError(f"FrozenLake rows must all have {width} cells; row {i} has {len(row)}: {row!r}")
            bad = set(row) - LETTERS
            if bad:
                raise ValueError(f"FrozenLake row {i} holds {sorted(bad)}; only S, F, H, G are allowed")
        text = "".join(self.rows)
        if text.count("S") != 1 or text.count("G") != 1:
            raise ValueError(
                f"a FrozenLake level needs exactly one S and one G; got {text.count('S')} S and {text.count('G')} G"
            )

    @classmethod
    def from_text(cls, text: str) -> FrozenLakeLevel:
        """Parse a level from lines of ``S F H G`` (blank lines and surrounding spaces are ignored)."""
        return cls(tuple(line.strip() for line in text.strip().splitlines() if line.strip()))

    def to_text(self) -> str:
        """The rows joined by newlines; :meth:`from_text` reads it back."""
        return "\n".join(self.rows)

    def level_key(self) -> bytes:
        """The map as canonical bytes (start, goal and holes; slipping is the config's, not the map's).
        Decides the level's split."""
        return b"frozenlake\n" + self.to_text().encode()

    @property
    def height(self) -> int:
        """Number of rows."""
        return len(self.rows)

    @property
    def width(self) -> int:
        """Number of columns."""
        return len(self.rows[0])

    def _find(self, letter: str) -> tuple[int, int]:
        index = "".join(self.rows).index(letter)
        return divmod(index, self.width)

    @property
    def start(self) -> tuple[int, int]:
        """(row, col) of the start cell."""
        return self._find("S")

    @property
    def goal(self) -> tuple[int, int]:
        """(row, col) of the goal cell."""
        return self._find("G")

    @cached_property
    def holes(self) -> tuple[tuple[int, int], ...]:
        """(row, col) of every hole, row by row."""
        return tuple((r, c) for r, row in enumerate(self.rows) for c, ch in enumerate(row) if ch == "H")


def generate(config: FrozenLakeConfig, seed: int) -> FrozenLakeLevel:
    """The lake for ``seed``: random holes, a random start and goal, and a guaranteed path between them.

    Each attempt freezes every cell with probability ``config.p_frozen``, picks two distinct cells as
    start and goal, and keeps the map if a hole-free path of at least ``config.min_path_length``
    moves joins them. After ``config.max_attempts`` failures it raises a RuntimeError.
    """
    if not isinstance(config, FrozenLakeConfig):
        raise TypeError(f"generate needs a FrozenLakeConfig, got {type(config).__name__}")
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ValueError(f"seed must be a non-negative int, got {seed!r}")
    rng = np.random.default_rng(int(seed))
    height, width = config.height, config.width
    n = height * width
    table = neighbour_table(height, width).tolist()
    letters = np.array([ord("H"), ord("F")], dtype=np.uint8)
    for _ in range(config.max_attempts):
        check_deadline()
        grid = letters[(rng.random(n) < config.p_frozen).view(np.uint8)]
        start = int(rng.integers(n))
        goal = int(rng.integers(n - 1))
        goal += goal >= start  # a uniform cell other than the start
        grid[start] = ord("S")
        grid[goal] = ord("G")
        cells = grid.tobytes().decode("ascii")
        path = path_on_cells(cells, table)
        if path is not None and len(path) >= config.min_path_length:
            return FrozenLakeLevel(tuple(cells[r * width:(r + 1) * width] for r in range(height)))
    raise RuntimeError(
        f"no {height}x{width} lake with a path of at least {config.min_path_length} moves found in "
        f"{config.max_attempts} attempts (p_frozen={config.p_frozen}); raise p_frozen or max_attempts, or lower "
        "min_path_length"
    )


def certificate(level: FrozenLakeLevel, config: FrozenLakeConfig) -> Certificate:
    """What a harness needs to judge play on this lake.

    ``optimal_steps``: the length of a shortest hole-free path (the fewest moves that can win);
    ``optimal_actions``: that path without slipping, None with it (no fixed sequence is sure to win);
    ``optimal_success_probability``: the best chance of reaching the goal within ``config.horizon``
    steps under the configured slipping. Extras: ``shortest_path_length`` and ``shortest_path``
    (action ids, assuming no slipping), ``optimal_success_prob`` (the typed probability again),
    ``optimal_success_prob_unlimited`` (no step limit; None when ``config.certifies_unlimited`` is
    False), ``horizon``, ``is_slippery``, ``success_rate``.
    """
    path = shortest_path(level)
    if path is None:
        raise ValueError("this lake has no hole-free path from start to goal")
    slip = {"is_slippery": config.is_slippery, "success_rate": config.success_rate}
    unlimited: float | None
    if not config.certifies_unlimited:
        unlimited = None
    elif config.is_slippery:
        unlimited = float(reach_probability(level, **slip)[level.start])
    else:
        unlimited = 1.0  # a path exists and nothing slips
    within = float(success_within(level, **slip, horizon=config.horizon)[level.start])
    return Certificate(
        optimal_steps=len(path),
        optimal_actions=None if config.is_slippery else tuple(path),
        optimal_success_probability=within,
        extras={
            "shortest_path_length": len(path),
            "shortest_path": path,
            "horizon": config.horizon,
            "optimal_success_prob": within,
            "optimal_success_prob_unlimited": unlimited,
            "is_slippery": config.is_slippery,
            "success_rate": config.success_rate if config.is_slippery else 1.0,
        },
    )
