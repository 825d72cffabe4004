"""Positions that can no longer be won: dead squares and frozen boxes.

A *dead square* is a floor cell from which no box can ever reach a target, whatever the other boxes
do (corners, and walls' edges without a target along them). A box is *frozen* when it can move along
neither axis, because of walls, dead squares or other frozen boxes; a frozen box off a target means
the level is lost. Both tests are sound (they never call a winnable position lost) but not complete.
"""

from __future__ import annotations


def push_distances(floor: int, targets: int, width: int) -> dict[int, int]:
    """Fewest pushes that bring a lone box from each live cell to some target (other boxes ignored).

    Cells missing from the result are dead squares. Computed by pulling a box backwards from every
    target: a box at ``x`` can have come from ``x - d`` if the player had room at ``x - 2d``.
    """
    dist = {}
    frontier = []
    m = targets
    while m:
        low = m & -m
        m ^= low
        i = low.bit_length() - 1
        dist[i] = 0
        frontier.append(i)
    steps = 0
    while frontier:
        steps += 1
        nxt = []
        for x in frontier:
            for o in (-width, width, -1, 1):
                prev, stand = x - o, x - 2 * o
                if prev not in dist and prev >= 0 and stand >= 0 and floor >> prev & 1 and floor >> stand & 1:
                    dist[prev] = steps
                    nxt.append(prev)
        frontier = nxt
    return dist


def dead_mask(floor: int, targets: int, width: int) -> int:
    """Mask of the dead squares of a room."""
    live = 0
    for i in push_distances(floor, targets, width):
        live |= 1 << i
    return floor & ~live


def has_frozen_box_off_target(boxes: int, floor: int, targets: int, dead: int, width: int) -> bool:
    """True when some box off a target can never move again (a freeze deadlock)."""
    m = boxes & ~targets
    while m:
        low = m & -m
        m ^= low
        if _frozen(low.bit_length() - 1, boxes, floor, dead, width, 0):
            return True
    return False


def is_deadlocked(boxes: int, floor: int, targets: int, dead: int, width: int) -> bool:
    """True when the position is certainly lost: a box on a dead square, or a frozen box off target."""
    if boxes & dead:
        return True
    return has_frozen_box_off_target(boxes, floor, targets, dead, width)


def _frozen(x: int, boxes: int, floor: int, dead: int, width: int, as_wall: int) -> bool:
    # ``as_wall``: boxes already under test, treated as walls so that mutual blocking terminates.
    as_wall |= 1 << x
    return (_blocked(x, 1, boxes, floor, dead, width, as_wall)
            and _blocked(x, width, boxes, floor, dead, width, as_wall))


def _blocked(x: int, o: int, boxes: int, floor: int, dead: int, width: int, as_wall: int) -> bool:
    a, b = x - o, x + o
    solid = ~floor | as_wall
    if solid >> a & 1 or solid >> b & 1:
        return True
    if dead >> a & 1 and dead >> b & 1:
        return True
    for side in (a, b):
        if boxes >> side & 1 and _frozen(side, boxes, floor, dead, width, as_wall):
            return True
    return False
