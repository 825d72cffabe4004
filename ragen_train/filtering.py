"""StarPO-S variance filtering: keep the groups whose raw rewards disagree most.

Each group is one initial state played ``N`` times. A group's spread is the standard deviation of
its members' *raw* episode rewards, computed before any normalisation. (RAGEN measures it after
GRPO's per-group normalisation, which gives every group with any spread a std of about 1, so its
filter barely distinguishes groups under GRPO.)

A group whose members all scored the same carries no learning signal under GRPO (every advantage
is 0) and only a critic signal under GAE. As in RAGEN, the top fraction is kept whatever the
spreads, so when fewer groups than the budget disagree, zero-spread groups fill it (lowest index
first) and a step where no group disagrees still trains the critic. ``drop_zero_spread=True``
keeps only groups with spread instead, so fewer may survive and a step with no spread trains
nothing. Either way the hardest states, the ones every rollout fails, are rarely picked; the
remedy here is a quota: ``zero_spread_quota`` of the groups may be filled with further zero-spread
groups, lowest reward first, so that under GAE the critic learns those states are bad and the
policy gets a nonzero advantage there.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class FilterResult:
    """Which groups survive the filter, and why."""

    kept: tuple[int, ...]  # group indices, ascending
    spreads: tuple[float, ...]  # raw reward std of every group (population std, ddof=0)
    num_by_spread: int  # kept by their rank in the spread ordering
    num_by_quota: int  # zero-spread groups kept through the quota

    @property
    def kept_fraction(self) -> float:
        """Fraction of groups kept."""
        return len(self.kept) / len(self.spreads)


def group_spreads(rewards: np.ndarray) -> np.ndarray:
    """Population standard deviation of each row of ``rewards`` (``[P groups, N members]``)."""
    rewards = np.asarray(rewards, dtype=np.float64)
    if rewards.ndim != 2 or rewards.shape[0] == 0 or rewards.shape[1] == 0:
        raise ValueError(f"rewards must be a non-empty [groups, members] array, got shape {rewards.shape}")
    if not np.all(np.isfinite(rewards)):
        raise ValueError("rewards contain NaN or infinity")
    return rewards.std(axis=1)


def select_groups(
    rewards: np.ndarray,
    keep_ratio: float = 0.25,
    zero_spread_quota: float = 0.0,
    *,
    drop_zero_spread: bool = False,
    tol: float = 1e-8,
) -> FilterResult:
    """Keep the top ``keep_ratio`` of groups by raw reward spread, plus an optional zero-spread quota.

    ``keep_ratio=1`` keeps every group (no filter, StarPO). Otherwise the first
    ``max(1, round(keep_ratio * P))`` groups ranked by spread (ties: lower index first) are kept,
    as RAGEN does; with ``drop_zero_spread`` those with spread at most ``tol`` are dropped from
    them, so fewer may survive when most groups agree. Then up to ``ceil(zero_spread_quota * P)``
    zero-spread groups not yet kept are added, lowest mean reward first (the hardest states).
    """
    spreads = group_spreads(rewards)
    num_groups = len(spreads)
    if not 0.0 < keep_ratio <= 1.0:
        raise ValueError(f"keep_ratio must be in (0, 1], got {keep_ratio!r}")
    if not 0.0 <= zero_spread_quota <= 1.0:
        raise ValueError(f"zero_spread_quota must be in [0, 1], got {zero_spread_quota!r}")
    if keep_ratio == 1.0:
        return FilterResult(tuple(range(num_groups)), tuple(spreads.tolist()), num_groups, 0)

    budget = max(1, int(round(keep_ratio * num_groups)))
    # Stable sort on -spread keeps the lower index first among equal spreads.
    ranked = np.argsort(-spreads, kind="stable")
    top = [int(g) for g in ranked[:budget]]
    by_spread = [g for g in top if spreads[g] > tol or not drop_zero_spread]

    quota = math.ceil(zero_spread_quota * num_groups)
    flat = [g for g in range(num_groups) if spreads[g] <= tol and g not in by_spread]
    means = np.asarray(rewards, dtype=np.float64).mean(axis=1)
    flat.sort(key=lambda g: (means[g], g))
    by_quota = flat[:quota]

    kept = tuple(sorted(by_spread + by_quota))
    return FilterResult(kept, tuple(spreads.tolist()), len(by_spread), len(by_quota))
