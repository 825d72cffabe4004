"""Sudoku grids: a solution counter and the seeded generator of puzzles with exactly one solution.

A grid is a tuple of ``size * size`` digits in row-major order, 0 for an empty cell; ``size`` is 4
(2x2 boxes) or 9 (3x3 boxes).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterator

import numpy as np

from ragen_envs.deadline import check_deadline

Grid = tuple[int, ...]


def units(size: int) -> list[list[int]]:
    """The rows, columns and boxes as lists of cell indices."""
    box = math.isqrt(size)
    rows = [[r * size + c for c in range(size)] for r in range(size)]
    cols = [[r * size + c for r in range(size)] for c in range(size)]
    boxes = [[(br + r) * size + bc + c for r in range(box) for c in range(box)]
             for br in range(0, size, box) for bc in range(0, size, box)]
    return rows + cols + boxes


def peers(size: int) -> list[set[int]]:
    """For each cell, the other cells of its row, column and box."""
    found: list[set[int]] = [set() for _ in range(size * size)]
    for unit in units(size):
        for cell in unit:
            found[cell].update(unit)
    return [cells - {i} for i, cells in enumerate(found)]


def solutions(grid: Grid, size: int) -> Iterator[Grid]:
    """Every way to fill the empty cells so that no row, column or box repeats a digit, found lazily by a
    depth-first search on the cell with the fewest candidates."""
    near = peers(size)
    cells = list(grid)
    if any(d and any(cells[p] == d for p in near[i]) for i, d in enumerate(cells)):
        return

    def search() -> Iterator[Grid]:
        best, options = -1, None
        for i, d in enumerate(cells):
            if d == 0:
                free = set(range(1, size + 1)) - {cells[p] for p in near[i]}
                if options is None or len(free) < len(options):
                    best, options = i, free
                    if len(free) <= 1:
                        break
        if options is None:
            yield tuple(cells)
            return
        for digit in sorted(options):
            cells[best] = digit
            yield from search()
        cells[best] = 0

    yield from search()


def count_solutions(grid: Grid, size: int, limit: int = 2) -> int:
    """How many :func:`solutions` ``grid`` has, counting no further than ``limit``."""
    return sum(1 for _ in itertools.islice(solutions(grid, size), limit))


def solved_grid(size: int, rng: np.random.Generator) -> Grid:
    """A random full grid: the pattern ``(box * r + r // box + c) mod size`` with its digits, its rows within bands,
    its bands, its columns within stacks and its stacks shuffled (each shuffle keeps a grid valid)."""
    box = math.isqrt(size)
    rows = [band * box + r for band in rng.permutation(box) for r in rng.permutation(box)]
    cols = [stack * box + c for stack in rng.permutation(box) for c in rng.permutation(box)]
    digits = rng.permutation(size) + 1
    return tuple(int(digits[(box * (r % box) + r // box + c) % size]) for r in rows for c in cols)


def generate(size: int, givens: int, rng: np.random.Generator) -> tuple[Grid, Grid]:
    """A puzzle with exactly ``givens`` filled cells and one solution, and that solution: cells are emptied in
    random order while the solution stays unique; a grid that cannot get down to ``givens`` is redrawn."""
    while True:  # the config's checks keep this short; a server's time_limit still bounds it
        check_deadline()
        solution = solved_grid(size, rng)
        puzzle = list(solution)
        filled = size * size
        for cell in rng.permutation(size * size):
            if filled == givens:
                break
            puzzle[cell] = 0
            if count_solutions(tuple(puzzle), size) == 1:
                filled -= 1
            else:
                puzzle[cell] = solution[cell]
        if filled == givens:
            return tuple(puzzle), solution
