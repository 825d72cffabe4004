"""Sokoban: seeded levels with certified optimal solutions, a solver, level files, and the env.

>>> from ragen_envs.sokoban import SokobanConfig, generate, solve
>>> level = generate(SokobanConfig(height=8, width=8, num_boxes=2), seed=7)
>>> solve(level).moves == level.certificate.moves
True
"""

from ragen_envs.sokoban.config import SokobanConfig
from ragen_envs.sokoban.env import SokobanEnv
from ragen_envs.sokoban.level import (
    ACTION_NAMES,
    GenerationError,
    SokobanCertificate,
    SokobanLevel,
    certificate,
    generate,
)
from ragen_envs.sokoban.level_files import LevelFileError, LevelSet, load_level_set, parse_level_file
from ragen_envs.sokoban.notation import format_boxoban, format_level, load_boxoban, parse_boxoban, parse_level
from ragen_envs.sokoban.solver import SolveResult, SolveStatus, solve

__all__ = ["ACTION_NAMES", "GenerationError", "LevelFileError", "LevelSet", "SokobanCertificate", "SokobanConfig",
           "SokobanEnv", "SokobanLevel", "SolveResult", "SolveStatus", "certificate", "format_boxoban", "format_level",
           "generate", "load_boxoban", "load_level_set", "parse_boxoban", "parse_level", "parse_level_file", "solve"]
