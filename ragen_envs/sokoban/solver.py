"""A fewest-moves solver for any level: A* over (boxes, player) states with dead-square pruning.

The heuristic is the sum, over boxes, of the fewest pushes that bring that box alone to its nearest
target. Every push changes it by at least -1 and costs one move, so it is consistent and the first
solved state taken off the queue has the fewest moves. Pushing a box onto a dead square is never
tried, which removes most hopeless branches without losing any solution.
"""

from __future__ import annotations

import enum
import heapq
from dataclasses import dataclass

from ragen_envs.deadline import check_deadline
from ragen_envs.sokoban.deadlocks import push_distances
from ragen_envs.sokoban.level import Board, SokobanCertificate, SokobanLevel
from ragen_envs.sokoban.room import action_offsets

#: Names what :func:`solve` certifies; certificate caches record it and are re-solved under another
#: value, so a change that could make a different optimum (or fix a wrong one) bumps it.
SOLVER_VERSION = "astar-fewest-moves-1"


class SolveStatus(str, enum.Enum):
    """How a search ended."""

    SOLVED = "solved"
    UNSOLVABLE = "unsolvable"  # the whole state space was searched: no solution exists
    LIMIT = "limit"  # gave up at the node limit: unknown


@dataclass(frozen=True)
class SolveResult:
    """Outcome of :func:`solve`; ``solution`` is a fewest-moves list of action ids when solved."""

    status: SolveStatus
    solution: tuple[int, ...] | None
    pushes: int | None
    nodes: int  # states expanded

    @property
    def solved(self) -> bool:
        """True when a solution was found."""
        return self.status is SolveStatus.SOLVED

    @property
    def moves(self) -> int | None:
        """Length of the solution, if any."""
        return None if self.solution is None else len(self.solution)

    @property
    def certificate(self) -> SokobanCertificate | None:
        """The solution as a :class:`~ragen_envs.sokoban.level.SokobanCertificate`, if any."""
        return None if self.solution is None else SokobanCertificate(self.solution, self.pushes or 0)


def solve(level: SokobanLevel, max_nodes: int = 1_000_000) -> SolveResult:
    """Find a fewest-moves solution of ``level``, expanding at most ``max_nodes`` states."""
    if not isinstance(level, SokobanLevel):
        raise TypeError(f"solve expects a SokobanLevel (see parse_level), got {type(level).__name__}")
    if isinstance(max_nodes, bool) or not isinstance(max_nodes, int) or max_nodes < 1:
        raise ValueError(f"max_nodes must be a positive int, got {max_nodes!r}")
    check_deadline()  # also between the many small solves of a level file
    board = Board.of(level)
    floor, targets, w = board.floor, board.targets, board.width
    if board.boxes == targets:
        return SolveResult(SolveStatus.SOLVED, (), 0, 0)
    to_target = push_distances(floor, targets, w)
    live = 0
    for cell in to_target:
        live |= 1 << cell
    if board.boxes & ~live:
        return SolveResult(SolveStatus.UNSOLVABLE, None, None, 0)

    def heuristic(boxes: int) -> int:
        total = 0
        while boxes:
            low = boxes & -boxes
            boxes ^= low
            total += to_target[low.bit_length() - 1]
        return total

    offsets = action_offsets(w)
    cells = level.height * w
    start = board.boxes * cells + board.player
    best = {start: 0}
    parent: dict[int, tuple[int, int, int]] = {}  # state -> (previous state, action, pushed)
    queue = [(heuristic(board.boxes), 0, start, board.boxes)]
    expanded = 0
    while queue:
        _, neg_g, state, boxes = heapq.heappop(queue)
        g = -neg_g
        if g > best[state]:
            continue
        if boxes == targets:
            return _result(state, parent, expanded)
        expanded += 1
        if expanded > max_nodes:
            return SolveResult(SolveStatus.LIMIT, None, None, expanded - 1)
        if not expanded & 1023:
            check_deadline()
        player = state - boxes * cells
        h_here = None
        for action, o in enumerate(offsets):
            step = player + o
            if not floor >> step & 1:
                continue
            if boxes >> step & 1:
                dest = step + o
                if not live >> dest & 1 or boxes >> dest & 1:
                    continue
                new_boxes = boxes ^ (1 << step) ^ (1 << dest)
                h = heuristic(new_boxes)
                pushed = 1
            else:
                new_boxes = boxes
                if h_here is None:
                    h_here = heuristic(boxes)
                h = h_here
                pushed = 0
            nxt = new_boxes * cells + step
            if g + 1 < best.get(nxt, 1 << 62):
                best[nxt] = g + 1
                parent[nxt] = (state, action, pushed)
                heapq.heappush(queue, (g + 1 + h, -(g + 1), nxt, new_boxes))
    return SolveResult(SolveStatus.UNSOLVABLE, None, None, expanded)


def _result(state: int, parent: dict[int, tuple[int, int, int]], expanded: int) -> SolveResult:
    actions, pushes = [], 0
    while state in parent:
        state, action, pushed = parent[state]
        actions.append(action)
        pushes += pushed
    actions.reverse()
    return SolveResult(SolveStatus.SOLVED, tuple(actions), pushes, expanded)
