"""The 2x2 cube: stickers, face turns, and the exact distance of every state to solved.

A sticker is a corner position (a sign triple: x right, y up, z front) with the axis its face points
along. Turns are rotations of the stickers on one layer, so no permutation is typed in by hand.
Only U, R and F turn, which keeps the down-back-left corner in place: each of the 3,674,160 states
is reached one way, and :func:`distances` holds the optimal (half-turn) distance of each, found by
one breadth-first search over a (corner permutation, corner twist) index, computed on first use.
"""

from __future__ import annotations

import functools
import itertools
import threading

import numpy as np

#: The faces by the axis and sign their stickers point along, in the net's order.
FACES = {"U": (1, 1), "L": (0, -1), "F": (2, 1), "R": (0, 1), "B": (2, -1), "D": (1, -1)}
#: Turnable faces: the axis of each; a quarter turn is clockwise seen from outside that face.
TURNS = {"U": 1, "R": 0, "F": 2}
#: Action order: U+, U-, U2, R+, R-, R2, F+, F-, F2 (+ clockwise, - counterclockwise, 2 a half turn).
MOVES = tuple(f"{face}{kind}" for face in TURNS for kind in ("+", "-", "2"))
CORNERS = tuple(itertools.product((-1, 1), repeat=3))
STICKERS = tuple((corner, axis) for corner in CORNERS for axis in range(3))
_INDEX = {sticker: i for i, sticker in enumerate(STICKERS)}
_FIXED = (-1, -1, -1)
#: The largest optimal distance of any state (half-turn metric).
GODS_NUMBER = 11
_MOVABLE = tuple(c for c in CORNERS if c != _FIXED)


def _face_of(corner: tuple[int, ...], axis: int) -> str:
    return next(name for name, (a, sign) in FACES.items() if a == axis and sign == corner[axis])


#: The solved cube: each sticker shows the face it points to.
SOLVED = tuple(_face_of(corner, axis) for corner, axis in STICKERS)


def _quarter(corner: tuple[int, ...], axis: int) -> tuple[tuple[int, ...], dict[int, int]]:
    """A clockwise quarter turn about ``axis`` (seen from its + side): the corner's new place and the axis map."""
    a, b = [i for i in range(3) if i != axis]
    # clockwise seen from +axis: in the right-handed (a, b) plane, (p, q) -> (q, -p), as x,y,z cycle
    if (axis, a, b) in ((0, 1, 2), (1, 2, 0), (2, 0, 1)):
        new = list(corner)
        new[a], new[b] = corner[b], -corner[a]
    else:
        new = list(corner)
        new[b], new[a] = corner[a], -corner[b]
    return tuple(new), {axis: axis, a: b, b: a}


@functools.cache
def permutations() -> tuple[tuple[int, ...], ...]:
    """Per move, where each sticker goes: ``after[perm[i]] = before[i]``."""
    out = []
    for face, axis in TURNS.items():
        quarter = [0] * len(STICKERS)
        for i, (corner, sticker_axis) in enumerate(STICKERS):
            if corner[axis] != FACES[face][1]:
                quarter[i] = i
                continue
            new_corner, axes = _quarter(corner, axis)
            quarter[i] = _INDEX[(new_corner, axes[sticker_axis])]
        twice = [quarter[quarter[i]] for i in range(len(STICKERS))]
        thrice = [quarter[twice[i]] for i in range(len(STICKERS))]
        out += [tuple(quarter), tuple(thrice), tuple(twice)]
    return tuple(out)


def turn(state: tuple[str, ...], move: int) -> tuple[str, ...]:
    """The stickers after move ``move`` (an index into :data:`MOVES`)."""
    after = [""] * len(state)
    for i, target in enumerate(permutations()[move]):
        after[target] = state[i]
    return tuple(after)


def scramble(moves: list[int]) -> tuple[str, ...]:
    """The solved cube after ``moves``."""
    state = SOLVED
    for move in moves:
        state = turn(state, move)
    return state


_TWISTS = 3 ** len(_MOVABLE)
_PERMS = {perm: i for i, perm in enumerate(itertools.permutations(range(len(_MOVABLE))))}
_CUBIES = {frozenset(SOLVED[_INDEX[(c, a)]] for a in range(3)): i for i, c in enumerate(_MOVABLE)}


def index(state: tuple[str, ...]) -> int:
    """The state's row in :func:`distances`: which corner sits where, and along which axis its U/D sticker points."""
    perm, twist = [], 0
    for corner in _MOVABLE:
        colors = [state[_INDEX[(corner, axis)]] for axis in range(3)]
        perm.append(_CUBIES[frozenset(colors)])
        twist = twist * 3 + next(axis for axis, color in enumerate(colors) if color in "UD")
    return _PERMS[tuple(perm)] * _TWISTS + twist


def _tables() -> tuple[np.ndarray, np.ndarray]:
    """Per move, the permutation index and the twist index after it, as arrays over the before-index."""
    perms = list(_PERMS)
    perm_table = np.zeros((len(MOVES), len(perms)), np.int64)
    twist_table = np.zeros((len(MOVES), _TWISTS), np.int64)
    digits = np.array(list(itertools.product(range(3), repeat=len(_MOVABLE))))
    for move, face in enumerate(m[0] for m in MOVES):
        # where each movable corner goes, and how the axes of its stickers map
        quarters = {"+": 1, "-": 3, "2": 2}[MOVES[move][1]]
        places, axis_maps = [], []
        for corner in _MOVABLE:
            axes = {0: 0, 1: 1, 2: 2}
            for _ in range(quarters if corner[TURNS[face]] == FACES[face][1] else 0):
                corner, step = _quarter(corner, TURNS[face])
                axes = {k: step[v] for k, v in axes.items()}
            places.append(_MOVABLE.index(corner))
            axis_maps.append(axes)
        for perm, i in _PERMS.items():
            after = [0] * len(perm)
            for position, cubie in enumerate(perm):
                after[places[position]] = cubie
            perm_table[move, i] = _PERMS[tuple(after)]
        moved = np.zeros_like(digits)
        for position in range(len(_MOVABLE)):
            moved[:, places[position]] = np.vectorize(axis_maps[position].get)(digits[:, position])
        twist_table[move] = moved @ (3 ** np.arange(len(_MOVABLE) - 1, -1, -1))
    return perm_table, twist_table


class _Table:
    """Optimal distances found so far: breadth-first layers from solved, deepened only as far as asked."""

    def __init__(self) -> None:
        self.perm_table, self.twist_table = _tables()
        self.dist = np.full(len(_PERMS) * _TWISTS, -1, np.int8)
        self.frontier = np.array([index(SOLVED)])
        self.dist[self.frontier] = 0
        self.depth = 0

    def deepen(self, depth: int) -> None:
        """Fill in every state at distance ``depth`` or less."""
        seen = np.zeros(self.dist.size, bool)
        while self.depth < depth and self.frontier.size:
            perm, twist = np.divmod(self.frontier, _TWISTS)
            for move in range(len(MOVES)):
                seen[self.perm_table[move, perm] * _TWISTS + self.twist_table[move, twist]] = True
            self.depth += 1
            self.frontier = np.flatnonzero(seen & (self.dist < 0))
            self.dist[self.frontier] = self.depth
            seen[:] = False


#: Deepening rewrites the shared table, so one thread at a time deepens it (``ragen-eval serve`` answers on
#: worker threads); a distance once written never changes, so reading one needs no lock.
_DEEPENING = threading.Lock()


@functools.cache
def _table() -> _Table:
    return _Table()


def distance(state: tuple[str, ...], limit: int = GODS_NUMBER) -> int | None:
    """The fewest moves that solve ``state``, or None when that is more than ``limit``; the table is deepened
    only as far as needed (to 8 moves in about a second, to all 11 in a few)."""
    table, row = _table(), index(state)
    if table.dist[row] < 0:
        with _DEEPENING:
            while table.dist[row] < 0 and table.depth < limit:
                table.deepen(table.depth + 1)
    return None if table.dist[row] < 0 else int(table.dist[row])


def counts(depth: int) -> list[int]:
    """How many states lie at each distance 0..``depth`` (deepens the table that far)."""
    table = _table()
    with _DEEPENING:
        table.deepen(depth)
    return np.bincount(table.dist[table.dist >= 0], minlength=depth + 1)[: depth + 1].tolist()


def solve(state: tuple[str, ...]) -> list[int]:
    """An optimal solution: each move takes one step down the distance table (the first such move)."""
    path = []
    while state != SOLVED:
        here = distance(state)
        move = next(m for m in range(len(MOVES)) if distance(turn(state, m), here - 1) == here - 1)
        path.append(move)
        state = turn(state, move)
    return path
