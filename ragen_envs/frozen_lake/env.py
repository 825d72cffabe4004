"""The FrozenLake Gymnasium environment: a fresh seeded lake every reset, Gymnasium's slipping, text I/O."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from fractions import Fraction
from typing import Any

import numpy as np
from gymnasium import spaces

from ragen_envs.base_game import BaseGame, Move
from ragen_envs.certificate import Certificate
from ragen_envs.frozen_lake import text
from ragen_envs.frozen_lake.config import FrozenLakeConfig
from ragen_envs.frozen_lake.level import FrozenLakeLevel, certificate, generate
from ragen_envs.frozen_lake.planning import neighbour_table, plan_turn
from ragen_envs.rendering import TileStyle
from ragen_envs.text_game import OBSERVATION_FORMATS, grid_lines, text_budget

#: Tile looks in the order of the observation codes (frozen, hole, goal, player, in hole, on goal).
TILE_STYLES = (
    TileStyle((205, 230, 250)),
    TileStyle((30, 60, 110), "ring", (120, 160, 210)),
    TileStyle((250, 210, 60), "diamond", (190, 120, 0)),
    TileStyle((205, 230, 250), "circle", (210, 40, 40)),
    TileStyle((30, 60, 110), "cross", (230, 50, 50)),
    TileStyle((250, 210, 60), "circle", (210, 40, 40)),
)

_KIND_CODES = {"F": 0, "S": 0, "H": 1, "G": 2}


class FrozenLakeEnv(BaseGame):
    """Cross a frozen lake to the goal without falling into a hole; a new random lake every reset.

    ## Description
    The lake is a grid of frozen cells and holes with one start and one goal. Unlike Gymnasium's
    FrozenLake, which fixes its map at construction, every ``reset`` generates a new lake from
    ``self.np_random`` (``generate(config, level_seed)``): any size, holes with probability
    ``1 - p_frozen``, random start and goal, and always a hole-free path between them.

    ## Action Space
    ``Discrete(4)`` in Gymnasium's order: 0 Left, 1 Down, 2 Right, 3 Up.

    ## Observation Space
    ``Box(0, 5, (height, width), uint8)``: 0 frozen, 1 hole, 2 goal, 3 player, 4 player in a hole,
    5 player on the goal. The start cell shows as frozen once the player leaves it.

    ## Starting State
    The player stands on the level's start cell.

    ## Transitions
    Exactly Gymnasium's: when slippery, the intended move happens with probability
    ``success_rate`` and each of the two perpendicular moves with ``(1 - success_rate) / 2``,
    sampled the way Gymnasium samples them; a move into the border leaves the player in place.

    ## Rewards
    +1 on reaching the goal, 0 otherwise (falling into a hole included).

    ## Episode End
    Terminated on the goal or in a hole. The step limit is the registration's ``max_episode_steps``.

    ## Information
    At reset: ``level_seed`` (None when the level came from ``options["level"]``), ``certificate``
    (see :func:`ragen_envs.frozen_lake.level.certificate`), ``level`` (the map as text). Every step:
    ``success``, ``action_is_valid``, ``action_is_effective`` (the player moved), ``slipped`` (the
    move differed from the one chosen).

    ## Arguments
    ``render_mode`` (``"ansi"``, ``"rgb_array"``, ``"human"``), ``config`` (a
    :class:`FrozenLakeConfig` or a dict of its fields), ``symbols`` (cell kind -> text symbol,
    overriding ``P _ O G X √``). ``reset(options={"level": text_or_level})`` plays a given map.

    ## Version History
    v0: first version.
    """

    metadata = {"render_modes": ["ansi", "rgb_array", "human"], "render_fps": 4}
    name, config_class, tile_styles = "frozenlake", FrozenLakeConfig, TILE_STYLES
    #: How the ``rgb_array`` picture shows each cell (TILE_STYLES in words), added to the legend of image observations.
    image_legend = ("In the picture each cell is a square tile: frozen ice is light blue, a hole is dark blue with "
                    "a pale ring, the goal is yellow with an orange diamond, you are a red disc (a red cross when "
                    "fallen into a hole).")
    action_names, aliases, symbol_sets = text.ACTION_NAMES, text.ACTION_ALIASES, text.SYMBOL_SETS

    def setup(self) -> None:
        config = self.config
        self.symbols = text.resolve_symbols(self.symbols, None)  # non-empty, no spaces, all different
        self.observation_space = spaces.Box(0, 5, shape=(config.height, config.width), dtype=np.uint8)
        #: Text-protocol budgets of ``config.horizon`` actions, the step limit the certificate optimises for.
        self.text_defaults = text_budget(config.horizon)
        self._slip_fail = (1.0 - config.success_rate) / 2.0
        self._slip_keep = self._slip_fail + config.success_rate
        self._neighbours = neighbour_table(config.height, config.width).tolist()

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        """Start a new episode on a new lake (or on ``options["level"]``); ``info`` also holds the map as text."""
        obs, info = super().reset(seed=seed, options=options)
        info["level"] = self.level.to_text()
        return obs, info

    def given_level(self, level: Any) -> FrozenLakeLevel:
        if isinstance(level, str):
            level = FrozenLakeLevel.from_text(level)
        elif not isinstance(level, FrozenLakeLevel):
            raise TypeError(f"options['level'] must be a FrozenLakeLevel or its text, got {type(level).__name__}")
        if (level.height, level.width) != (self.config.height, self.config.width):
            raise ValueError(
                f"options['level'] is {level.height}x{level.width} but this env is configured for "
                f"{self.config.height}x{self.config.width}"
            )
        return level

    def new_level(self, seed: int) -> FrozenLakeLevel:
        return generate(self.config, seed)

    def certify(self, level: FrozenLakeLevel) -> Certificate:
        return certificate(level, self.config)

    def start(self, level: FrozenLakeLevel) -> None:
        cells = "".join(level.rows)
        self._kinds = [_KIND_CODES[ch] for ch in cells]
        self._base_codes = np.array(self._kinds, dtype=np.uint8).reshape(self.config.height, self.config.width)
        self._pos = cells.index("S")
        self._text_cache: tuple[str, list[int], list[int]] | None = None

    def move(self, action: int) -> Move:
        direction = action
        if self.config.is_slippery:
            # Same draw and order as Gymnasium's categorical sample over [turn left, intended, turn right].
            u = self.np_random.random()
            if u < self._slip_fail:
                direction = (action - 1) % 4
            elif u >= self._slip_keep:
                direction = (action + 1) % 4
        old = self._pos
        self._pos = new = self._neighbours[old][direction]
        kind = self._kinds[new]
        return Move(float(kind == 2), success=kind == 2, over=kind != 0, effective=new != old,
                    info={"slipped": direction != action})

    def observe(self) -> np.ndarray:
        obs = self._base_codes.copy()
        obs.flat[self._pos] = 3 + self._kinds[self._pos]
        return obs

    def tiles(self) -> np.ndarray:
        return self.observe()

    # ------------------------------------------------------------------ TextGame protocol
    @property
    def position(self) -> tuple[int, int]:
        """The player's (row, col), 0-based."""
        return divmod(self._pos, self.config.width)

    def rules_text(self) -> str:
        """The rules in plain English, matching this env's slipping."""
        return text.rules_text(self.config)

    def legend_text(self, symbols: Mapping[str, str] | None = None, coordinate_base: int = 0) -> str:
        """The symbol legend and the (row, col) convention."""
        return text.legend_text(text.resolve_symbols(self.symbols, symbols), coordinate_base)

    def observation_text(
        self, fmt: str = "grid", symbols: Mapping[str, str] | None = None, coordinate_base: int = 0
    ) -> str:
        """The current lake as a grid of symbols, a list of coordinates, or both (the grid spliced into a cached
        empty lake: the text protocol asks for it after every turn)."""
        self._started()
        if fmt == "grid":
            return self._grid_text(symbols)
        if fmt == "coords":
            return self._coords_text(coordinate_base)
        if fmt == "grid+coords":
            return self._grid_text(symbols) + "\n" + self._coords_text(coordinate_base)
        raise ValueError(f"unknown observation format {fmt!r}; choose one of {OBSERVATION_FORMATS}")

    def _grid_text(self, symbols: Mapping[str, str] | None) -> str:
        if symbols is None:
            if self._text_cache is None:
                self._text_cache = self._text_layout(self.symbols)
            base, starts, ends = self._text_cache
            chosen = self.symbols
        else:
            chosen = text.resolve_symbols(self.symbols, symbols)
            base, starts, ends = self._text_layout(chosen)
        # Only the player's cell differs from the empty lake, so splice it in.
        player = chosen[("player", "player_in_hole", "player_on_goal")[self._kinds[self._pos]]]
        return base[: starts[self._pos]] + player + base[ends[self._pos]:]

    def _text_layout(self, symbols: Mapping[str, str]) -> tuple[str, list[int], list[int]]:
        """The empty lake as text plus each cell's start and end offset in it."""
        by_code = [symbols["frozen"], symbols["hole"], symbols["goal"]]
        sep = text.cell_separator(symbols)
        width = self.config.width
        parts: list[str] = []
        starts: list[int] = []
        ends: list[int] = []
        offset = 0
        for i, kind in enumerate(self._kinds):
            if i and i % width == 0:
                parts.append("\n")
                offset += 1
            elif i:
                parts.append(sep)
                offset += len(sep)
            symbol = by_code[kind]
            starts.append(offset)
            parts.append(symbol)
            offset += len(symbol)
            ends.append(offset)
        return "".join(parts), starts, ends

    def _coords_text(self, base: int) -> str:
        assert self.level is not None

        def at(cell: tuple[int, int]) -> str:
            return f"({cell[0] + base}, {cell[1] + base})"

        holes = ", ".join(at(h) for h in self.level.holes) or "none"
        row, col = self.position
        status = ("", " (in a hole)", " (on the goal)")[self._kinds[self._pos]]
        return "\n".join([
            f"Lake: {self.config.height} rows x {self.config.width} columns.",
            f"Player: {at((row, col))}{status}",
            f"Goal: {at(self.level.goal)}",
            f"Holes: {holes}",
        ])

    def level_key(self) -> bytes:
        """The current lake as canonical bytes (:meth:`FrozenLakeLevel.level_key`); decides its split."""
        self._started()
        return self.level.level_key()

    def state(self) -> dict[str, Any]:
        """``height``, ``width``, ``rows`` (S F H G), ``player``, ``start``, ``goal``, ``holes``, ``is_slippery``;
        coordinates 0-based."""
        return {
            "height": self.level.height,
            "width": self.level.width,
            "rows": list(self.level.rows),
            "player": list(self.position),
            "start": list(self.level.start),
            "goal": list(self.level.goal),
            "holes": [list(h) for h in self.level.holes],
            "is_slippery": self.config.is_slippery,
        }

    def plan_turn(self, turn_actions: int, actions_left: int, turns_left: int) -> list[int]:
        """Optimal play for this turn from where the player stands (:func:`~ragen_envs.frozen_lake.planning.plan_turn`):
        a shortest path without slipping; with slipping the finite-horizon optimal policy, an even share
        of the remaining actions a turn so that later turns re-plan from where the player lands."""
        self._started()
        return plan_turn(self.level, self.position, is_slippery=self.config.is_slippery,
                         success_rate=self.config.success_rate, turn_actions=turn_actions,
                         actions_left=actions_left, turns_left=turns_left)

    @classmethod
    def from_text(cls, action_names: Sequence[str], observation: str, intro: str) -> FrozenLakeEnv | None:
        """The lake a chat shows, rebuilt (player on its start cell) to plan on, or None when the actions
        are not FrozenLake's. Reads the grid in the default symbols and the slipping the rules state
        (printed exactly, e.g. ``1/3``); ValueError when the text does not show them."""
        if tuple(action_names) != cls.action_names:
            return None
        symbols = text.DEFAULT_SYMBOLS
        letters = {symbols["frozen"]: "F", symbols["hole"]: "H", symbols["goal"]: "G", symbols["player"]: "S"}
        over = {symbols["player_in_hole"], symbols["player_on_goal"]}
        rows = grid_lines(observation, set(letters) | over)
        if any(ch in over for row in rows for ch in row):
            raise ValueError("the game is already over in the state shown")
        level = FrozenLakeLevel(tuple("".join(letters[ch] for ch in row) for row in rows))
        is_slippery = "not slippery" not in intro
        success_rate = 1.0
        if is_slippery:
            match = re.search(r"goes the way you chose with probability (\d+(?:\.\d+)?(?:/\d+)?)", intro)
            if match is None:
                raise ValueError("the rules do not say how slippery the ice is")
            try:
                success_rate = float(Fraction(match.group(1)))
            except (ValueError, ZeroDivisionError) as exc:
                raise ValueError(f"cannot read the slip probability {match.group(1)!r}") from exc
        env = cls(config=FrozenLakeConfig(height=level.height, width=level.width, is_slippery=is_slippery,
                                          success_rate=success_rate, certify_unlimited=False))
        env.reset(options={"level": level})
        return env
