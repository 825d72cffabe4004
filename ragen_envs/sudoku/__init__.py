"""Sudoku on 4x4 and 9x9 grids (RAGEN's): placements until full; every puzzle has exactly one solution."""

from ragen_envs.sudoku.env import SudokuConfig, SudokuEnv, SudokuLevel

__all__ = ["SudokuConfig", "SudokuEnv", "SudokuLevel"]
