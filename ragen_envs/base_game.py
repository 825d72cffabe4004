"""A base for games: every ``TextGame`` member and the Gymnasium plumbing, so a game writes only its rules.

A game subclasses :class:`BaseGame`, names itself, its config class and its actions, gives its rules
and legend as ``str.format`` templates, and implements the few methods that are its play:
``new_level``, ``certify``, ``start``, ``move``, ``observe``, ``views``, ``state`` and ``plan``
(docs/add_a_game.md shows a complete game in two files), and ``given_level`` to check a level handed
to ``reset``. The base then supplies ``reset`` and ``step`` (seeding, argument checks, the ``info``
contract), ``action_aliases``, ``rules_text``, ``legend_text``, ``observation_text`` in every format,
``level_key`` (the start's ``state_dict``), ``state_dict``, ``plan_turn``, ``render`` (``ansi``, and
``rgb_array`` and ``human`` for a game with tiles) and ``close``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, ClassVar, NamedTuple

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from ragen_envs.certificate import Certificate
from ragen_envs.config_dicts import coerce_config
from ragen_envs.rendering import FrameOutput, TileStyle, render_tiles
from ragen_envs.seeding import as_optional_seed
from ragen_envs.symbols import merge_symbols
from ragen_envs.text_game import OBSERVATION_FORMATS


class Move(NamedTuple):
    """What one action did: its reward, whether it won, whether the game is over anyway (lost or spent),
    whether the action was legal here, whether it changed the state, and the game's own ``info`` keys."""

    reward: float = 0.0
    success: bool = False
    over: bool = False
    valid: bool = True
    effective: bool = True
    info: Mapping[str, Any] | None = None


class BaseGame(gym.Env):
    """A seeded, certified game on the Gymnasium API that is also a ``ragen_envs.TextGame``.

    Class attributes a game sets: ``name`` (``state_dict()["game"]``), ``config_class`` (a frozen
    dataclass; its fields are the ``rules`` template's names), ``action_names``, ``aliases`` (extra
    lower-case spellings), ``rules``, ``legend`` (formatted with the symbols and ``base``, the first
    coordinate), ``symbol_sets`` (the first is the default), ``tile_styles`` (``rgb_array`` tiles).
    ``setup`` sets the observation space and ``text_defaults`` once the config is known.
    ``action_noun`` names an action id in error messages.
    """

    metadata: ClassVar[dict[str, Any]] = {"render_modes": ["ansi"], "render_fps": 4}
    name: ClassVar[str] = ""
    config_class: ClassVar[type]
    action_names: tuple[str, ...] = ()
    aliases: ClassVar[Mapping[str, int]] = {}
    rules: ClassVar[str] = ""
    legend: ClassVar[str] = ""
    symbol_sets: ClassVar[Mapping[str, Mapping[str, str]]] = {}
    #: Characters the cells show besides the symbols (Sudoku's digits): no symbol may hold one.
    reserved_symbol_chars: ClassVar[str] = ""
    tile_styles: ClassVar[tuple[TileStyle, ...]] = ()
    tile_size: ClassVar[int] = 32
    action_noun: ClassVar[str] = "action id"
    text_defaults: Mapping[str, Any] = {}

    def __init__(self, render_mode: str | None = None, config: Any = None,
                 symbols: Mapping[str, str] | None = None) -> None:
        modes = self.metadata["render_modes"]
        if render_mode is not None and render_mode not in modes:
            raise ValueError(f"render_mode must be one of {modes} or None, got {render_mode!r}")
        self.render_mode = render_mode
        self.config = coerce_config(self.config_class, config)
        self.symbols = self._symbols(next(iter(self.symbol_sets.values()), {}), symbols)
        self.level: Any = None
        self.level_seed: int | None = None
        #: The current level's certificate (``info["certificate"]`` holds its ``to_dict()``).
        self.certificate: Certificate | None = None
        self._key = b""
        self._over = False
        self._frames = FrameOutput(f"ragen {self.name}")
        self.setup()
        if "action_space" not in vars(self):  # a game whose names change per level sets its own
            self.action_space = spaces.Discrete(len(self.action_names))

    # ------------------------------------------------------------------ what a game implements
    def setup(self) -> None:
        """Set ``observation_space`` and ``text_defaults`` from ``self.config`` (called by ``__init__``; the action
        space is ``Discrete(len(action_names))`` unless this sets one)."""
        raise NotImplementedError

    def new_level(self, seed: int) -> Any:
        """The level of ``seed``: a pure function of ``self.config`` and ``seed``."""
        raise NotImplementedError

    def given_level(self, level: Any) -> Any:
        """``options["level"]`` checked (or parsed) as a level of this config; by default as given."""
        return level

    def certify(self, level: Any) -> Certificate:
        """What optimal play achieves on ``level`` (called after ``start``). By default the ``plan`` from the
        start, for a deterministic game whose ``plan`` is optimal: it wins for sure in its length."""
        path = self.plan()
        return Certificate(len(path), tuple(path), 1.0)

    def start(self, level: Any) -> None:
        """Set the play state to the start of ``level`` (``self.level`` is already set)."""
        raise NotImplementedError

    def move(self, action: int) -> Move:
        """Apply the legal action id ``action`` to the play state."""
        raise NotImplementedError

    def observe(self) -> Any:
        """The Gymnasium observation of the play state, inside ``observation_space``."""
        raise NotImplementedError

    def views(self, symbols: Mapping[str, str], base: int) -> dict[str, str]:
        """The state as text: ``grid`` and, where the game has positions, ``coords`` (counted from ``base``)."""
        raise NotImplementedError

    def state(self) -> dict[str, Any]:
        """The true play state as JSON values (``state_dict`` adds ``game``)."""
        raise NotImplementedError

    def plan(self) -> list[int]:
        """The optimal actions from the current state to the end (at least one)."""
        raise NotImplementedError

    def tiles(self) -> np.ndarray:
        """The state as a 2-D array of indices into ``tile_styles`` (for ``rgb_array``)."""
        raise NotImplementedError

    # ------------------------------------------------------------------ Gymnasium
    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        """A new level drawn from ``self.np_random`` (or ``options["level"]``); returns ``(obs, info)``."""
        super().reset(seed=as_optional_seed(seed))
        level = (options or {}).get("level")
        self.level_seed = None if level is not None else int(self.np_random.integers(0, 2**31 - 1))
        self.level = self.given_level(level) if level is not None else self.new_level(self.level_seed)
        self.start(self.level)
        self._over = False
        self.certificate = self.certify(self.level)
        if type(self).level_key is BaseGame.level_key:  # a game with its own key never reads the snapshot
            self._key = json.dumps(self.state_dict(), sort_keys=True).encode()
        if self.render_mode == "human":
            self.render()
        return self.observe(), {"level_seed": self.level_seed, "certificate": self.certificate.to_dict()}

    def step(self, action: Any):
        """Apply one action id; returns ``(obs, reward, terminated, truncated, info)``."""
        if isinstance(action, np.ndarray) and action.shape == ():
            action = action.item()
        if isinstance(action, (bool, np.bool_)) or not isinstance(action, (int, np.integer)):
            raise TypeError(f"{self.name} action must be an int {self.action_noun}, got {action!r}")
        n = self.action_space.n
        if not 0 <= action < n:
            named = "".join(f", {i} ({a})" for i, a in enumerate(self.action_names)) if n <= 10 else ""
            raise ValueError(f"{self.name} action must be an int {self.action_noun} in 0..{n - 1}{named}; got {action}")
        self._started()
        if self._over:
            raise RuntimeError(f"the {self.name} episode is over; call reset() to play again")
        result = self.move(int(action))
        self._over = bool(result.success or result.over)
        info = {"success": bool(result.success), "action_is_valid": bool(result.valid),
                "action_is_effective": bool(result.effective), **(result.info or {})}
        if self.render_mode == "human":
            self.render()
        return self.observe(), float(result.reward), self._over, False, info

    def render(self) -> str | np.ndarray | None:
        """``ansi``: the state as text; ``rgb_array``: the game's tiles; ``human``: them in a window."""
        self._started()
        if self.render_mode == "ansi":
            return self.observation_text("grid")
        if self.render_mode is None:
            return None
        frame = render_tiles(self.tiles(), self.tile_styles, self.tile_size)
        return self._frames.emit(frame, self.render_mode, self.metadata["render_fps"])

    def close(self) -> None:
        """Close the ``human`` window, if one is open."""
        self._frames.close()

    # ------------------------------------------------------------------ TextGame
    def action_aliases(self) -> dict[str, int]:
        """Each name in lower case (first of equal names), without spaces too, and the game's ``aliases``."""
        found: dict[str, int] = {}
        for i, name in enumerate(self.action_names):
            found.setdefault(name.lower(), i)
            found.setdefault(name.lower().replace(" ", ""), i)
        return {**dict(self.aliases), **found}

    def rules_text(self) -> str:
        """``rules`` with the config's fields filled in."""
        return self.rules.format(**{k: getattr(self.config, k) for k in self.config.__dataclass_fields__})

    def legend_text(self, symbols: Mapping[str, str] | None = None, coordinate_base: int = 0) -> str:
        """``legend`` with the symbols and ``base`` (the first row or cell number) filled in."""
        return self.legend.format(**self._symbols(self.symbols, symbols), base=coordinate_base)

    def observation_text(self, fmt: str = "grid", symbols: Mapping[str, str] | None = None,
                         coordinate_base: int = 0) -> str:
        """The current state as text in one of ``OBSERVATION_FORMATS`` (``coords`` falls back to ``grid``)."""
        if fmt not in OBSERVATION_FORMATS:
            raise ValueError(f"unknown observation format {fmt!r}; choose one of {OBSERVATION_FORMATS}")
        self._started()
        parts = self.views(self._symbols(self.symbols, symbols), coordinate_base)
        grid, coords = parts["grid"], parts.get("coords", parts["grid"])
        if fmt == "grid+coords":
            return grid if coords == grid else f"{grid}\n{coords}"
        return grid if fmt == "grid" else coords

    def level_key(self) -> bytes | None:
        """The level's start: its ``state_dict()`` at reset as canonical JSON bytes."""
        self._started()
        return self._key

    def state_dict(self) -> dict[str, Any]:
        """JSON snapshot of the true state: ``game`` and the game's ``state()``."""
        self._started()
        return {"game": self.name, **self.state()}

    def plan_turn(self, turn_actions: int, actions_left: int, turns_left: int) -> list[int]:
        """The next ``turn_actions`` actions of the optimal ``plan`` (at least one)."""
        self._started()
        return self.plan()[:max(turn_actions, 1)] or [0]

    # ------------------------------------------------------------------ helpers
    def _started(self) -> None:
        if self.level is None:
            raise RuntimeError(f"call reset() before playing {self.name}")

    def _symbols(self, base: Mapping[str, str], override: Mapping[str, str] | None) -> dict[str, str]:
        if not self.symbol_sets:  # no cells to draw: symbols are accepted for a uniform signature, and unused
            return {}
        return merge_symbols(self.name, base, override, self.reserved_symbol_chars)
