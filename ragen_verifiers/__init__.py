"""The ragen games as a verifiers environment: ``pip install "ragen-envs[verifiers]"``.

verifiers imports a taskset by its package name, so this is a package of its own, which neither
``ragen_envs`` nor ``ragen_eval`` imports::

    vf-eval ragen_verifiers --env.taskset.env sokoban -n 64 -m MODEL --client.base-url URL --no-push

or, in Python, ``load_environment("sokoban")``. See :mod:`ragen_verifiers.taskset` and
docs/integrations.md.
"""

from ragen_verifiers.taskset import (
    GameEnv,
    GameEnvConfig,
    GameTask,
    GameTaskData,
    GameTaskset,
    GameTasksetConfig,
    load_environment,
)

__all__ = [
    "GameEnv",
    "GameEnvConfig",
    "GameTask",
    "GameTaskData",
    "GameTaskset",
    "GameTasksetConfig",
    "load_environment",
]
