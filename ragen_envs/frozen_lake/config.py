"""Settings of a FrozenLake game: map size and density, slipping, and the certificate's step limit."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

from ragen_envs.config_dicts import config_from_dict

#: Largest lake (in cells) whose no-step-limit optimum is certified when ``certify_unlimited`` is None.
UNLIMITED_AUTO_CELLS = 256


@dataclass(frozen=True)
class FrozenLakeConfig:
    """Everything that decides which lakes are generated and how the ice behaves."""

    height: int = 4
    """Rows of the lake."""
    width: int = 4
    """Columns of the lake."""
    p_frozen: float = 0.8
    """Chance that a cell is frozen (safe) rather than a hole (Gymnasium's default); in (0, 1]."""
    is_slippery: bool = True
    """True: a move may slip sideways (see ``success_rate``); False: every move goes where it was meant to."""
    success_rate: float = 1.0 / 3.0
    """Chance a slippery move goes the intended way (Gymnasium's default); in (0, 1]."""
    horizon: int = 10
    """Step limit of the certificate's optimal success probability (the text protocol's budget)."""
    certify_unlimited: bool | None = None
    """Also certify the optimum without a step limit; None: only on lakes of at most UNLIMITED_AUTO_CELLS
    (256) cells, since its exact solve grows with the cube of the area (about 0.1 s at 32x32, seconds at 64x64)."""
    min_path_length: int = 1
    """Reject lakes whose shortest start-to-goal path is shorter than this."""
    max_attempts: int = 10_000
    """Random maps tried before generation gives up with an error."""

    def __post_init__(self) -> None:
        for name in ("height", "width", "horizon", "min_path_length", "max_attempts"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int):
                raise TypeError(f"FrozenLakeConfig.{name} must be an int, got {value!r}")
        if self.height < 1 or self.width < 1 or self.height * self.width < 2:
            raise ValueError(
                f"FrozenLakeConfig needs at least two cells (a start and a goal); got height={self.height}, "
                f"width={self.width}"
            )
        if not isinstance(self.p_frozen, (int, float)) or not 0.0 < self.p_frozen <= 1.0:
            raise ValueError(
                f"FrozenLakeConfig.p_frozen must lie in (0, 1]; got {self.p_frozen!r} (with 0 every cell would be a "
                "hole and no path could exist)"
            )
        if not isinstance(self.is_slippery, bool):
            raise TypeError(f"FrozenLakeConfig.is_slippery must be a bool, got {self.is_slippery!r}")
        if self.certify_unlimited is not None and not isinstance(self.certify_unlimited, bool):
            raise TypeError(
                f"FrozenLakeConfig.certify_unlimited must be a bool or None, got {self.certify_unlimited!r}"
            )
        if not isinstance(self.success_rate, (int, float)) or not 0.0 < self.success_rate <= 1.0:
            raise ValueError(
                f"FrozenLakeConfig.success_rate must lie in (0, 1]; got {self.success_rate!r} (with 0 the agent "
                "could never move the way it means to)"
            )
        if self.horizon < 1:
            raise ValueError(f"FrozenLakeConfig.horizon must be at least 1, got {self.horizon}")
        if not 1 <= self.min_path_length <= self.height * self.width - 1:
            raise ValueError(
                f"FrozenLakeConfig.min_path_length must lie in 1..{self.height * self.width - 1} for a "
                f"{self.height}x{self.width} lake, got {self.min_path_length}"
            )
        if self.max_attempts < 1:
            raise ValueError(f"FrozenLakeConfig.max_attempts must be at least 1, got {self.max_attempts}")

    @classmethod
    def from_dict(cls, values: Mapping[str, Any]) -> FrozenLakeConfig:
        """Build a config from a dict of its fields; unknown keys raise a ValueError naming them."""
        return config_from_dict(cls, values)

    @property
    def certifies_unlimited(self) -> bool:
        """Whether certificates include the no-step-limit optimum (``certify_unlimited``, or the size rule if None)."""
        if self.certify_unlimited is None:
            return self.height * self.width <= UNLIMITED_AUTO_CELLS
        return self.certify_unlimited

    def to_dict(self) -> dict[str, Any]:
        """JSON-friendly form."""
        return asdict(self)
