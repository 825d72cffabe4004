"""Gymnasium ids and named presets of every ragen game, and the level-set files a Sokoban preset can play.

``import ragen_envs`` calls :func:`register_all`, after which ``gymnasium.make("ragen/Sokoban-v0")``
works. Each preset is a registered id; the short name (``simple_sokoban``) is what the CLIs take.
A game that lives outside this package joins with :func:`register_preset` when its package is
imported; an installed one names that package under the entry-point group :data:`GAME_ENTRY_POINTS`,
which is imported the first time a name is not found, so the CLIs know it too (docs/add_a_game.md).
Games are named by entry-point strings, so importing this module imports none of them.
"""

from __future__ import annotations

import importlib.metadata
import os
from dataclasses import dataclass, field
from typing import Any

import gymnasium as gym


@dataclass(frozen=True)
class Preset:
    """A registered environment: its short name, Gymnasium id, entry point and config."""

    name: str
    env_id: str
    entry_point: str
    config: dict[str, Any] = field(default_factory=dict)
    max_episode_steps: int | None = None
    description: str = ""
    #: Text-protocol defaults of this preset (``ProtocolConfig`` fields left at None), e.g. ``observation``.
    protocol: dict[str, Any] = field(default_factory=dict)

    @property
    def visual(self) -> bool:
        """Whether its text episodes show pictures by default (``observation`` image or both)."""
        return self.protocol.get("observation", "text") != "text"


_SOKOBAN = "ragen_envs.sokoban.env:SokobanEnv"
_FROZEN_LAKE = "ragen_envs.frozen_lake.env:FrozenLakeEnv"
_BANDIT = "ragen_envs.bandit.env:BanditEnv"
_RUBIKS = "ragen_envs.rubiks.env:RubiksEnv"
_COUNTDOWN = "ragen_envs.countdown.env:CountdownEnv"
_SUDOKU = "ragen_envs.sudoku.env:SudokuEnv"

PRESETS: tuple[Preset, ...] = (
    Preset("sokoban", "ragen/Sokoban-v0", _SOKOBAN, {"max_actions_per_episode": 20}, 100,
           "6x6 room, 1 box (RAGEN's SimpleSokoban)"),
    Preset("simple_sokoban", "ragen/SimpleSokoban-v0", _SOKOBAN,
           {"height": 6, "width": 6, "num_boxes": 1, "max_actions_per_episode": 20}, 100, "6x6 room, 1 box"),
    Preset("simple_sokoban_hard", "ragen/SimpleSokobanHard-v0", _SOKOBAN,
           {"height": 6, "width": 6, "num_boxes": 1, "min_pushes": 3, "max_actions_per_episode": 20}, 100,
           "6x6 room, 1 box, 3+ pushes"),
    Preset("larger_sokoban", "ragen/LargerSokoban-v0", _SOKOBAN,
           {"height": 8, "width": 8, "num_boxes": 2, "max_actions_per_episode": 40}, 100, "8x8 room, 2 boxes"),
    Preset("larger_sokoban_hard", "ragen/LargerSokobanHard-v0", _SOKOBAN,
           {"height": 8, "width": 8, "num_boxes": 2, "min_pushes": 6, "max_actions_per_episode": 45}, 100,
           "8x8 room, 2 boxes, 6+ pushes"),
    Preset("boxoban", "ragen/Boxoban-v0", _SOKOBAN,
           {"height": 10, "width": 10, "num_boxes": 4, "max_actions_per_episode": 55}, 200,
           "10x10 room, 4 boxes (Boxoban-sized)"),
    Preset("boxoban_hard", "ragen/BoxobanHard-v0", _SOKOBAN,
           {"height": 10, "width": 10, "num_boxes": 4, "min_pushes": 12, "max_actions_per_episode": 70}, 200,
           "10x10, 4 boxes, 12+ pushes"),
    Preset("visual_sokoban", "ragen/VisualSokoban-v0", _SOKOBAN,
           {"height": 6, "width": 6, "num_boxes": 1, "max_actions_per_episode": 20}, 100,
           "simple_sokoban seen as a picture (image observations)", {"observation": "image"}),
    Preset("frozenlake", "ragen/FrozenLake-v0", _FROZEN_LAKE, {}, 100, "4x4 slippery lake (RAGEN's)"),
    Preset("frozenlake_8x8", "ragen/FrozenLake8x8-v0", _FROZEN_LAKE,
           {"height": 8, "width": 8, "horizon": 20}, 200, "8x8 slippery lake"),
    Preset("frozenlake_det", "ragen/FrozenLakeDeterministic-v0", _FROZEN_LAKE,
           {"is_slippery": False}, 100, "4x4 lake without slipping"),
    Preset("visual_frozenlake", "ragen/VisualFrozenLake-v0", _FROZEN_LAKE, {}, 100,
           "frozenlake seen as a picture (image observations)", {"observation": "image"}),
    Preset("bandit", "ragen/Bandit-v0", _BANDIT, {}, None, "phoenix (safe) vs dragon (risky), as in RAGEN"),
    Preset("bandit_heldout", "ragen/BanditHeldOut-v0", _BANDIT,
           {"name_set": "heldout"}, None, "held-out arm names for generalisation tests"),
    Preset("bandit_reversed", "ragen/BanditReversed-v0", _BANDIT,
           {"name_set": "reversed"}, None, "names whose connotations conflict with the payoffs"),
    Preset("countdown", "ragen/Countdown-v0", _COUNTDOWN, {}, None, "3 numbers up to 20, a target up to 100"),
    Preset("sudoku", "ragen/Sudoku-v0", _SUDOKU, {}, 100, "4x4 grid, 6 givens"),
    Preset("sudoku_9x9", "ragen/Sudoku9x9-v0", _SUDOKU, {"size": 9, "givens": 40}, 200, "9x9 grid, 40 givens"),
    Preset("rubiks_2x2", "ragen/Rubiks2x2-v0", _RUBIKS, {}, 100, "2x2 cube, 1-4 turns from solved"),
    Preset("rubiks_2x2_hard", "ragen/Rubiks2x2Hard-v0", _RUBIKS, {"min_distance": 5, "max_distance": 8}, 100,
           "2x2 cube, 5-8 turns from solved"),
)

# Sokoban presets carry ``max_actions_per_episode``, the default action budget of their text episodes:
# a multiple of 5 at or above the 99th percentile of their levels' optimal move counts (seeds 0..399),
# so optimal play fits on nearly every level (tests/envs/test_preset_budgets.py holds each to >= 95%).

_BY_NAME = {p.name: p for p in PRESETS}
_BY_ID = {p.env_id: p for p in PRESETS}

#: Entry-point group of installed game packages: ``corridor = "corridor_game"`` in a package's
#: ``[project.entry-points."ragen_envs.games"]``; loading the entry imports the package, which registers.
GAME_ENTRY_POINTS = "ragen_envs.games"
_installed_games_loaded = False


def _load_installed_games() -> None:
    """Import every installed game package once (on the first name not found, so the built-ins cost nothing)."""
    global _installed_games_loaded
    if not _installed_games_loaded:
        _installed_games_loaded = True
        for entry in importlib.metadata.entry_points(group=GAME_ENTRY_POINTS):
            entry.load()


def get_preset(name_or_id: str) -> Preset:
    """Look a preset up by short name (``simple_sokoban``) or Gymnasium id (``ragen/SimpleSokoban-v0``)."""
    key = name_or_id.strip()
    preset = _BY_NAME.get(key.lower().replace("-", "_")) or _BY_ID.get(key)
    if preset is None and not _installed_games_loaded:
        _load_installed_games()
        return get_preset(name_or_id)
    if preset is None:
        names = ", ".join(_BY_NAME)
        raise ValueError(f"unknown environment {name_or_id!r}; known presets: {names}")
    return preset


def register_all() -> None:
    """Register every preset with Gymnasium (idempotent)."""
    for p in PRESETS:
        if p.env_id in gym.registry:
            continue
        gym.register(
            id=p.env_id,
            entry_point=p.entry_point,
            max_episode_steps=p.max_episode_steps,
            kwargs={"config": dict(p.config)},
        )


def register_preset(preset: Preset) -> None:
    """Add a preset of a game defined outside ragen_envs: :func:`get_preset`, :func:`make`, the text
    protocol and the CLIs then know it by name. Registering the same preset again does nothing; a
    different preset under a taken name or id is a ValueError. (:data:`PRESETS` keeps the built-ins.)"""
    if not isinstance(preset, Preset):
        raise TypeError(f"register_preset needs a Preset, got {type(preset).__name__}")
    if not preset.name or preset.name != preset.name.lower().replace("-", "_"):
        raise ValueError(f"a preset name must be lower case with underscores (how get_preset looks it up), "
                         f"got {preset.name!r}")
    for taken in (_BY_NAME.get(preset.name), _BY_ID.get(preset.env_id)):
        if taken is not None and taken != preset:
            raise ValueError(f"preset {preset.name!r} ({preset.env_id}) clashes with the registered {taken.name!r} "
                             f"({taken.env_id})")
    _BY_NAME[preset.name] = _BY_ID[preset.env_id] = preset
    if preset.env_id not in gym.registry:
        gym.register(id=preset.env_id, entry_point=preset.entry_point, max_episode_steps=preset.max_episode_steps,
                     kwargs={"config": dict(preset.config)})


def make(name_or_id: str, **kwargs: Any) -> gym.Env:
    """``gymnasium.make`` for a preset given by short name or id; ``config=`` entries are merged."""
    preset = get_preset(name_or_id)
    config = {**preset.config, **kwargs.pop("config", {})}
    return gym.make(preset.env_id, config=config, **kwargs)


# Level sets (Boxoban, XSB/.sok or standard-notation files) are played by the Sokoban preset with
# ``config={"levels": path}``; the harness sizes and fingerprints a set before it plays it. The game
# module is imported on first use only, as the entry points above are.


def count_levels(path: str | os.PathLike[str], limit: int | None = None) -> int:
    """How many levels a level file or directory holds (at most ``limit``), read without solving any."""
    from ragen_envs.sokoban.level_files import count_levels as count

    return count(path, limit)


def level_set_digest(path: str | os.PathLike[str]) -> str:
    """SHA-256 of a level file, or of a directory's file names with their hashes (what a run records)."""
    from ragen_envs.sokoban.level_files import level_set_digest as digest

    return digest(path)
