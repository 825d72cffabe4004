"""StarPO-S variance filtering: keep the groups whose raw rewards disagree most.

Each group is one initial state played ``N`` times. A group's spread is the standard deviation of
its members' *raw* episode rewards, computed before any normalisation. (RAGEN measures it after
GRPO's per-group normalisation, which gives every group with any spread a std of about 1, so its
filter barely distinguishes groups under GRPO.)

A group whose members all scored the same carries no learning signal under GRPO (every advantage
is 0) and only a critic signal under GAE. Such groups are never picked by the spread ranking, which
means the hardest states, the ones every rollout fails, never train. The remedy here is a quota:
``zero_spread_quota`` of the groups may be filled with zero-spread groups, lowest reward first, so
that under GAE the critic learns those states are bad and the policy gets a nonzero advantage there.
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
    num_by_spread: int  # kept for their spread
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
    tol: float = 1e-8,
) -> FilterResult:
    """Keep the top ``keep_ratio`` of groups by raw reward spread, plus an optional zero-spread quota.

    ``keep_ratio=1`` keeps every group (no filter, StarPO). Otherwise ``max(1, round(keep_ratio * P))``
    groups are ranked by spread (ties: lower index first) and only those with spread above ``tol``
    are kept, so fewer may survive when most groups agree. Then up to ``ceil(zero_spread_quota * P)``
    zero-spread groups are added, lowest mean reward first (the hardest states).
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
    by_spread = [int(g) for g in ranked[:budget] if spreads[g] > tol]

    quota = math.ceil(zero_spread_quota * num_groups)
    flat = [g for g in range(num_groups) if spreads[g] <= tol]
    means = np.asarray(rewards, dtype=np.float64).mean(axis=1)
    flat.sort(key=lambda g: (means[g], g))
    by_quota = flat[:quota]

    kept = tuple(sorted(by_spread + by_quota))
    return FilterResult(kept, tuple(spreads.tolist()), len(by_spread), len(by_quota))
