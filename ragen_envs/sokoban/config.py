"""Settings of a Sokoban game: room size, number of boxes, difficulty band, search budget, rewards."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

from ragen_envs.config_dicts import coerce_config, config_from_dict


@dataclass(frozen=True)
class SokobanConfig:
    """Everything that decides which rooms are generated and how moves are rewarded.

    The difficulty band bounds the push count of each level's certificate: the fewest pushes among
    the solutions with the fewest moves.
    """

    height: int = 6
    """Rows, border walls included (RAGEN's SimpleSokoban: 6x6)."""
    width: int = 6
    """Columns, border walls included."""
    num_boxes: int = 1
    """Boxes, and as many targets."""
    min_pushes: int = 1
    """Reject levels whose certificate has fewer pushes."""
    max_pushes: int | None = None
    """Reject levels whose certificate has more pushes; None: no bound."""
    max_attempts: int = 200
    """Rooms tried before generation gives up with an error."""
    search_budget: int = 8_000
    """Player/box states the reverse search settles per room (bounds time)."""
    start_selection: str = "hardest"
    """``hardest``: the start with the most pushes the search found (gym-sokoban's choice); ``spread``: a
    push count drawn uniformly from those found."""
    walk_steps: int | None = None
    """Random-walk steps that carve the room; None: 1.7 * (height + width)."""
    p_change_direction: float = 0.35
    """Chance that the carving walk turns at each step (gym-sokoban's)."""
    step_reward: float = -0.1
    """Reward of every step, valid or not (RAGEN / gym-sokoban)."""
    box_on_target_reward: float = 1.0
    """Reward of a push that puts a box on a target."""
    box_off_target_reward: float = -1.0
    """Reward of a push that takes a box off a target."""
    success_reward: float = 10.0
    """Reward of the step that places the last box."""
    max_actions_per_episode: int | None = None
    """Default text-protocol action budget (see ``text_budget``); None: RAGEN's 10 for generated levels,
    or the longest certified optimum of a level set."""
    levels: str | None = None
    """A level file or directory to play instead of generating (see ``level_files``); None: generate."""
    levels_limit: int | None = None
    """Read and certify only the first N levels of ``levels``; None: all of them."""

    def __post_init__(self) -> None:
        for name in ("height", "width", "num_boxes", "min_pushes", "max_attempts", "search_budget"):
            _check_int(name, getattr(self, name))
        for name in ("max_pushes", "walk_steps", "max_actions_per_episode", "levels_limit"):
            if getattr(self, name) is not None:
                _check_int(name, getattr(self, name))
        if self.height < 3 or self.width < 3:
            raise ValueError(
                f"SokobanConfig needs at least 3x3 cells (a border of walls around the floor); got "
                f"height={self.height}, width={self.width}"
            )
        if self.num_boxes < 1:
            raise ValueError(f"SokobanConfig.num_boxes must be at least 1, got {self.num_boxes}")
        interior = (self.height - 2) * (self.width - 2)
        if self.num_boxes + 1 > interior:
            raise ValueError(
                f"SokobanConfig asks for more boxes than the floor can hold: {self.num_boxes} boxes and the "
                f"player need {self.num_boxes + 1} cells, but a {self.height}x{self.width} room has only "
                f"{interior} inside its border"
            )
        if self.min_pushes < 1:
            raise ValueError(f"SokobanConfig.min_pushes must be at least 1, got {self.min_pushes}")
        if self.max_pushes is not None and self.max_pushes < self.min_pushes:
            raise ValueError(
                f"SokobanConfig.max_pushes ({self.max_pushes}) is below min_pushes ({self.min_pushes}): "
                "the difficulty band is empty"
            )
        if self.max_attempts < 1 or self.search_budget < 1:
            raise ValueError("SokobanConfig.max_attempts and search_budget must be at least 1")
        for name in ("max_actions_per_episode", "levels_limit"):
            if getattr(self, name) is not None and getattr(self, name) < 1:
                raise ValueError(f"SokobanConfig.{name} must be at least 1 or None, got {getattr(self, name)}")
        if self.levels is not None and (not isinstance(self.levels, str) or not self.levels.strip()):
            raise TypeError(f"SokobanConfig.levels must be a path (str) or None, got {self.levels!r}")
        if self.levels_limit is not None and self.levels is None:
            raise ValueError("SokobanConfig.levels_limit limits a level set; give levels= too")
        if self.walk_steps is not None and self.walk_steps < 1:
            raise ValueError(f"SokobanConfig.walk_steps must be at least 1, got {self.walk_steps}")
        if self.start_selection not in ("hardest", "spread"):
            raise ValueError(
                f"SokobanConfig.start_selection must be 'hardest' or 'spread', got {self.start_selection!r}"
            )
        p = self.p_change_direction
        if isinstance(p, bool) or not isinstance(p, (int, float)) or not 0.0 <= p <= 1.0:
            raise ValueError(f"SokobanConfig.p_change_direction must lie in [0, 1], got {p!r}")
        for name in ("step_reward", "box_on_target_reward", "box_off_target_reward", "success_reward"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise TypeError(f"SokobanConfig.{name} must be a number, got {value!r}")

    @property
    def carving_steps(self) -> int:
        """Steps of the room-carving walk (gym-sokoban's rule of 1.7 x (height + width) unless set)."""
        return self.walk_steps if self.walk_steps is not None else int(1.7 * (self.height + self.width))

    @classmethod
    def from_dict(cls, values: Mapping[str, Any]) -> SokobanConfig:
        """Build a config from a dict of its fields; unknown keys raise a ValueError naming them."""
        return config_from_dict(cls, values)

    @classmethod
    def coerce(cls, config: SokobanConfig | Mapping[str, Any] | None) -> SokobanConfig:
        """Accept a config, a dict of its fields, or None (the defaults)."""
        return coerce_config(cls, config)

    def to_dict(self) -> dict[str, Any]:
        """JSON-friendly form of every field."""
        return asdict(self)


def _check_int(name: str, value: Any) -> None:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"SokobanConfig.{name} must be an int, got {value!r}")
