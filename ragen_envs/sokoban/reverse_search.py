"""Breadth-first search backwards from the solved room: exact distances for every state it reaches.

States are ``(boxes, player)``. The search starts from every solved state at once (boxes on the
targets, player on any free cell) and applies reversed moves: a walk, or a *pull* that drags the
box in front of the player one cell along as the player steps back. Every layer it completes holds
exactly the states whose fewest-moves solution has that many moves, so a start state picked from
the search comes with a certified optimal solution.

Player positions of one box layout are handled together as a bit mask: one walking step of all of
them is four shifts and an ``and``. Within a layer a state keeps the fewest pushes over its shortest
solutions, so the certificate is the fewest-pushes solution among the fewest-moves ones.
"""

from __future__ import annotations

from dataclasses import dataclass

from ragen_envs.deadline import check_deadline
from ragen_envs.sokoban.room import action_offsets

# One entry per (box layout, push count) settled in a layer: (moves, pushes, player mask).
Record = tuple[int, int, int]


@dataclass
class ReverseSearch:
    """The states settled by :func:`search_backwards`, by box layout."""

    width: int
    floor: int
    targets: int
    records: dict[int, list[Record]]  # box mask -> records
    depth: int  # moves of the deepest complete, non-empty layer
    exhausted: bool  # True if every state that can reach the goal was found
    states: int  # number of states settled

    def lookup(self, boxes: int, player: int) -> tuple[int, int] | None:
        """(moves, pushes) of the state, or None if the search did not settle it."""
        bit = 1 << player
        for moves, pushes, mask in self.records.get(boxes, ()):
            if mask & bit:
                return moves, pushes
        return None

    def solution_from(self, boxes: int, player: int) -> tuple[list[int], int]:
        """The certified solution of a settled state: (action ids, pushes)."""
        found = self.lookup(boxes, player)
        if found is None:
            raise ValueError("the state was not reached by the reverse search")
        moves, pushes = found
        floor, offsets = self.floor, action_offsets(self.width)
        actions = []
        while moves:
            for action, o in enumerate(offsets):
                step = player + o
                if not floor >> step & 1:
                    continue
                pushed = boxes >> step & 1
                if pushed:
                    dest = step + o
                    if not floor >> dest & 1 or boxes >> dest & 1:
                        continue
                    nxt_boxes = boxes ^ (1 << step) ^ (1 << dest)
                else:
                    nxt_boxes = boxes
                if self.lookup(nxt_boxes, step) == (moves - 1, pushes - pushed):
                    actions.append(action)
                    boxes, player, moves, pushes = nxt_boxes, step, moves - 1, pushes - pushed
                    break
            else:  # pragma: no cover - a broken search table, not a user error
                raise RuntimeError("reverse search table is inconsistent")
        return actions, found[1]


def search_backwards(width: int, floor: int, targets: int, max_states: int) -> ReverseSearch:
    """Search backwards from the solved states until ``max_states`` are settled or none are left.

    The budget is checked between layers, so every settled state carries its exact distance. No
    state is left unexpanded for its push count: the fastest way to a state may pass through one
    with more pushes than the state itself needs (a push cap gave a 12-move certificate to a level
    solved in 10).
    """
    offsets = action_offsets(width)
    start_players = floor & ~targets
    records: dict[int, list[Record]] = {targets: [(0, 0, start_players)]}
    visited = {targets: start_players}
    frontier = [(targets, 0, start_players)]
    states = start_players.bit_count()
    depth = 0
    while frontier and states < max_states:
        reached: dict[int, dict[int, int]] = {}
        for count, (boxes, pushes, players) in enumerate(frontier):
            if not count & 255:
                check_deadline()  # one layer of a large room can take minutes
            free = floor & ~boxes
            walked = ((players << 1) | (players >> 1) | (players << width) | (players >> width)) & free
            by_pushes = reached.get(boxes)
            if by_pushes is None:
                by_pushes = reached[boxes] = {}
            by_pushes[pushes] = by_pushes.get(pushes, 0) | walked
            for o in offsets:
                # Players with a box at p + o and room to step back to p - o.
                if o > 0:
                    pulling = players & (boxes >> o) & (free << o)
                else:
                    pulling = players & (boxes << -o) & (free >> -o)
                while pulling:
                    low = pulling & -pulling
                    pulling ^= low
                    if o > 0:
                        new_boxes, back = boxes ^ (low << o) ^ low, low >> o
                    else:
                        new_boxes, back = boxes ^ (low >> -o) ^ low, low << -o
                    by_pushes = reached.get(new_boxes)
                    if by_pushes is None:
                        by_pushes = reached[new_boxes] = {}
                    by_pushes[pushes + 1] = by_pushes.get(pushes + 1, 0) | back
        depth += 1
        frontier = []
        for boxes, by_pushes in reached.items():
            seen = visited.get(boxes, 0)
            for pushes in sorted(by_pushes):
                new = by_pushes[pushes] & ~seen
                if new:
                    seen |= new
                    frontier.append((boxes, pushes, new))
                    records.setdefault(boxes, []).append((depth, pushes, new))
                    states += new.bit_count()
            visited[boxes] = seen
    if not frontier:
        depth -= 1  # the last layer came out empty
    return ReverseSearch(width, floor, targets, records, depth, not frontier, states)
