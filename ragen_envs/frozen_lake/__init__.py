"""FrozenLake: seeded random lakes with a guaranteed path, Gymnasium's slipping, and certified optima.

>>> from ragen_envs.frozen_lake import FrozenLakeConfig, generate, value_iteration
>>> level = generate(FrozenLakeConfig(height=4, width=4), seed=0)
>>> table = value_iteration(level, is_slippery=True, horizon=10)
"""

from ragen_envs.frozen_lake.config import FrozenLakeConfig
from ragen_envs.frozen_lake.env import FrozenLakeEnv
from ragen_envs.frozen_lake.level import FrozenLakeLevel, certificate, generate
from ragen_envs.frozen_lake.planning import (
    ValueTable,
    plan_turn,
    reach_probability,
    shortest_path,
    success_within,
    value_iteration,
)
from ragen_envs.frozen_lake.text import DEFAULT_SYMBOLS

__all__ = [
    "DEFAULT_SYMBOLS",
    "FrozenLakeConfig",
    "FrozenLakeEnv",
    "FrozenLakeLevel",
    "ValueTable",
    "certificate",
    "generate",
    "plan_turn",
    "reach_probability",
    "shortest_path",
    "success_within",
    "value_iteration",
]
