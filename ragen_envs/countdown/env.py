"""Countdown as a text game: combine the given numbers with + - * / to hit the target, in one answer."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from gymnasium import spaces

from ragen_envs.base_game import BaseGame, Move
from ragen_envs.certificate import Certificate
from ragen_envs.config_dicts import require_ints
from ragen_envs.countdown.expressions import evaluate, templates, write
from ragen_envs.deadline import check_deadline
from ragen_envs.rendering import TileStyle

#: How the prompt lists the actions (every expression would be too many to list).
ACTIONS_TEXT = "one expression that uses each of {numbers} exactly once with + - * / and parentheses"


@dataclass(frozen=True)
class CountdownConfig:
    """``count`` numbers from 1 to ``max_number`` and a target from 1 to ``max_target`` that they can make."""

    count: int = 3
    """How many numbers a level gives (2 to 4); the answer uses each of them exactly once."""
    max_number: int = 20
    """Largest number a level gives."""
    max_target: int = 100
    """Largest target."""

    def __post_init__(self) -> None:
        require_ints(self, ("count", "max_number", "max_target"))
        if not 2 <= self.count <= 4:
            raise ValueError(f"CountdownConfig.count must be 2, 3 or 4, got {self.count}")


@dataclass(frozen=True)
class CountdownLevel:
    """The numbers (ascending), the target, and the template of one solution."""

    numbers: tuple[int, ...]
    target: int
    solution: int


#: Draws of numbers before :func:`generate` gives up on a config (the presets' levels take one or two).
MAX_DRAWS = 10_000


def generate(config: CountdownConfig, seed: int) -> CountdownLevel:
    """Numbers drawn at random, then random templates until one gives a whole target in ``1..max_target``:
    only solvable levels, and a pure function of the arguments. A RuntimeError after :data:`MAX_DRAWS` draws
    (a config whose numbers can hardly make a small target)."""
    rng = np.random.default_rng(seed)
    shapes = templates(config.count)
    for _ in range(MAX_DRAWS):
        check_deadline()
        numbers = tuple(sorted(int(n) for n in rng.integers(1, config.max_number + 1, size=config.count)))
        for _ in range(20):
            choice = int(rng.integers(len(shapes)))
            value = evaluate(shapes[choice], numbers)
            if value is not None and value.denominator == 1 and 1 <= value <= config.max_target:
                return CountdownLevel(numbers, int(value), choice)
    raise RuntimeError(f"no Countdown level with a whole target in 1..{config.max_target} found in {MAX_DRAWS:,} "
                       f"draws of {config.count} numbers up to {config.max_number}; raise max_target or lower "
                       "max_number")


class CountdownEnv(BaseGame):
    """Reach the target with the given numbers, each used once, and + - * / (RAGEN's Countdown).

    One action ends the episode: action ``i`` is template ``i`` of ``expressions.templates(count)``
    written with the level's numbers (``action_names``, new every reset). Reward 1 when the equation
    hits the target, else 0; ``action_is_valid`` is False for a division by zero. Observation: the
    numbers then the target. The certificate holds a solution (every level has one by construction).
    """

    metadata = {"render_modes": ["ansi", "rgb_array"], "render_fps": 4}
    name, config_class = "countdown", CountdownConfig
    rules = ("Countdown: combine the given numbers with + - * / and parentheses so that the result equals the "
             "target. Use every number exactly once; division is exact (fractions allowed on the way).\n"
             "Your answer is the expression alone, without '= target', e.g. (7 - 2) * 3. Multiply with * or x. "
             "Write parentheses only where they change the order (a - (b + c), not (a * b) + c).\n"
             "You answer once: a correct expression pays 1, any other expression 0.")
    legend = "The state gives the numbers and the target."
    tile_styles = (TileStyle((225, 225, 225), "square", (60, 110, 200)), TileStyle((250, 210, 60), "ring", (180, 60, 40)))
    text_defaults = {"max_turns": 1, "max_actions_per_turn": 1, "max_actions_per_episode": 1}

    def setup(self) -> None:
        self.observation_space = spaces.Box(0, max(self.config.max_number, self.config.max_target),
                                            (self.config.count + 1,), np.int64)
        self.shapes = templates(self.config.count)
        self.action_space = spaces.Discrete(len(self.shapes))
        self._names: tuple[str, ...] | None = None

    @property
    def action_names(self) -> tuple[str, ...]:  # type: ignore[override]
        """Every template written with this level's numbers (placeholder digits before the first reset)."""
        if self._names is None:
            numbers = self.level.numbers if self.level is not None else tuple(range(1, self.config.count + 1))
            self._names = tuple(write(t, numbers) for t in self.shapes)
        return self._names

    def actions_text(self) -> str:
        """What the prompt lists instead of every expression."""
        numbers = ", ".join(map(str, self.level.numbers)) if self.level is not None else "the numbers"
        return ACTIONS_TEXT.format(numbers=numbers)

    def action_aliases(self) -> dict[str, int]:
        """Each expression also without spaces and with x for *."""
        found: dict[str, int] = {}
        for i, t in enumerate(self.shapes):
            for space, times in ((" ", "*"), ("", "*"), (" ", "x"), ("", "x")):
                found.setdefault(write(t, self.level.numbers, space, times) if self.level else self.action_names[i], i)
        return found

    def new_level(self, seed: int) -> CountdownLevel:
        return generate(self.config, seed)

    def certify(self, level: CountdownLevel) -> Certificate:
        return Certificate(1, (level.solution,), 1.0, {"numbers": list(level.numbers), "target": level.target,
                                                       "solution": write(self.shapes[level.solution], level.numbers)})

    def start(self, level: CountdownLevel) -> None:
        self._names, self.answer, self.value = None, None, None

    def move(self, action: int) -> Move:
        value = evaluate(self.shapes[action], self.level.numbers)
        self.answer, self.value = action, value
        won = value == self.level.target
        return Move(float(won), success=won, over=True, valid=value is not None)

    def observe(self) -> np.ndarray:
        return np.array([*self.level.numbers, self.level.target], np.int64)

    def views(self, symbols: dict[str, str], base: int) -> dict[str, str]:
        text = f"Numbers: {', '.join(map(str, self.level.numbers))}. Target: {self.level.target}."
        if self.answer is not None:
            shown = "undefined (division by zero)" if self.value is None else f"{self.value}"
            text += f" You answered {write(self.shapes[self.answer], self.level.numbers)} = {shown}."
        return {"grid": text}

    def state(self) -> dict[str, Any]:
        return {"numbers": list(self.level.numbers), "target": self.level.target,
                "answer": None if self.answer is None else write(self.shapes[self.answer], self.level.numbers)}

    def plan(self) -> list[int]:
        return [self.level.solution]

    def tiles(self) -> np.ndarray:
        return np.array([[0] * self.config.count + [1]], np.int64)

    @classmethod
    def from_text(cls, action_names: Sequence[str], observation: str, intro: str) -> CountdownEnv | None:
        """The numbers and target a chat shows, rebuilt as a level (its solution the first expression that
        hits the target) to plan on, or None when the actions the chat lists are not Countdown's.
        ValueError when the state is not shown or no expression reaches the target."""
        listed = re.escape(ACTIONS_TEXT).replace(re.escape("{numbers}"), r"[\d, ]+")
        if re.fullmatch(listed, ", ".join(action_names)) is None:
            return None
        shown = re.match(r"Numbers: (\d+(?:, \d+)*)\. Target: (\d+)\.", observation.strip())
        if shown is None:
            raise ValueError("the state does not show Countdown's numbers and target")
        numbers, target = tuple(sorted(int(n) for n in shown.group(1).split(", "))), int(shown.group(2))
        config = CountdownConfig(count=len(numbers), max_number=max(numbers), max_target=max(target, 1))
        solution = next((i for i, t in enumerate(templates(config.count)) if evaluate(t, numbers) == target), None)
        if solution is None:
            raise ValueError(f"no expression of {list(numbers)} makes {target}")
        env = cls(config=config)
        env.reset(options={"level": CountdownLevel(numbers, target, solution)})
        return env
