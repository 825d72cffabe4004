"""The games as an OpenEnv environment server (``pip install "ragen-envs[openenv]"``).

    python -m ragen_envs.openenv_server --env sokoban --port 8000

Every registered preset and served level file through OpenEnv's own server machinery (``create_app``):
OpenEnv's clients (``GenericEnvClient``, ``EnvClient`` and the trainers built on them) play it over
``/ws``. See docs/integrations.md. Never imported by the base package.
"""

from ragen_envs.openenv_server.app import build_app, server_metadata
from ragen_envs.openenv_server.environment import GameAction, GameObservation, GameState, ServerSettings, \
    TextGameEnvironment

__all__ = ["GameAction", "GameObservation", "GameState", "ServerSettings", "TextGameEnvironment", "build_app",
           "server_metadata"]
