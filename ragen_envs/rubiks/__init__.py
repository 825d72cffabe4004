"""A 2x2 Rubik's cube: face turns back to solved, certified by an exhaustive optimal-distance table."""

from ragen_envs.rubiks.env import CubeLevel, RubiksConfig, RubiksEnv, generate

__all__ = ["CubeLevel", "RubiksConfig", "RubiksEnv", "generate"]
