"""The reverse search's table against an independent forward search, state by state."""

from __future__ import annotations

import heapq
import itertools

from ragen_envs.sokoban import parse_level
from ragen_envs.sokoban.level import Board
from ragen_envs.sokoban.reverse_search import search_backwards

ROOM = """######
#  $.#
# #  #
#@ $.#
######"""
STEPS = ((-1, 0), (1, 0), (0, -1), (0, 1))


def forward_cost(walls, targets, player, boxes):
    """(fewest moves, fewest pushes among those) to solve, by Dijkstra on (moves, pushes); None if unsolvable."""
    start = (player, frozenset(boxes))
    best = {start: (0, 0)}
    queue = [(0, 0, 0, start)]
    tie = itertools.count(1)
    while queue:
        moves, pushes, _, state = heapq.heappop(queue)
        if best[state] < (moves, pushes):
            continue
        player, boxes = state
        if boxes == targets:
            return moves, pushes
        for dr, dc in STEPS:
            nxt = (player[0] + dr, player[1] + dc)
            if nxt in walls:
                continue
            new_boxes, pushed = boxes, 0
            if nxt in boxes:
                dest = (nxt[0] + dr, nxt[1] + dc)
                if dest in walls or dest in boxes:
                    continue
                new_boxes, pushed = (boxes - {nxt}) | {dest}, 1
            cost = (moves + 1, pushes + pushed)
            key = (nxt, new_boxes)
            if cost < best.get(key, (1 << 30, 0)):
                best[key] = cost
                heapq.heappush(queue, (*cost, next(tie), key))
    return None


def test_every_state_distance_is_exact_when_the_search_is_exhaustive():
    level = parse_level(ROOM)
    board = Board.of(level)
    w = level.width
    search = search_backwards(w, board.floor, board.targets, max_states=10**7)
    assert search.exhausted
    floor_cells = [divmod(i, w) for i in range(level.height * w) if board.floor >> i & 1]
    targets = frozenset(level.targets)
    checked = solvable = 0
    for boxes in itertools.combinations(floor_cells, 2):
        mask = sum(1 << (r * w + c) for r, c in boxes)
        for player in floor_cells:
            if player in boxes:
                continue
            expected = forward_cost(level.walls, targets, player, boxes)
            found = search.lookup(mask, player[0] * w + player[1])
            assert found == expected, (boxes, player)
            checked += 1
            solvable += expected is not None
            if expected is not None:
                actions, pushes = search.solution_from(mask, player[0] * w + player[1])
                assert (len(actions), pushes) == expected
    assert checked == 55 * 9 and 0 < solvable < checked
    assert search.states == solvable  # solved states included


def test_budget_stops_at_a_complete_layer():
    level = parse_level("########\n#      #\n# $  $ #\n#  ..  #\n#   @  #\n########")
    board = Board.of(level)
    full = search_backwards(level.width, board.floor, board.targets, 10**7)
    cut = search_backwards(level.width, board.floor, board.targets, 300)
    assert not cut.exhausted and cut.states >= 300 and cut.depth < full.depth
    for boxes, records in cut.records.items():
        for moves, pushes, players in records:
            assert moves <= cut.depth
            bit = players & -players
            assert full.lookup(boxes, bit.bit_length() - 1) == (moves, pushes)
