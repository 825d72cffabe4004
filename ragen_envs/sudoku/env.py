"""Sudoku as a text game: fill the grid one placement at a time; every puzzle has exactly one solution."""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from gymnasium import spaces

from ragen_envs.base_game import BaseGame, Move
from ragen_envs.certificate import Certificate
from ragen_envs.config_dicts import require_ints
from ragen_envs.rendering import TileStyle
from ragen_envs.sudoku import grid
from ragen_envs.text_game import grid_lines, text_budget

#: How the prompt describes the placements (a 9x9 grid has 729, too many to list).
ACTIONS_TEXT = "rRcC=D writes digit D into row R, column C (each from 1 to {size}), e.g. r1c2={size}"


@dataclass(frozen=True)
class SudokuConfig:
    """A ``size`` x ``size`` Sudoku with ``givens`` digits filled in; fewer givens is harder."""

    size: int = 4
    """Side of the grid: 4 (2x2 boxes) or 9 (3x3 boxes)."""
    givens: int = 6
    """Digits filled in at the start (4 to 15 for size 4, 25 to 80 for size 9: puzzles stay quick to make)."""

    def __post_init__(self) -> None:
        require_ints(self, ("size", "givens"))
        low = {4: 4, 9: 25}.get(self.size)
        if low is None:
            raise ValueError(f"SudokuConfig.size must be 4 or 9, got {self.size}")
        if not low <= self.givens < self.size * self.size:
            raise ValueError(f"SudokuConfig.givens must lie in {low}..{self.size ** 2 - 1} for size {self.size}, "
                             f"got {self.givens}")


@dataclass(frozen=True)
class SudokuLevel:
    """The puzzle (0 for an empty cell) and its one solution, row-major."""

    puzzle: grid.Grid
    solution: grid.Grid


class SudokuEnv(BaseGame):
    """Place digits until the grid is full with no repeat in any row, column or box; that pays 1.

    Action ``(r * size + c) * size + d - 1`` writes digit ``d`` into row ``r``, column ``c`` (named
    ``r{r+1}c{c+1}={d}``). A given cell or a digit already in the cell's row, column or box is an
    invalid action and changes nothing; a digit you placed may be overwritten. Observation: the grid
    (0 empty). The certificate holds the solution, checked to be the only one, and its placements.
    """

    metadata = {"render_modes": ["ansi", "rgb_array"], "render_fps": 4}
    name, config_class = "sudoku", SudokuConfig
    symbol_sets = {"default": {"empty": "."}, "zero": {"empty": "0"}}
    reserved_symbol_chars = "123456789"
    rules = ("Sudoku: fill the {size}x{size} grid so that every row, every column and every box holds each digit "
             "from 1 to {size} once. {givens} digits are given; the puzzle has exactly one solution.\n"
             "Each action writes one digit into one cell: r2c3=4 writes 4 in row 2, column 3. Writing into a "
             "given cell, or a digit already in the cell's row, column or box, is invalid and changes nothing; "
             "a digit you wrote may be overwritten.\n"
             "Filling the last empty cell ends the game with reward 1.")
    legend = ("One line per row, top to bottom; a space between boxes. {empty} is an empty cell. Rows and columns "
              "are numbered from 1 in actions, whatever the count elsewhere.")
    tile_styles = (TileStyle((250, 250, 250)), TileStyle((200, 200, 200), "square", (60, 60, 60)),
                   TileStyle((250, 250, 250), "circle", (40, 90, 200)))

    def setup(self) -> None:
        n = self.config.size
        self.action_names = tuple(f"r{r + 1}c{c + 1}={d}" for r in range(n) for c in range(n) for d in range(1, n + 1))
        self.aliases = {f"r{r + 1}c{c + 1}{sep}{d}": (r * n + c) * n + d - 1 for r in range(n) for c in range(n)
                        for d in range(1, n + 1) for sep in (" = ", " ", ": ")}
        self.observation_space = spaces.Box(0, n, (n, n), np.int8)
        blanks = n * n - self.config.givens
        self.text_defaults = text_budget(blanks + blanks // 2)  # half as many again for slips
        self._peers = grid.peers(n)

    def actions_text(self) -> str:
        """The placements described, not listed (a 9x9 grid has 729)."""
        return ACTIONS_TEXT.format(size=self.config.size)

    def new_level(self, seed: int) -> SudokuLevel:
        return SudokuLevel(*grid.generate(self.config.size, self.config.givens, np.random.default_rng(seed)))

    def certify(self, level: SudokuLevel) -> Certificate:
        solutions = grid.count_solutions(level.puzzle, self.config.size)
        path = self.plan()
        return Certificate(len(path), tuple(path), 1.0, {"solution": self._rows(level.solution, "."),
                                                         "solutions": solutions, "givens": self.config.givens})

    def start(self, level: SudokuLevel) -> None:
        self.board = list(level.puzzle)

    def move(self, action: int) -> Move:
        n = self.config.size
        cell, digit = action // n, action % n + 1
        if self.level.puzzle[cell] or any(self.board[p] == digit for p in self._peers[cell]):
            return Move(valid=False, effective=False)
        before, self.board[cell] = self.board[cell], digit
        full = 0 not in self.board
        return Move(float(full), success=full, effective=before != digit)

    def observe(self) -> np.ndarray:
        return np.array(self.board, np.int8).reshape(self.config.size, self.config.size)

    def _rows(self, cells: list[int] | tuple[int, ...], empty: str) -> list[str]:
        n, box = self.config.size, math.isqrt(self.config.size)
        text = [str(d) if d else empty for d in cells]
        return [" ".join("".join(text[r * n + c:r * n + c + box]) for c in range(0, n, box)) for r in range(n)]

    def views(self, symbols: dict[str, str], base: int) -> dict[str, str]:
        n = self.config.size
        empty = ", ".join(f"r{i // n + 1}c{i % n + 1}" for i, d in enumerate(self.board) if not d)
        return {"grid": "\n".join(self._rows(self.board, symbols["empty"])), "coords": f"empty cells: {empty or 'none'}"}

    def state(self) -> dict[str, Any]:
        return {"size": self.config.size, "rows": self._rows(self.board, "."),
                "givens": [i for i, d in enumerate(self.level.puzzle) if d]}

    def plan(self) -> list[int]:
        """The solution's digit for every cell that lacks it, in row-major order (optimal from any state the
        plan itself reaches: each placement is then legal)."""
        n = self.config.size
        return [i * n + d - 1 for i, (d, now) in enumerate(zip(self.level.solution, self.board)) if d != now]

    def tiles(self) -> np.ndarray:
        codes = [0 if not d else 1 if self.level.puzzle[i] else 2 for i, d in enumerate(self.board)]
        return np.array(codes, np.int64).reshape(self.config.size, self.config.size)

    @classmethod
    def from_text(cls, action_names: Sequence[str], observation: str, intro: str) -> SudokuEnv | None:
        """The grid a chat shows, rebuilt as a puzzle whose givens are every digit shown (solved again, as the
        text cannot tell givens from placed digits) to plan on, or None when the actions the chat lists are
        not Sudoku's. Reads the grid in the default symbols; ValueError when it is not a puzzle with one
        solution."""
        size = next((n for n in (4, 9) if ", ".join(action_names) == ACTIONS_TEXT.format(size=n)), None)
        if size is None:
            return None
        empty = next(iter(cls.symbol_sets.values()))["empty"]
        rows = grid_lines(observation, set("123456789 " + empty))
        cells = tuple(0 if ch == empty else int(ch) for ch in "".join(rows).replace(" ", ""))
        if len(cells) != size * size or max(cells) > size:
            raise ValueError(f"the state is not a {size}x{size} Sudoku grid")
        if 0 not in cells:
            raise ValueError("the grid shown is full: the game is over")
        config = SudokuConfig(size, size * size - cells.count(0))  # as many givens as a puzzle has: a quick search
        found = list(itertools.islice(grid.solutions(cells, size), 2))
        if len(found) != 1:
            raise ValueError(f"the grid shown has {'no' if not found else 'more than one'} solution, not one")
        env = cls(config=config)
        env.reset(options={"level": SudokuLevel(cells, found[0])})
        return env
