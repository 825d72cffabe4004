"""Optimal play on a known lake: shortest paths, value iteration under slipping, and one turn's plan.

The dynamics are Gymnasium's: an intended move succeeds with probability ``success_rate`` and
otherwise turns 90 degrees left or right with equal probability; holes and the goal end the game.
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:  # the level module builds its certificate from this one, so no import back at run time
    from ragen_envs.frozen_lake.level import FrozenLakeLevel

#: Moves of the four actions in Gymnasium's order: 0 Left, 1 Down, 2 Right, 3 Up, as (d_row, d_col).
MOVES: tuple[tuple[int, int], ...] = ((0, -1), (1, 0), (0, 1), (-1, 0))


def neighbour_table(height: int, width: int) -> np.ndarray:
    """``table[cell, action]``: the flat index a move reaches when it does not slip (the border keeps you in place)."""
    rows, cols = np.divmod(np.arange(height * width), width)
    moves = np.array(MOVES)
    next_rows = np.minimum(np.maximum(rows[:, None] + moves[:, 0], 0), height - 1)
    next_cols = np.minimum(np.maximum(cols[:, None] + moves[:, 1], 0), width - 1)
    return next_rows * width + next_cols


def shortest_path(level: FrozenLakeLevel) -> list[int] | None:
    """Actions of a shortest hole-free path from start to goal when nothing slips, or None if there is none."""
    return path_on_cells("".join(level.rows), neighbour_table(level.height, level.width).tolist())


def path_on_cells(cells: str, table: list[list[int]]) -> list[int] | None:
    """:func:`shortest_path` on the map as one string of ``S F H G`` and its :func:`neighbour_table` as lists."""
    start = cells.index("S")
    goal = cells.index("G")
    came_from: dict[int, tuple[int, int]] = {start: (-1, -1)}
    queue = deque([start])
    while queue:
        cell = queue.popleft()
        if cell == goal:
            actions = []
            while cell != start:
                cell, action = came_from[cell]
                actions.append(action)
            return actions[::-1]
        for action, nxt in enumerate(table[cell]):
            if nxt not in came_from and cells[nxt] != "H":
                came_from[nxt] = (cell, action)
                queue.append(nxt)
    return None


@dataclass(frozen=True)
class ValueTable:
    """Optimal success probabilities and actions for every cell and number of steps left.

    ``success_prob[t, r, c]`` is the highest probability of reaching the goal from (r, c) within
    ``t`` more steps; ``policy[t, r, c]`` is an action achieving it, the one that gets there soonest
    among equals (``-1`` where no action matters: ``t == 0``, holes and the goal).
    """

    success_prob: np.ndarray
    policy: np.ndarray

    def action(self, position: tuple[int, int], steps_left: int) -> int:
        """The optimal action at ``position`` with ``steps_left`` steps to go (capped at the table's horizon)."""
        t = min(max(steps_left, 0), self.policy.shape[0] - 1)
        return int(self.policy[t, position[0], position[1]])


@dataclass(frozen=True)
class _LakeModel:
    """The lake as arrays: where each action can lead, with what probability, and which cells end the game."""

    table: np.ndarray  # (n, 4): the cell each action reaches when it does not slip
    successors: np.ndarray  # (n, 4, k): the k cells each action can reach
    probs: np.ndarray  # (k,): their probabilities, in Gymnasium's order (turn left, intended, turn right)
    kinds: np.ndarray  # (n,): 0 frozen, 1 hole, 2 goal
    playable: np.ndarray  # indices of frozen cells, the only ones where an action matters


def _model(level: FrozenLakeLevel, is_slippery: bool, success_rate: float) -> _LakeModel:
    if not 0.0 < success_rate <= 1.0:
        raise ValueError(f"success_rate must lie in (0, 1], got {success_rate!r}")
    table = neighbour_table(level.height, level.width)
    if is_slippery:
        actions = np.arange(4)
        outcomes = np.stack([(actions - 1) % 4, actions, (actions + 1) % 4], axis=1)  # (4, 3)
        fail = (1.0 - success_rate) / 2.0
        successors, probs = table[:, outcomes], np.array([fail, success_rate, fail])
    else:
        successors, probs = table[:, :, None], np.array([1.0])
    letters = np.frombuffer("".join(level.rows).encode("ascii"), dtype=np.uint8)
    kinds = (letters == ord("H")) + 2 * (letters == ord("G"))
    return _LakeModel(table, successors, probs, kinds, np.flatnonzero(kinds == 0))


#: Discount of the tie-break between equally good actions (prefer the faster one).
_TIE_DISCOUNT = 0.9


def value_iteration(
    level: FrozenLakeLevel,
    *,
    is_slippery: bool = True,
    success_rate: float = 1.0 / 3.0,
    horizon: int = 10,
) -> ValueTable:
    """Finite-horizon value iteration: the best chance of reaching the goal within t steps, for t = 0..horizon."""
    if isinstance(horizon, bool) or not isinstance(horizon, (int, np.integer)) or horizon < 0:
        raise ValueError(f"horizon must be a non-negative int, got {horizon!r}")
    model = _model(level, is_slippery, success_rate)
    playable = model.playable
    successors = model.successors[playable]
    success_prob = np.zeros((horizon + 1, model.kinds.size))
    policy = np.full((horizon + 1, model.kinds.size), -1, dtype=np.int8)
    values = (model.kinds == 2).astype(float)
    # Ties are common (standing still is as good as walking when time is ample), so among the best
    # actions prefer the one that reaches the goal soonest: the highest discounted success chance.
    soon = values.copy()
    success_prob[0] = values
    for t in range(1, horizon + 1):
        q = values[successors] @ model.probs
        best = q.max(axis=1)
        q_soon = soon[successors] @ model.probs
        q_soon[q < best[:, None] - 1e-12] = -1.0  # below any real value: rules out the worse actions
        policy[t, playable] = q_soon.argmax(axis=1)
        values = values.copy()
        values[playable] = best
        soon = soon.copy()
        soon[playable] = _TIE_DISCOUNT * q_soon.max(axis=1)
        success_prob[t] = values
    shape = (horizon + 1, level.height, level.width)
    return ValueTable(success_prob=success_prob.reshape(shape), policy=policy.reshape(shape))


def plan_turn(
    level: FrozenLakeLevel,
    position: tuple[int, int],
    *,
    is_slippery: bool,
    success_rate: float,
    turn_actions: int,
    actions_left: int,
    turns_left: int,
) -> list[int]:
    """The actions an optimal player sends in one turn of the text protocol, standing at ``position``.

    The moves of one answer run blind, so the plan is made up front. Without slipping it is the
    first ``turn_actions`` moves of a shortest path from ``position``. With slipping it follows the
    finite-horizon optimal policy over the ``actions_left`` steps that remain, using an even share
    of them (``ceil(actions_left / turns_left)``, at most ``turn_actions``) so that later turns can
    re-plan from where the player really lands; each move after the first is planned, with one step
    fewer to go, from the cell the previous one aims at (the likeliest outcome), and the plan stops
    once that cell is a hole or the goal. Budgets below 1 count as 1. The plan is never empty:
    ``[0]`` (Left) when no move helps.
    """
    row, col = position
    if not (0 <= row < level.height and 0 <= col < level.width):
        raise ValueError(f"position {position!r} lies outside the {level.height}x{level.width} lake")
    per_turn = max(turn_actions, 1)
    if not is_slippery:
        cells = list("".join(level.rows).replace("S", "F"))
        if cells[row * level.width + col] != "F":
            return [0]  # on a hole or the goal the game is over; nothing to plan
        cells[row * level.width + col] = "S"
        path = path_on_cells("".join(cells), neighbour_table(level.height, level.width).tolist())
        return (path or [0])[:per_turn]
    horizon = max(actions_left, 1)
    table = value_iteration(level, is_slippery=True, success_rate=success_rate, horizon=horizon)
    share = min(per_turn, max(1, math.ceil(actions_left / max(turns_left, 1))))
    plan: list[int] = []
    for step in range(share):
        action = table.action(position, horizon - step)
        if action < 0:  # a hole or the goal: the policy has no move there
            break
        plan.append(action)
        d_row, d_col = MOVES[action]
        position = (min(max(position[0] + d_row, 0), level.height - 1),
                    min(max(position[1] + d_col, 0), level.width - 1))
    return plan or [0]


def _success_within(model: _LakeModel, horizon: int) -> np.ndarray:
    """The values of :func:`value_iteration` at ``horizon`` alone: all a certificate needs, far cheaper."""
    successors = model.successors[model.playable]
    values = (model.kinds == 2).astype(float)
    for _ in range(horizon):
        values[model.playable] = (values[successors] @ model.probs).max(axis=1)
    return values


def success_within(
    level: FrozenLakeLevel, *, is_slippery: bool = True, success_rate: float = 1.0 / 3.0, horizon: int = 10
) -> np.ndarray:
    """The best chance of reaching the goal within ``horizon`` steps from each cell, as an (H, W) array:
    :func:`value_iteration`'s last values alone, far cheaper."""
    model = _model(level, is_slippery, success_rate)
    return _success_within(model, horizon).reshape(level.height, level.width)


def _steps_to_goal(model: _LakeModel) -> np.ndarray:
    """Moves to the goal along a hole-free path for every cell (``-1`` where there is none)."""
    n = model.kinds.size
    predecessors: list[list[int]] = [[] for _ in range(n)]
    for cell in model.playable.tolist():
        for nxt in model.table[cell].tolist():
            predecessors[nxt].append(cell)
    distance = [-1] * n
    goal = int(np.flatnonzero(model.kinds == 2)[0])
    distance[goal] = 0
    frontier = [goal]
    while frontier:
        following = []
        for cell in frontier:
            for prev in predecessors[cell]:
                if distance[prev] < 0:
                    distance[prev] = distance[cell] + 1
                    following.append(prev)
        frontier = following
    return np.array(distance)


def _reach_probability(model: _LakeModel, max_iterations: int) -> np.ndarray:
    distance = _steps_to_goal(model)
    values = (model.kinds == 2).astype(float)
    transient = np.flatnonzero(distance > 0)  # frozen cells with a path; every other cell's value is settled
    m = transient.size
    if m == 0:
        return values
    goal = int(np.flatnonzero(model.kinds == 2)[0])
    # Start with an action that shortens the path; some action always does.
    policy = np.argmax(distance[model.table[transient]] == (distance[transient] - 1)[:, None], axis=1)
    index = np.full(values.size, -1)
    index[transient] = np.arange(m)
    successors = model.successors[transient]
    k = model.probs.size
    rows = np.repeat(np.arange(m), k)
    weights = np.tile(model.probs, m)
    for _ in range(max_iterations):
        outcomes = successors[np.arange(m), policy]  # (m, k)
        cols = index[outcomes].ravel()
        inside = cols >= 0
        # I - P over the transient cells; bincount sums the probabilities of outcomes that coincide.
        matrix = np.eye(m) - np.bincount(
            rows[inside] * m + cols[inside], weights=weights[inside], minlength=m * m
        ).reshape(m, m)
        values[transient] = np.linalg.solve(matrix, (outcomes == goal) @ model.probs)
        q = values[successors] @ model.probs  # (m, 4)
        better = q.max(axis=1) > q[np.arange(m), policy] + 1e-12
        if not better.any():
            return np.clip(values, 0.0, 1.0)  # the solve can overshoot 1 by rounding
        policy = np.where(better, q.argmax(axis=1), policy)
    raise RuntimeError(f"policy iteration did not settle within {max_iterations} rounds")


def reach_probability(
    level: FrozenLakeLevel,
    *,
    is_slippery: bool = True,
    success_rate: float = 1.0 / 3.0,
    max_iterations: int = 1_000,
) -> np.ndarray:
    """The best chance of ever reaching the goal from each cell, with no step limit, as an (H, W) array.

    Policy iteration with exact linear solves. It starts from the policy that walks a shortest
    path, which reaches the goal with positive probability from every cell that has a path, so each
    linear system is regular; switching an action only on strict improvement keeps it so.
    """
    model = _model(level, is_slippery, success_rate)
    return _reach_probability(model, max_iterations).reshape(level.height, level.width)
