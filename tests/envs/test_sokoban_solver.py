"""The solver: optimal against an independent brute-force search; distinct unsolvable / limit results."""

from __future__ import annotations

from collections import deque

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from ragen_envs.sokoban import SokobanLevel, SolveStatus, generate, parse_level, solve

STEPS = ((-1, 0), (1, 0), (0, -1), (0, 1))


def brute_force_moves(level: SokobanLevel) -> int | None:
    """Fewest moves by plain breadth-first search over every (player, boxes) state, no pruning."""
    start = (level.player, frozenset(level.boxes))
    goal = frozenset(level.targets)
    seen = {start}
    queue = deque([(start, 0)])
    while queue:
        (player, boxes), dist = queue.popleft()
        if boxes == goal:
            return dist
        for dr, dc in STEPS:
            nxt = (player[0] + dr, player[1] + dc)
            if nxt in level.walls:
                continue
            new_boxes = boxes
            if nxt in boxes:
                dest = (nxt[0] + dr, nxt[1] + dc)
                if dest in level.walls or dest in boxes:
                    continue
                new_boxes = (boxes - {nxt}) | {dest}
            state = (nxt, new_boxes)
            if state not in seen:
                seen.add(state)
                queue.append((state, dist + 1))
    return None


@st.composite
def small_levels(draw):
    """Random enclosed rooms up to 6x6 with 1 or 2 boxes, solvable or not."""
    h, w = draw(st.integers(4, 6)), draw(st.integers(4, 6))
    inner = [(r, c) for r in range(1, h - 1) for c in range(1, w - 1)]
    inner_walls = draw(st.sets(st.sampled_from(inner), max_size=len(inner) // 3))
    free = [cell for cell in inner if cell not in inner_walls]
    n = draw(st.integers(1, 2))
    if len(free) < n + 1:
        n = len(free) - 1
    if n < 1:
        free, inner_walls, n = inner, set(), 1
    picks = draw(st.permutations(free))
    boxes, player = picks[:n], picks[n]
    targets = draw(st.permutations(free))[:n]
    border = {(r, c) for r in range(h) for c in range(w) if r in (0, h - 1) or c in (0, w - 1)}
    try:
        return SokobanLevel(h, w, frozenset(border | inner_walls), tuple(targets), tuple(boxes), player)
    except ValueError:  # inner walls cut a box or target off from the player
        assume(False)


@settings(max_examples=150, deadline=None)
@given(level=small_levels())
def test_solver_matches_brute_force(level):
    expected = brute_force_moves(level)
    result = solve(level)
    if expected is None:
        assert result.status is SolveStatus.UNSOLVABLE and result.solution is None
    else:
        assert result.status is SolveStatus.SOLVED and result.moves == expected
        cert = result.certificate
        assert cert is not None and cert.moves == expected


@pytest.mark.parametrize("seed", range(8))
def test_solver_matches_brute_force_on_generated_levels(seed):
    level = generate({"height": 7, "width": 7, "num_boxes": 2}, seed)
    assert solve(level).moves == brute_force_moves(level) == level.certificate.moves


def test_unsolvable_and_limit_are_distinct():
    corner = parse_level("#####\n#$  #\n#  .#\n# @ #\n#####")  # box in a corner: dead square
    assert solve(corner).status is SolveStatus.UNSOLVABLE
    # Two boxes side by side against a wall, no dead square involved: found by exhausting the search.
    stuck = parse_level("#######\n#     #\n# $$  #\n#  @  #\n#.  . #\n#######")
    stuck_expected = brute_force_moves(stuck)
    assert (solve(stuck).status is SolveStatus.SOLVED) == (stuck_expected is not None)
    blocked = parse_level("######\n#@#. #\n#$#  #\n#    #\n######")
    assert brute_force_moves(blocked) is None
    assert solve(blocked).status is SolveStatus.UNSOLVABLE
    level = generate({"height": 10, "width": 10, "num_boxes": 4}, 3)
    limited = solve(level, max_nodes=2)
    assert limited.status is SolveStatus.LIMIT and limited.solution is None and limited.nodes == 2
    assert solve(level).status is SolveStatus.SOLVED


def test_already_solved_level_and_bad_arguments():
    done = parse_level("#####\n#@* #\n#####")
    result = solve(done)
    assert result.solved and result.solution == () and result.pushes == 0
    with pytest.raises(TypeError, match="expects a SokobanLevel"):
        solve("#####\n#@$.#\n#####")
    with pytest.raises(ValueError, match="max_nodes must be a positive int"):
        solve(done, max_nodes=0)
