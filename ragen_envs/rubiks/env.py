"""The 2x2 Rubik's cube as a text game: scrambled a known optimal distance from solved; turn it back."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from gymnasium import spaces

from ragen_envs.base_game import BaseGame, Move
from ragen_envs.certificate import Certificate
from ragen_envs.config_dicts import require_ints
from ragen_envs.deadline import check_deadline
from ragen_envs.rendering import TileStyle
from ragen_envs.rubiks import cube
from ragen_envs.text_game import grid_lines, text_budget

#: Colour kinds of the faces (U white, L orange, F green, R red, B blue, D yellow).
COLORS = {"U": "white", "L": "orange", "F": "green", "R": "red", "B": "blue", "D": "yellow"}
_RGB = {"white": (245, 245, 245), "orange": (255, 140, 0), "green": (0, 155, 72), "red": (200, 20, 30),
        "blue": (0, 70, 173), "yellow": (255, 213, 0)}
# Each face seen from outside: the axis and sign of its "up" and its "right" direction.
_VIEW = {"U": ((2, -1), (0, 1)), "D": ((2, 1), (0, 1)), "F": ((1, 1), (0, 1)), "B": ((1, 1), (0, -1)),
         "R": ((1, 1), (2, -1)), "L": ((1, 1), (2, 1))}
# Where each face's 2x2 block sits in the 6x8 net (row, column of its top-left sticker).
_NET = {"U": (0, 2), "L": (2, 0), "F": (2, 2), "R": (2, 4), "B": (2, 6), "D": (4, 2)}


def _reading_order(face: str) -> list[int]:
    """The face's sticker indices top-left, top-right, bottom-left, bottom-right, seen from outside it."""
    axis, sign = cube.FACES[face]
    (up_axis, up), (right_axis, right) = _VIEW[face]
    here = [i for i, (corner, a) in enumerate(cube.STICKERS) if a == axis and corner[axis] == sign]
    return sorted(here, key=lambda i: (cube.STICKERS[i][0][up_axis] != up, cube.STICKERS[i][0][right_axis] == right))


_ORDER = {face: _reading_order(face) for face in cube.FACES}


@dataclass(frozen=True)
class RubiksConfig:
    """Scrambles whose optimal solution is ``min_distance`` to ``max_distance`` face turns long."""

    min_distance: int = 1
    """Fewest turns an optimal solution of a level takes (at least 1)."""
    max_distance: int = 4
    """Most turns an optimal solution of a level takes (at most 11, the 2x2's largest distance)."""

    def __post_init__(self) -> None:
        require_ints(self, ("min_distance", "max_distance"))
        if not self.min_distance <= self.max_distance <= cube.GODS_NUMBER:
            raise ValueError(f"RubiksConfig needs 1 <= min_distance <= max_distance <= {cube.GODS_NUMBER}, got "
                             f"{self.min_distance} and {self.max_distance}")


@dataclass(frozen=True)
class CubeLevel:
    """A scrambled cube (stickers in ``cube.STICKERS`` order) and its optimal distance."""

    stickers: tuple[str, ...]
    distance: int


def generate(config: RubiksConfig, seed: int) -> CubeLevel:
    """A distance ``d`` drawn from the config's range, then random walks of ``d`` turns (never the same face
    twice in a row) until one ends exactly ``d`` turns from solved: a pure function of its arguments."""
    rng = np.random.default_rng(seed)
    while True:  # the config's checks keep this short; a server's time_limit still bounds it
        check_deadline()
        want = int(rng.integers(config.min_distance, config.max_distance + 1))
        moves: list[int] = []
        while len(moves) < want:
            move = int(rng.integers(len(cube.MOVES)))
            if not moves or move // 3 != moves[-1] // 3:
                moves.append(move)
        state = cube.scramble(moves)
        if cube.distance(state, want) == want:
            return CubeLevel(state, want)


class RubiksEnv(BaseGame):
    """A 2x2 Rubik's cube scrambled a known optimal number of turns from solved; solving it pays 1.

    Actions: ``Discrete(9)``: U+, U-, U2, R+, R-, R2, F+, F-, F2 (the down-back-left corner stays put,
    so these reach every state). Observation: the 24 stickers as colour indices, one row per face in
    the order U, L, F, R, B, D, each read top-left to bottom-right. The certificate holds an optimal
    solution, its length being the exact distance of an exhaustive search (``ragen_envs.rubiks.cube``).
    """

    metadata = {"render_modes": ["ansi", "rgb_array"], "render_fps": 4}
    name, config_class = "rubiks_2x2", RubiksConfig
    action_names = cube.MOVES
    aliases = {f"{m[0].lower()}{alias}": i for i, m in enumerate(cube.MOVES)
               for alias in {"+": (" cw",), "-": ("i", " ccw", "3"), "2": (" 2",)}[m[1]]}
    symbol_sets = {"letters": {"white": "W", "orange": "O", "green": "G", "red": "R", "blue": "B", "yellow": "Y"},
                   "faces": {COLORS[face]: face for face in cube.FACES}}
    rules = ("2x2 Rubik's cube: the cube is scrambled {min_distance} to {max_distance} turns from solved. Turn it "
             "until every face shows one colour.\n"
             "U, R and F name the up, right and front face. U+ turns the up face a quarter turn clockwise as seen "
             "looking at that face, U- a quarter turn counterclockwise, U2 a half turn; R and F likewise. Write "
             "U- (not U') for counterclockwise. The down, left and back faces never turn as a whole, so the "
             "down-back-left corner stays where it is.\n"
             "Solving the cube ends the game with reward 1.")
    legend = ("The cube unfolded: the up face on top; below it the left, front, right and back faces side by side; "
              "the down face at the bottom. Each face is seen from outside the cube. Colours: {white} white, "
              "{orange} orange, {green} green, {red} red, {blue} blue, {yellow} yellow.")
    tile_styles = (TileStyle((40, 40, 40)), *(TileStyle(rgb) for rgb in _RGB.values()))

    def setup(self) -> None:
        self.observation_space = spaces.Box(0, 5, (6, 4), np.int8)
        self.text_defaults = text_budget(max(10, 2 * self.config.max_distance))  # room to spare beyond optimal

    def new_level(self, seed: int) -> CubeLevel:
        return generate(self.config, seed)

    def certify(self, level: CubeLevel) -> Certificate:
        path = cube.solve(level.stickers)
        return Certificate(len(path), tuple(path), 1.0, {"distance": level.distance,
                                                         "solution": [cube.MOVES[m] for m in path]})

    def start(self, level: CubeLevel) -> None:
        self.stickers = level.stickers

    def move(self, action: int) -> Move:
        self.stickers = cube.turn(self.stickers, action)
        solved = self.stickers == cube.SOLVED
        return Move(float(solved), success=solved)

    def observe(self) -> np.ndarray:
        faces = list(cube.FACES)
        return np.array([[faces.index(self.stickers[i]) for i in _ORDER[f]] for f in faces], np.int8)

    def views(self, symbols: dict[str, str], base: int) -> dict[str, str]:
        face = {f: [symbols[COLORS[self.stickers[i]]] for i in _ORDER[f]] for f in cube.FACES}
        rows = ["   " + "".join(face["U"][:2]), "   " + "".join(face["U"][2:])]
        rows += [" ".join("".join(face[f][h:h + 2]) for f in "LFRB") for h in (0, 2)]
        rows += ["   " + "".join(face["D"][:2]), "   " + "".join(face["D"][2:])]
        names = {"U": "up", "L": "left", "F": "front", "R": "right", "B": "back", "D": "down"}
        coords = "; ".join(f"{names[f]}: {''.join(face[f][:2])}/{''.join(face[f][2:])}" for f in cube.FACES)
        return {"grid": "\n".join(rows), "coords": coords}

    def state(self) -> dict[str, Any]:
        return {"faces": {f: "".join(self.stickers[i] for i in _ORDER[f]) for f in cube.FACES},
                "solved": self.stickers == cube.SOLVED}

    def plan(self) -> list[int]:
        return cube.solve(self.stickers) or [0]

    @classmethod
    def from_text(cls, action_names: Sequence[str], observation: str, intro: str) -> RubiksEnv | None:
        """The cube a chat shows (the unfolded net in the default letters), rebuilt as a level to plan on, or
        None when the actions are not the cube's. ValueError when the net is not a scrambled 2x2 cube
        that these turns can solve."""
        if tuple(action_names) != cls.action_names:
            return None
        letters = next(iter(cls.symbol_sets.values()))
        face_of = {letters[color]: face for face, color in COLORS.items()}
        rows = [row.split() for row in grid_lines(observation, set(face_of) | {" "})]
        if [len(row) for row in rows] != [1, 1, 4, 4, 1, 1] or any(len(part) != 2 for row in rows for part in row):
            raise ValueError("the state is not the cube's unfolded net")
        net = {"U": rows[0][0] + rows[1][0], "D": rows[4][0] + rows[5][0],
               **{f: rows[2][k] + rows[3][k] for k, f in enumerate("LFRB")}}
        stickers = [""] * len(cube.STICKERS)
        for f, order in _ORDER.items():
            for i, letter in zip(order, net[f]):
                stickers[i] = face_of[letter]
        try:  # a net no turns reach (a corner twisted alone, impossible colours) has no solution
            path = cube.solve(tuple(stickers))
        except (KeyError, StopIteration, TypeError):
            path = None
        if not path:
            raise ValueError("the net shown is not a scrambled cube that U, R and F turns solve")
        env = cls()
        env.reset(options={"level": CubeLevel(tuple(stickers), len(path))})
        return env

    def tiles(self) -> np.ndarray:
        codes = np.zeros((6, 8), np.int64)
        kinds = list(_RGB)
        for f, (row, col) in _NET.items():
            for k, i in enumerate(_ORDER[f]):
                codes[row + k // 2, col + k % 2] = 1 + kinds.index(COLORS[self.stickers[i]])
        return codes
