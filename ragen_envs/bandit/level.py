"""The arms of one Bandit game and their pure, seeded generator."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ragen_envs.bandit.config import BanditConfig
from ragen_envs.bandit.names import NAME_POOLS
from ragen_envs.certificate import Certificate


@dataclass(frozen=True)
class Arm:
    """An arm that pays ``payout`` with probability ``pay_prob`` and 0 otherwise."""

    name: str
    payout: float
    pay_prob: float
    low_risk: bool

    @property
    def expected_reward(self) -> float:
        """Mean reward of one pull."""
        return self.payout * self.pay_prob

    @property
    def variance(self) -> float:
        """Variance of the reward of one pull."""
        return self.payout**2 * self.pay_prob * (1.0 - self.pay_prob)

    def to_dict(self) -> dict[str, Any]:
        """JSON form, as in ``state_dict`` and the certificate."""
        return {
            "name": self.name,
            "expected_reward": self.expected_reward,
            "variance": self.variance,
            "low_risk": self.low_risk,
            "payout": self.payout,
            "pay_prob": self.pay_prob,
        }


@dataclass(frozen=True)
class BanditLevel:
    """The arms in the order they are shown (action ``i`` pulls ``arms[i]``)."""

    arms: tuple[Arm, ...]

    @property
    def best_arms(self) -> tuple[int, ...]:
        """Indices of every arm with the highest expected reward."""
        means = [a.expected_reward for a in self.arms]
        top = max(means)
        return tuple(i for i, m in enumerate(means) if np.isclose(m, top, rtol=0.0, atol=1e-12))

    def level_key(self) -> bytes:
        """The arm names with their roles as canonical bytes, without the shown order: what a model could
        learn about a name ("Owl is the safe arm") carries over to either order. Decides the split."""
        low = [a.name for a in self.arms if a.low_risk]
        high = sorted(a.name for a in self.arms if not a.low_risk)
        return ("bandit\nlow=" + ",".join(low) + "\nhigh=" + ",".join(high)).encode()


def generate(config: BanditConfig, seed: int) -> BanditLevel:
    """The arms for ``seed``: names drawn from the config's pool, payoffs from the config, order shuffled."""
    if not isinstance(config, BanditConfig):
        raise TypeError(f"generate needs a BanditConfig, got {type(config).__name__}")
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ValueError(f"seed must be a non-negative int, got {seed!r}")
    rng = np.random.default_rng(int(seed))
    risky = config.num_arms - 1
    if config.arm_names is not None:
        low_name, high_names = config.arm_names[0], list(config.arm_names[1:])
    else:
        pool = NAME_POOLS[config.name_set]
        low_name = str(pool.low_risk[rng.integers(len(pool.low_risk))])
        high_names = [str(pool.high_risk[i]) for i in rng.choice(len(pool.high_risk), size=risky, replace=False)]
    arms = [Arm(low_name, float(config.low_risk_reward), 1.0, True)]
    arms += [
        Arm(name, float(config.high_risk_reward), config.high_risk_prob * k / risky, False)
        for k, name in zip(range(1, risky + 1), high_names)
    ]
    order = rng.permutation(len(arms)) if config.shuffle_arms else np.arange(len(arms))
    return BanditLevel(tuple(arms[i] for i in order))


def certificate(level: BanditLevel) -> Certificate:
    """One pull of a best arm wins for sure (success is choosing a best arm); the extras hold each arm's
    expected reward and variance (in shown order) and which arms are best."""
    best = level.best_arms
    return Certificate(
        optimal_steps=1,
        optimal_actions=(best[0],),
        optimal_success_probability=1.0,
        extras={
            "arms": [a.to_dict() for a in level.arms],
            "best_arms": list(best),
            "best_arm_names": [level.arms[i].name for i in best],
            "best_expected_reward": level.arms[best[0]].expected_reward,
            "shortest_path_length": 1,
        },
    )
