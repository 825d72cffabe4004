"""ragen-envs: seeded, certified text games for LLM agents on the Gymnasium API.

Importing the package registers ``ragen/Bandit-v0``, ``ragen/Sokoban-v0``, ``ragen/FrozenLake-v0``
and the named presets with Gymnasium.
"""

from ragen_envs.base_game import BaseGame, Move
from ragen_envs.certificate import Certificate
from ragen_envs.registration import PRESETS, Preset, get_preset, make, register_all, register_preset
from ragen_envs.splits import split_seeds
from ragen_envs.text_game import OBSERVATION_FORMATS, TextGame, text_budget

register_all()

__all__ = ["PRESETS", "BaseGame", "Certificate", "Move", "Preset", "get_preset", "make", "register_all", "register_preset", "split_seeds",
           "OBSERVATION_FORMATS", "TextGame", "text_budget"]
__version__ = "0.1.0"
