"""The Sokoban Gymnasium environment."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

import gymnasium as gym
import numpy as np

from ragen_envs.certificate import Certificate
from ragen_envs.rendering import FrameOutput, TileStyle, render_tiles
from ragen_envs.seeding import as_optional_seed
from ragen_envs.sokoban import text
from ragen_envs.sokoban.config import SokobanConfig
from ragen_envs.sokoban.deadlocks import dead_mask, is_deadlocked
from ragen_envs.sokoban.level import ACTION_NAMES, Board, SokobanLevel, cells_of, certificate, generate
from ragen_envs.sokoban.level_files import LevelSet, load_level_set
from ragen_envs.sokoban.notation import parse_level
from ragen_envs.sokoban.solver import solve
from ragen_envs.sokoban.room import action_offsets
from ragen_envs.sokoban.text import BOX, BOX_ON_TARGET, FLOOR, PLAYER, PLAYER_ON_TARGET, TARGET, WALL
from ragen_envs.text_game import OBSERVATION_FORMATS, grid_lines, text_budget

#: Tile of each cell code in ``rgb_array`` frames.
TILE_STYLES: tuple[TileStyle, ...] = (
    TileStyle((96, 64, 48)),  # wall: dark brick
    TileStyle((228, 224, 212)),  # floor
    TileStyle((228, 224, 212), "ring", (200, 40, 40)),  # target: red ring
    TileStyle((228, 224, 212), "square", (40, 160, 60)),  # box on target: green box
    TileStyle((228, 224, 212), "square", (170, 110, 40)),  # box: brown box
    TileStyle((228, 224, 212), "circle", (40, 80, 200)),  # player: blue disc
    TileStyle((240, 190, 190), "circle", (40, 80, 200)),  # player on target: blue disc on pink
)

#: Standard-notation character of each cell code (see the Observation Space section).
_NOTATION = "# .*$@+"

_ALIASES = {"up": 0, "north": 0, "u": 0, "n": 0, "down": 1, "south": 1, "d": 1, "s": 1,
            "left": 2, "west": 2, "l": 2, "w": 2, "right": 3, "east": 3, "r": 3, "e": 3}


class SokobanEnv(gym.Env):
    """Push every box onto a target in a walled room.

    ## Description
    Classic Sokoban as in gym-sokoban and RAGEN. Each reset draws a new level from
    :func:`ragen_envs.sokoban.generate`, which is certified solvable: ``info["certificate"]``
    (:class:`ragen_envs.certificate.Certificate` as a dict) holds a fewest-moves solution (fewest
    pushes among those). With ``levels=`` (a Boxoban, XSB/``.sok`` or
    standard-notation file, or a directory of them; :mod:`ragen_envs.sokoban.level_files`) the levels
    come from that set instead, each solved on load so it carries a certificate too.

    ## Action Space
    ``Discrete(4)``: 0 Up, 1 Down, 2 Left, 3 Right. Moving into a box pushes it if the cell behind it
    is free; moving into a wall, or pushing a box into a wall or another box, leaves everything as it
    was (the step still costs the step reward).

    ## Observation Space
    ``Box(0, 6, (height, width), int8)`` of cell codes: 0 wall, 1 floor, 2 target, 3 box on target,
    4 box, 5 player, 6 player on target.

    ## Starting State
    The generated level (or ``options={"level": SokobanLevel | text}`` for a given one). With a level
    set: level ``i`` of the set for ``reset(seed=i)`` or ``options={"index": i}``, a level drawn from
    ``np_random`` for ``reset()``.

    ## Rewards
    ``step_reward`` (-0.1) every step, ``box_on_target_reward`` (+1) when a push places a box,
    ``box_off_target_reward`` (-1) when a push takes one off, ``success_reward`` (+10) on the
    step that places the last box. All are fields of :class:`SokobanConfig`.

    ## Episode End
    Terminates when every box is on a target. A deadlock does not end the episode; it is only
    reported. Registered ids add a time limit (``max_episode_steps``).

    ## Information
    Every step: ``success``, ``action_is_valid`` (always True; out-of-range actions raise),
    ``action_is_effective`` (the player moved), ``boxes_on_target``, ``deadlock`` (a box stands on a
    dead square or is frozen off target: the level can no longer be won). At reset also
    ``level_seed`` (None for a given level) and ``certificate`` (the typed fields, and ``solution``
    names, ``actions`` ids, ``moves``, ``pushes``; None for a given level without one). With a level set also ``level_index``
    and ``level_source`` (``file``, ``number`` in the file, ``line``).

    ## Arguments
    ``render_mode`` ("ansi", "rgb_array", "human"), ``config`` (a :class:`SokobanConfig` or a dict
    of its fields), ``symbols`` (kind -> text overrides of RAGEN's vocabulary for text output),
    ``levels`` (a level file or directory; the same as ``config={"levels": ...}``). With a level set
    the grid is the size of its largest level, whatever the config's ``height`` and ``width``.

    ## Version History
    v0: first version. Default text budgets: ``config.max_actions_per_episode`` (the presets set one
    that fits their levels); for a level set at least its longest certified optimum.
    """

    metadata = {"render_modes": ["ansi", "rgb_array", "human"], "render_fps": 4}
    #: How the ``rgb_array`` picture shows each cell (TILE_STYLES in words), added to the legend of image observations.
    image_legend = ("In the picture each cell is a square tile: a wall is dark brown, floor is light grey, a target "
                    "is a red ring, a box is a brown square, a box on a target is a green square, you are a "
                    "blue disc (on a pink tile when you stand on a target).")
    action_names: tuple[str, ...] = ACTION_NAMES
    symbol_sets: Mapping[str, Mapping[str, str]] = text.SYMBOL_SETS

    def __init__(self, render_mode: str | None = None, config: SokobanConfig | Mapping[str, Any] | None = None,
                 symbols: Mapping[str, str] | None = None, levels: str | os.PathLike[str] | None = None) -> None:
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(f"render_mode must be one of {self.metadata['render_modes']} or None, got {render_mode!r}")
        self.render_mode = render_mode
        config = SokobanConfig.coerce(config)
        if levels is not None:
            config = replace(config, levels=os.fspath(levels))
        #: The levels this env plays instead of generating (None: generated levels).
        self.level_set: LevelSet | None = None
        if config.levels is not None:
            self.level_set = load_level_set(config.levels, config.levels_limit)
            config = replace(config, height=self.level_set.height, width=self.level_set.width)
        self.config = config
        #: Where the current level came from, for a level set: ``file``, ``number`` (in the file), ``line``.
        self.level_source: dict[str, Any] | None = None
        self.symbols = dict(symbols) if symbols is not None else None
        self._table = text.symbol_table(self.symbols)
        h, w = self.config.height, self.config.width
        self.action_space = gym.spaces.Discrete(4)
        self.observation_space = gym.spaces.Box(0, 6, shape=(h, w), dtype=np.int8)
        self._offsets = action_offsets(w)
        self._grid = np.zeros((h, w), dtype=np.int8)
        self._frames = FrameOutput("ragen Sokoban")
        self.level: SokobanLevel | None = None

    # -- Gymnasium API -------------------------------------------------------------------------

    @property
    def text_defaults(self) -> Mapping[str, Any]:
        """Text-protocol budgets that fit this env's levels (:func:`~ragen_envs.text_game.text_budget`)."""
        budget = self.config.max_actions_per_episode
        if self.level_set is not None:
            # The set's longest optimum, so optimal play wins every level; never below RAGEN's 10 actions.
            budget = max(budget or 10, self.level_set.longest_optimum)
        return {} if budget is None else text_budget(budget)

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[np.ndarray, dict]:
        """Start a new level: a generated one, level ``seed`` (or ``options["index"]``) of the level set,
        or ``options["level"]`` (a SokobanLevel or its text)."""
        seed = as_optional_seed(seed)  # np.int64 seeds too
        super().reset(seed=seed)
        options = dict(options or {})
        level = options.pop("level", None)
        index = options.pop("index", None)
        if options:
            raise ValueError(f"unknown reset option(s) {sorted(options)}; SokobanEnv accepts 'level' and 'index'")
        self.level_source = None
        extra: dict[str, Any] = {}
        if index is not None and (self.level_set is None or level is not None):
            raise ValueError("options['index'] picks a level of the env's level set; make the env with levels=... "
                             "and do not pass options['level'] too")
        if level is None and self.level_set is not None:
            if index is None:
                index = seed if seed is not None else int(self.np_random.integers(0, len(self.level_set)))
            entry = self.level_set.entry(index if isinstance(index, bool) else as_optional_seed(index))
            level = entry.level
            self.level_source = {"file": entry.file, "number": entry.number, "line": entry.line}
            extra = {"level_index": index, "level_source": dict(self.level_source)}
        if level is None:
            level_seed: int | None = int(self.np_random.integers(0, 2**32))
            level = generate(self.config, level_seed)
        else:
            if isinstance(level, str):
                level = parse_level(level)
            if not isinstance(level, SokobanLevel):
                raise TypeError(f"options['level'] must be a SokobanLevel or level text, got {type(level).__name__}")
            level_seed = level.seed
        self._load(level)
        info = self._info(False)
        info["level_seed"] = level_seed
        found = self.certificate
        info["certificate"] = found.to_dict() if found is not None else None
        info.update(extra)
        if self.render_mode == "human":
            self.render()
        return self._grid.copy(), info

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict]:
        """Move the player; see the class docstring for rewards and info."""
        if isinstance(action, (bool, np.bool_)) or not isinstance(action, (int, np.integer)) or not 0 <= action < 4:
            if isinstance(action, np.ndarray) and action.shape == () and action.dtype.kind in "iu":
                return self.step(int(action))
            raise ValueError(f"action must be an int in 0..3 (0 Up, 1 Down, 2 Left, 3 Right), got {action!r}")
        if self.level is None:
            raise RuntimeError("call reset() before step()")
        cfg = self.config
        reward = cfg.step_reward
        o = self._offsets[action]
        player = self._player
        step = player + o
        moved = False
        if self._floor >> step & 1:
            # A fresh flat view of the grid, never one kept as an attribute: pickle and deepcopy copy
            # a kept view as a separate array, and the copy's grid would stop following its moves.
            flat = self._grid.reshape(-1)
            boxes = self._boxes
            if boxes >> step & 1:
                dest = step + o
                if self._floor >> dest & 1 and not boxes >> dest & 1:
                    self._boxes = boxes ^ (1 << step) ^ (1 << dest)
                    targets = self._targets
                    if targets >> dest & 1:
                        reward += cfg.box_on_target_reward
                        flat[dest] = BOX_ON_TARGET
                        self._placed += 1
                    else:
                        flat[dest] = BOX
                    if targets >> step & 1:
                        reward += cfg.box_off_target_reward
                        self._placed -= 1
                    self._deadlock = is_deadlocked(self._boxes, self._floor, targets, self._dead, self._width)
                    moved = True
            else:
                moved = True
            if moved:
                flat[player] = TARGET if self._targets >> player & 1 else FLOOR
                flat[step] = PLAYER_ON_TARGET if self._targets >> step & 1 else PLAYER
                self._player = step
        success = self._placed == self._num_boxes
        if success and moved:
            reward += cfg.success_reward
        info = self._info(moved)
        if self.render_mode == "human":
            self.render()
        return self._grid.copy(), float(reward), success, False, info

    def render(self) -> str | np.ndarray | None:
        """ANSI: the symbol grid; rgb_array: a picture (32 px tiles); human: a pygame window."""
        if self.level is None:
            raise RuntimeError("call reset() before render()")
        if self.render_mode == "ansi":
            return self.observation_text("grid", self.symbols)
        if self.render_mode is None:
            return None
        frame = render_tiles(self._grid, TILE_STYLES, tile_size=32)
        return self._frames.emit(frame, self.render_mode, self.metadata["render_fps"])

    def close(self) -> None:
        """Close the pygame window, if one was opened."""
        self._frames.close()

    # -- TextGame ------------------------------------------------------------------------------

    def action_aliases(self) -> dict[str, int]:
        """Lower-case spellings accepted for each action (names, compass points, initials)."""
        return dict(_ALIASES)

    def rules_text(self) -> str:
        """The rules and rewards in plain words."""
        c = self.config
        return text.rules_text(c.step_reward, c.box_on_target_reward, c.box_off_target_reward, c.success_reward)

    def legend_text(self, symbols: Mapping[str, str] | None = None, coordinate_base: int = 0) -> str:
        """The symbol legend and the (row, col) convention."""
        return text.legend_text(self._symbols(symbols), _check_base(coordinate_base))

    def observation_text(self, fmt: str = "grid", symbols: Mapping[str, str] | None = None,
                         coordinate_base: int = 0) -> str:
        """The state as ``grid`` (symbol rows), ``coords`` (objects with (row, col)) or ``grid+coords``."""
        if self.level is None:
            raise RuntimeError("call reset() before observation_text()")
        if fmt not in OBSERVATION_FORMATS:
            raise ValueError(f"unknown observation format {fmt!r}; choose one of {OBSERVATION_FORMATS}")
        base = _check_base(coordinate_base)
        codes = self._grid.ravel().tolist()
        parts = []
        if fmt in ("grid", "grid+coords"):
            parts.append(text.grid_text(codes, self._width, self._symbols(symbols)))
        if fmt in ("coords", "grid+coords"):
            parts.append(text.coords_text(codes, self._grid.shape[0], self._width, base))
        return "\n\n".join(parts)

    def level_key(self) -> bytes:
        """The current level's start as canonical bytes (:meth:`SokobanLevel.level_key`); decides its split."""
        if self.level is None:
            raise RuntimeError("call reset() before level_key()")
        return self.level.level_key()

    def state_dict(self) -> dict[str, Any]:
        """The true state in the schema of docs/interfaces.md (0-based coordinates)."""
        if self.level is None:
            raise RuntimeError("call reset() before state_dict()")
        # Read straight off the cell-code grid: the text layer calls this every turn, so no level
        # object is built and validated here.
        rows = ["".join(_NOTATION[code] for code in row) for row in self._grid.tolist()]
        boxes = [[r, c] for r, row in enumerate(rows) for c, ch in enumerate(row) if ch in "$*"]
        return {"game": "sokoban", "height": len(rows), "width": self._width, "rows": rows,
                "player": list(divmod(self._player, self._width)), "boxes": boxes,
                "targets": [list(t) for t in self._target_list], "walls": [list(c) for c in self._wall_list]}

    def plan_turn(self, turn_actions: int, actions_left: int, turns_left: int) -> list[int]:
        """The next moves of an optimal solution from the current position, as many as the turn may send
        (the game is deterministic, so they run blind safely): the certificate's while play has kept to
        it, else a fresh solve from here (seconds on a hard level). ``[0]`` (Up) when nothing wins."""
        if self.level is None:
            raise RuntimeError("call reset() before plan_turn()")
        done = self._certified_positions().get((self._player, self._boxes))
        if done is not None:
            solution = self.level.certificate.solution[done:]  # type: ignore[union-attr]
        else:
            solution = solve(self.current_level()).solution or ()
        return list(solution[:max(turn_actions, 1)]) or [0]

    def _certified_positions(self) -> dict[tuple[int, int], int]:
        """(player, boxes) after each prefix of the certificate's solution -> that prefix's length."""
        if self._certified is None:
            self._certified = {}
            if self.level is None or self.level.certificate is None:
                return self._certified
            player, boxes = self._start
            self._certified[(player, boxes)] = 0
            for done, action in enumerate(self.level.certificate.solution, 1):
                offset = self._offsets[action]
                player += offset
                if boxes >> player & 1:  # an optimal solution never bumps into anything: every push is legal
                    boxes ^= 1 << player | 1 << (player + offset)
                self._certified[(player, boxes)] = done
        return self._certified

    @classmethod
    def from_text(cls, action_names: Sequence[str], observation: str, intro: str) -> SokobanEnv | None:
        """The position a chat shows, rebuilt as a level (no certificate) to plan on, or None when the
        actions are not Sokoban's. Reads the grid in RAGEN's symbols; ValueError when there is none."""
        if tuple(action_names) != cls.action_names:
            return None
        to_standard = {text.RAGEN_SYMBOLS[kind]: text.STANDARD_SYMBOLS[kind] for kind in text.RAGEN_SYMBOLS}
        rows = grid_lines(observation, set(to_standard))
        level = parse_level("\n".join("".join(to_standard[ch] for ch in row) for row in rows))
        # At least 4x4 so the config's one generated box fits; a smaller level is padded with wall.
        env = cls(config=SokobanConfig(height=max(level.height, 4), width=max(level.width, 4)))
        env.reset(options={"level": level})
        return env

    # -- helpers -------------------------------------------------------------------------------

    def current_level(self) -> SokobanLevel:
        """The position now (without certificate), e.g. to save it or to solve it from here."""
        if self.level is None:
            raise RuntimeError("call reset() before current_level()")
        w = self._width
        return SokobanLevel(self._grid.shape[0], w, self._walls, self._target_cells,
                            tuple(cells_of(self._boxes, w)), divmod(self._player, w))

    @property
    def certificate(self) -> Certificate | None:
        """The current level's certificate (``info["certificate"]`` holds its ``to_dict()``); None before
        the first reset and for a given level without a solution."""
        return None if self.level is None else certificate(self.level)

    def _symbols(self, symbols: Mapping[str, str] | None) -> tuple[str, ...]:
        return self._table if symbols is None else text.symbol_table(symbols)

    def _load(self, level: SokobanLevel) -> None:
        h, w = self.config.height, self.config.width
        if level.height > h or level.width > w:
            raise ValueError(
                f"the level is {level.height}x{level.width} but this env's observation space is {h}x{w}; "
                f"make the env with config height>={level.height}, width>={level.width}"
            )
        # Smaller levels sit in the top-left corner, the rest of the grid is wall.
        walls = set(level.walls)
        walls.update((r, c) for r in range(h) for c in range(w) if r >= level.height or c >= level.width)
        padded = SokobanLevel(h, w, frozenset(walls), level.targets, level.boxes, level.player)
        board = Board.of(padded)
        self.level = level
        self._target_cells = padded.targets
        self._walls = padded.walls
        self._target_list = sorted(padded.targets)
        self._width = w
        self._floor, self._targets, self._boxes, self._player = board.floor, board.targets, board.boxes, board.player
        self._num_boxes = len(level.boxes)
        self._placed = (board.boxes & board.targets).bit_count()
        self._start = (board.player, board.boxes)
        self._certified: dict[tuple[int, int], int] | None = None  # built on the first plan_turn
        self._dead = dead_mask(board.floor, board.targets, w)
        self._deadlock = is_deadlocked(board.boxes, board.floor, board.targets, self._dead, w)
        # Cells outside the player's area (walls, and any floor beyond them) show as wall.
        flat = self._grid.reshape(-1)  # a view: the writes below fill the grid
        flat[:] = WALL
        for i in range(h * w):
            bit = 1 << i
            if board.floor & bit:
                on = board.targets & bit
                if board.boxes & bit:
                    flat[i] = BOX_ON_TARGET if on else BOX
                elif i == board.player:
                    flat[i] = PLAYER_ON_TARGET if on else PLAYER
                else:
                    flat[i] = TARGET if on else FLOOR
        self._wall_list = [divmod(int(i), w) for i in np.flatnonzero(flat == WALL)]

    def _info(self, moved: bool) -> dict[str, Any]:
        return {"success": self._placed == self._num_boxes, "action_is_valid": True, "action_is_effective": moved,
                "boxes_on_target": self._placed, "deadlock": self._deadlock}


def _check_base(base: Any) -> int:
    if base not in (0, 1) or isinstance(base, bool):
        raise ValueError(f"coordinate_base must be 0 or 1, got {base!r}")
    return int(base)
