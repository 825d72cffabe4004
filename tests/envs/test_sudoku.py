"""Sudoku: every generated puzzle has exactly one solution (counted by a search written here), the
certificate plays it, and the rules of placement."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ragen_envs
from ragen_envs.sudoku import SudokuConfig
from ragen_envs.sudoku.grid import generate
from ragen_envs.text import TextEpisode


def box_of(size: int, r: int, c: int) -> int:
    side = {4: 2, 9: 3}[size]
    return (r // side) * side + c // side


def brute_count(puzzle: tuple[int, ...], size: int, limit: int = 2) -> int:
    """Solutions by plain backtracking in row-major order (no candidate ordering), stopped at ``limit``."""
    cells = list(puzzle)

    def fits(i: int, d: int) -> bool:
        r, c = divmod(i, size)
        return all(not (cells[j] == d and j != i and (j // size == r or j % size == c
                                                       or box_of(size, *divmod(j, size)) == box_of(size, r, c)))
                   for j in range(size * size))

    def search(i: int) -> int:
        while i < len(cells) and cells[i]:
            i += 1
        if i == len(cells):
            return 1
        total = 0
        for d in range(1, size + 1):
            if fits(i, d):
                cells[i] = d
                total += search(i + 1)
                cells[i] = 0
                if total >= limit:
                    break
        return total

    return search(0)


def valid_full(grid: tuple[int, ...], size: int) -> bool:
    rows = [grid[r * size:(r + 1) * size] for r in range(size)]
    cols = [grid[c::size] for c in range(size)]
    boxes = [[grid[i] for i in range(size * size) if box_of(size, *divmod(i, size)) == b] for b in range(size)]
    return all(sorted(unit) == list(range(1, size + 1)) for unit in rows + cols + boxes)


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), givens=st.integers(4, 12))
def test_every_4x4_puzzle_has_exactly_one_solution(seed, givens):
    puzzle, solution = generate(4, givens, np.random.default_rng(seed))
    assert sum(1 for d in puzzle if d) == givens
    assert valid_full(solution, 4) and all(d in (0, s) for d, s in zip(puzzle, solution))
    assert brute_count(puzzle, 4) == 1


@settings(max_examples=4, deadline=None)
@given(seed=st.integers(0, 2**31 - 1))
def test_every_9x9_puzzle_has_exactly_one_solution(seed):
    puzzle, solution = generate(9, 40, np.random.default_rng(seed))
    assert sum(1 for d in puzzle if d) == 40 and valid_full(solution, 9)
    assert brute_count(puzzle, 9) == 1


@pytest.mark.parametrize("preset", ["sudoku", "sudoku_9x9"])
def test_the_certificate_fills_the_grid_and_wins(preset):
    env = ragen_envs.make(preset)
    for seed in range(3):
        _, info = env.reset(seed=seed)
        cert = info["certificate"]
        assert cert["solutions"] == 1 and cert["optimal_steps"] == env.unwrapped.config.size ** 2 - cert["givens"]
        for action in cert["optimal_actions"]:
            _, reward, terminated, _, step = env.step(action)
            assert step["action_is_valid"]
        assert terminated and step["success"] and reward == 1.0


def test_a_given_cell_and_a_repeated_digit_are_invalid_and_change_nothing():
    env = ragen_envs.make("sudoku").unwrapped
    env.reset(seed=0)
    game = env
    given_cell = next(i for i, d in enumerate(game.level.puzzle) if d)
    before = game.state_dict()
    _, _, _, _, info = env.step(given_cell * 4 + game.level.puzzle[given_cell] % 4)  # another digit there
    assert not info["action_is_valid"] and game.state_dict() == before
    r, c = divmod(given_cell, 4)
    empty_in_row = next(r * 4 + k for k in range(4) if not game.level.puzzle[r * 4 + k])
    _, _, _, _, info = env.step(empty_in_row * 4 + game.level.puzzle[given_cell] - 1)  # the given's digit again
    assert not info["action_is_valid"] and game.state_dict() == before


def test_the_oracle_answers_in_the_protocol_and_wins():
    episode = TextEpisode("sudoku", 1)
    solution = episode.certificate["optimal_actions"]
    names = [episode.game.action_names[a] for a in solution]
    while not episode.done:
        chunk, names = names[:5], names[5:]
        episode.step(f"<think>t</think><answer>{' || '.join(n.upper() for n in chunk)}</answer>")
    assert episode.success and "rRcC=D" in episode.messages[1]["content"]


@pytest.mark.parametrize("bad", [{"size": 6}, {"size": 4, "givens": 16}, {"size": 9, "givens": 10}])
def test_bad_configs_are_one_clear_error(bad):
    with pytest.raises(ValueError, match="SudokuConfig"):
        SudokuConfig(**bad)


@pytest.mark.parametrize(("symbols", "named"), [({"empty": ""}, "non-empty string without spaces"),
                                                ({"empty": "a b"}, "non-empty string without spaces"),
                                                ({"empty": "5"}, "must not hold '5'"),
                                                ({"empty": "x9"}, "must not hold '9'"),
                                                ({"hole": "x"}, r"unknown sudoku symbol kind\(s\) \['hole'\]")])
def test_a_symbol_no_one_could_read_back_is_refused(symbols, named):
    """The shared symbol check of the games built on BaseGame: an empty symbol once drew a grid without its
    empty cells."""
    with pytest.raises(ValueError, match=named):
        TextEpisode("sudoku", 0, {"symbols": symbols})


def test_the_zero_set_draws_a_grid_that_reads_back():
    """"0" is no Sudoku value, so its empty cells stay apart from the digits: the grid reads back cell for cell."""
    env = ragen_envs.make("sudoku").unwrapped
    env.reset(seed=3)
    grid = env.observation_text("grid", symbols={"empty": "0"})
    assert [int(ch) for ch in grid if not ch.isspace()] == list(env.board) and 0 in env.board
