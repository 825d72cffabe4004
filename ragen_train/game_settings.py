"""Check a game name, its config overrides and the protocol overrides before anything runs.

``ragen-train`` and ``ragen-train sft`` take the game as a name and its config as a dict of fields
(the class they fill depends on the game); a typo in either (``env=sokobann``,
``env_config.heigth=6``), or a protocol the game cannot play, must stop the command at once with one
line naming the problem, not after a model is built and a run directory written.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ragen_envs.config_dicts import coerce_config
from ragen_envs.text import ProtocolConfig, make_env


def check_game_settings(env: str, env_config: Mapping[str, Any],
                        protocol: ProtocolConfig | Mapping[str, Any]) -> None:
    """Raise ValueError or TypeError, prefixed with the setting at fault, if the game cannot be played so.

    Builds the environment (without drawing a level), which validates the name and ``env_config``,
    and resolves ``protocol`` against the game's own defaults.
    """
    try:
        game = make_env(env, env_config)
    except (ValueError, TypeError) as exc:
        where = f"env={env!r}" + (f", env_config={dict(env_config)!r}" if env_config else "")
        raise type(exc)(f"{where}: {exc}") from None
    try:
        coerce_config(ProtocolConfig, protocol).resolved(getattr(game.unwrapped, "text_defaults", None))
    except (ValueError, TypeError) as exc:
        raise type(exc)(f"protocol: {exc}") from None
    finally:
        game.close()
