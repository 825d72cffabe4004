"""Room geometry: the flat-index step of each action, and random room topologies carved by a wandering
walk (the idea of gym-sokoban's generator)."""

from __future__ import annotations

import numpy as np

# Shapes stamped at each step of the walk, as (row, col) offsets from the walker: a single cell,
# a horizontal or vertical bar, a plus and a 2x2 block. Mixing them gives rooms with both corridors
# and open areas; each shape stays connected when the border clips it.
_STAMPS = (
    ((0, 0),),
    ((0, -1), (0, 0), (0, 1)),
    ((-1, 0), (0, 0), (1, 0)),
    ((-1, 0), (0, -1), (0, 0), (0, 1), (1, 0)),
    ((0, 0), (0, 1), (1, 0), (1, 1)),
)
_STEPS = ((-1, 0), (1, 0), (0, -1), (0, 1))


def action_offsets(width: int) -> tuple[int, int, int, int]:
    """Flat-index step of each action (Up, Down, Left, Right) on a grid ``width`` cells wide."""
    return (-width, width, -1, 1)


class Draws:
    """Uniform draws from a numpy Generator, fetched in blocks (one numpy call per 64 draws)."""

    def __init__(self, rng: np.random.Generator) -> None:
        self._rng = rng
        self._block: list[float] = []

    def uniform(self) -> float:
        """A float in [0, 1)."""
        if not self._block:
            self._block = self._rng.random(64).tolist()
            self._block.reverse()
        return self._block.pop()

    def below(self, n: int) -> int:
        """An int in ``range(n)``."""
        return int(self.uniform() * n)

    def uniforms(self, k: int) -> list[float]:
        """``k`` floats in [0, 1) in one numpy call (for loops that know how many they need)."""
        return self._rng.random(k).tolist()


def carve_room(draws: Draws, height: int, width: int, steps: int, p_turn: float) -> int:
    """Mask (flat index ``row * width + col``) of the floor carved inside a wall border.

    The walk starts on a random inner cell and takes ``steps`` steps, turning to a random direction
    with probability ``p_turn`` before each one and staying put when a step would leave the
    interior; at every position it stamps one of a few small shapes. The floor is connected.
    """
    u = draws.uniforms(3 + 3 * steps)
    r, c = 1 + int(u[0] * (height - 2)), 1 + int(u[1] * (width - 2))
    dr, dc = _STEPS[int(u[2] * 4)]
    floor = 0
    stamps = len(_STAMPS)
    for k in range(3, 3 + 3 * steps, 3):
        if u[k] < p_turn:
            dr, dc = _STEPS[int(u[k + 1] * 4)]
        nr, nc = r + dr, c + dc
        if 0 < nr < height - 1 and 0 < nc < width - 1:
            r, c = nr, nc
        for sr, sc in _STAMPS[int(u[k + 2] * stamps)]:
            rr, cc = r + sr, c + sc
            if 0 < rr < height - 1 and 0 < cc < width - 1:
                floor |= 1 << (rr * width + cc)
    return floor
