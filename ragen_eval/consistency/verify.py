"""Check a canonical claim against the true state: a verdict and the cells the claim refers to."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ragen_eval.consistency.board import DIRECTION_DELTAS, Board, Cell
from ragen_eval.consistency.claims import arm_key

#: Given a move sequence, the board it leads to, or None when that cannot be known.
Predictor = Callable[[tuple[str, ...]], Board | None]
Verdict = tuple[bool | None, list[list[int]]]


def _sign(x: int) -> int:
    return (x > 0) - (x < 0)


def relation_holds(a: Cell, b: Cell, direction: str, mode: str | None) -> bool:
    """Whether cell ``a`` lies in ``direction`` of cell ``b``.

    ``mode`` None: loosely (each named axis points the right way, the other axis is free for a
    single direction); ``"line"``: on the same row, column or diagonal; an integer string: exactly
    that many cells away along the direction.
    """
    want_r, want_c = DIRECTION_DELTAS[direction]
    dr, dc = a[0] - b[0], a[1] - b[1]
    if mode is None:
        return (want_r == 0 or _sign(dr) == want_r) and (want_c == 0 or _sign(dc) == want_c)
    if mode == "line":
        if want_r and want_c:
            return abs(dr) == abs(dc) and _sign(dr) == want_r and _sign(dc) == want_c and dr != 0
        return (dr, dc) != (0, 0) and _sign(dr) == want_r and _sign(dc) == want_c
    n = int(mode)
    return (dr, dc) == (want_r * n, want_c * n)


def _corner(cell: Cell, walls: frozenset[Cell]) -> bool:
    r, c = cell
    vertical = (r - 1, c) in walls or (r + 1, c) in walls
    horizontal = (r, c - 1) in walls or (r, c + 1) in walls
    return vertical and horizontal


def _split_args(inner: str) -> list[str]:
    return [part.strip() for part in inner.split(",")] if inner else []


def _relation_cells(board: Board, arg: str) -> tuple[frozenset[Cell], bool]:
    """The cells a relation's thing may be at: ``kind`` anywhere it is, or ``kind@r:c`` the cell the thought
    named (the relation is then geometry between the named cells; whether the thing is there is the
    thought's own ``at`` claim)."""
    kind, _, pin = arg.partition("@")
    if not pin:
        return board.cells_of(kind), False
    row, _, col = pin.partition(":")
    return frozenset({(int(row), int(col))}), True


def check_grid(canonical: str, board: Board, predict: Predictor) -> Verdict:
    """Verdict of a Sokoban/FrozenLake claim and its cells; ValueError if the claim is malformed."""
    if canonical == "all_placed":
        boxes = board.cells_of("box")
        return bool(boxes) and boxes <= board.cells_of("target"), sorted(map(list, boxes))
    head, _, rest = canonical.partition("(")
    inner = rest[:-1]
    if head == "after":
        moves, _, claim = inner.partition("|")
        later = predict(tuple(m for m in moves.split(",") if m))
        if later is None:
            return None, []
        if claim == "on(box,target)":  # the box the moves push: a box placed before them does not count
            pushed = later.cells_of("box") - board.cells_of("box")
            placed = pushed & later.cells_of("target")
            return bool(placed), sorted(map(list, placed or pushed))
        return check_grid(claim, later, predict)
    args = _split_args(inner)
    if head == "at":
        kind, r, c = args[0], int(args[1]), int(args[2])
        return (r, c) in board.cells_of(kind), [[r, c]]
    if head == "on":
        both = board.cells_of(args[0]) & board.cells_of(args[1])
        return bool(both), sorted(map(list, both or board.cells_of(args[0])))
    if head == "placed":
        placed = board.cells_of("box") & board.cells_of("target")
        return len(placed) == int(args[0]), sorted(map(list, placed))
    if head == "corner":
        cells = [cell for cell in board.cells_of(args[0]) if _corner(cell, board.cells_of("wall"))]
        return bool(cells), sorted(map(list, cells or board.cells_of(args[0])))
    if head == "adj":
        touching = {cell for a in board.cells_of(args[0]) for b in board.cells_of(args[1])
                    if abs(a[0] - b[0]) + abs(a[1] - b[1]) == 1 for cell in (a, b)}
        return bool(touching), sorted(map(list, touching or board.cells_of(args[1])))
    if head == "rel":
        (a_cells, _), (b_cells, b_pinned) = _relation_cells(board, args[0]), _relation_cells(board, args[1])
        direction = args[2]
        mode = args[3] if len(args) > 3 else None
        if direction not in DIRECTION_DELTAS:
            raise ValueError(f"unknown direction {direction!r} in {canonical!r}")
        pairs = [(a, b) for a in a_cells for b in b_cells if relation_holds(a, b, direction, mode)]
        if pairs:
            return True, [list(pairs[0][0]), list(pairs[0][1])]
        return False, sorted(map(list, b_cells))[:1]
    raise ValueError(f"not a grid claim: {canonical!r}")


def check_bandit(canonical: str, arms: Sequence[Mapping[str, Any]]) -> bool | None:
    """Verdict of a ``risk``/``reward`` claim against the arms' true distributions, or of an ``arms`` claim
    against their names.

    None if the arm is unknown or every arm ties on that quantity (nothing to be high or low). An ``arms``
    claim is true when it lists exactly the level's arms, in any order.
    """
    head, _, rest = canonical.partition("(")
    if head == "arms":
        return sorted(rest[:-1].split(",")) == sorted(arm_key(arm["name"]) for arm in arms)
    name, _, level = rest[:-1].partition(",")
    field = {"risk": "variance", "reward": "expected_reward"}.get(head)
    if field is None or level not in ("high", "low"):
        raise ValueError(f"not a bandit claim: {canonical!r}")
    values = {arm_key(arm["name"]): float(arm[field]) for arm in arms}
    # Within 1e-12 is a tie, as the env's best arms count it: 0.3 and 3.0 x 0.1 are one expected reward.
    if name not in values or math.isclose(max(values.values()), min(values.values()), rel_tol=0, abs_tol=1e-12):
        return None
    pick = max if level == "high" else min
    return math.isclose(values[name], pick(values.values()), rel_tol=0, abs_tol=1e-12)
