"""Settings of a Bandit game: arm names, payoffs and shuffling."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

from ragen_envs.bandit.names import NAME_POOLS
from ragen_envs.config_dicts import config_from_dict


@dataclass(frozen=True)
class BanditConfig:
    """One low-risk arm with a fixed payout and ``num_arms - 1`` high-risk arms that pay all or nothing.

    High-risk arm ``k`` (k = 1..num_arms-1) pays ``high_risk_reward`` with probability
    ``high_risk_prob * k / (num_arms - 1)``, so with two arms it is RAGEN's risky arm and with more
    the extra arms are weaker versions of it.
    """

    name_set: str = "ragen"
    """Pool the arm names are drawn from: ``ragen`` (Phoenix/Dragon), ``heldout`` or ``reversed``."""
    num_arms: int = 2
    """Arms in all: one low-risk arm and ``num_arms - 1`` high-risk arms."""
    low_risk_reward: float = 0.1
    """What the low-risk arm pays on every pull (RAGEN's code uses 0.1, its paper 0.15)."""
    high_risk_reward: float = 1.0
    """What a high-risk arm pays when it pays (otherwise 0)."""
    high_risk_prob: float = 0.25
    """How often the riskiest arm pays; in [0, 1]."""
    arm_names: tuple[str, ...] | None = None
    """Fixed names instead of a pool: the low-risk arm first, then the high-risk arms; None: draw from ``name_set``."""
    shuffle_arms: bool = True
    """Show the arms in a new random order every reset; False keeps the low-risk arm first."""
    reveal_payoffs: bool = False
    """State each arm's payout in the rules (RAGEN does not)."""

    def __post_init__(self) -> None:
        if isinstance(self.num_arms, bool) or not isinstance(self.num_arms, int) or self.num_arms < 2:
            raise ValueError(f"BanditConfig.num_arms must be an int of at least 2, got {self.num_arms!r}")
        for name in ("low_risk_reward", "high_risk_reward", "high_risk_prob"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or value != value:
                raise TypeError(f"BanditConfig.{name} must be a number, got {value!r}")
        if not 0.0 <= self.high_risk_prob <= 1.0:
            raise ValueError(f"BanditConfig.high_risk_prob must lie in [0, 1], got {self.high_risk_prob}")
        for name in ("shuffle_arms", "reveal_payoffs"):
            if not isinstance(getattr(self, name), bool):
                raise TypeError(f"BanditConfig.{name} must be a bool, got {getattr(self, name)!r}")
        if self.arm_names is not None:
            names = tuple(self.arm_names)
            object.__setattr__(self, "arm_names", names)
            if len(names) != self.num_arms:
                raise ValueError(f"BanditConfig.arm_names has {len(names)} names but num_arms={self.num_arms}")
            if any(not isinstance(n, str) or not n.strip() for n in names):
                raise ValueError(f"BanditConfig.arm_names must be non-empty strings, got {names!r}")
            if len({n.strip().lower() for n in names}) != len(names):
                raise ValueError(f"BanditConfig.arm_names must differ (ignoring case), got {names!r}")
            return
        if self.name_set not in NAME_POOLS:
            raise ValueError(f"unknown BanditConfig.name_set {self.name_set!r}; choose one of {sorted(NAME_POOLS)}")
        pool = NAME_POOLS[self.name_set]
        if len(pool.high_risk) < self.num_arms - 1:
            raise ValueError(
                f"name_set {self.name_set!r} has {len(pool.high_risk)} high-risk name(s) but num_arms={self.num_arms} "
                f"needs {self.num_arms - 1}; pass arm_names or choose another name_set"
            )

    @classmethod
    def from_dict(cls, values: Mapping[str, Any]) -> BanditConfig:
        """Build a config from a dict of its fields; unknown keys raise a ValueError naming them."""
        return config_from_dict(cls, values)

    @property
    def name_combinations(self) -> int:
        """How many different sets of arm names (with their roles) this config can draw: 1 with fixed
        ``arm_names`` or RAGEN's one-name pools, ``len(low_risk) * C(len(high_risk), num_arms - 1)`` otherwise."""
        if self.arm_names is not None:
            return 1
        pool = NAME_POOLS[self.name_set]
        return len(pool.low_risk) * math.comb(len(pool.high_risk), self.num_arms - 1)

    def to_dict(self) -> dict[str, Any]:
        """JSON-friendly form."""
        values = asdict(self)
        if values["arm_names"] is not None:
            values["arm_names"] = list(values["arm_names"])
        return values
