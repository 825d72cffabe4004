"""StarPO-S variance filtering: keep the groups whose raw rewards disagree most.

Each group is one initial state played ``N`` times. A group's spread is the standard deviation of
its members' *raw* episode rewards, computed before any normalisation. (RAGEN measures it after
GRPO's per-group normalisation, which gives every group with any spread a std of about 1, so its
filter barely distinguishes groups under GRPO.)

Three strategies pick groups by spread (:data:`FILTER_STRATEGIES`, RAGEN's names):

- ``top_k``: a fixed fraction of the groups, largest spread first (RAGEN's StarPO-S filter);
- ``top_p``: the fewest groups, largest spread first, whose spreads add up to a share ``p`` of the
  total spread, so a batch where a few groups carry the signal keeps only those;
- ``min_p``: every group whose spread is at least ``min_p`` times the largest spread.

A group whose members all scored the same carries no learning signal under GRPO (every advantage
is 0) and only a critic signal under GAE. As in RAGEN, ``top_k`` keeps its fraction whatever the
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
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

FILTER_STRATEGIES = ("top_k", "top_p", "min_p")


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
    """Population standard deviation of each row of ``rewards`` (``[P groups, N members]``); exactly 0 for a row
    whose members all agree."""
    rewards = np.asarray(rewards, dtype=np.float64)
    if rewards.ndim != 2 or rewards.shape[0] == 0 or rewards.shape[1] == 0:
        raise ValueError(f"rewards must be a non-empty [groups, members] array, got shape {rewards.shape}")
    if not np.all(np.isfinite(rewards)):
        raise ValueError("rewards contain NaN or infinity")
    spreads = rewards.std(axis=1)
    # Rounding in the mean gave six rewards of 0.7 a spread of 1e-16, ranking that group above exact zeros.
    spreads[np.ptp(rewards, axis=1) == 0] = 0.0
    return spreads


def top_k_groups(spreads: np.ndarray, ratio: float) -> list[int]:
    """The first ``max(1, round(ratio * P))`` groups ranked by spread, largest first (ties: lower
    index first); all of them when ``ratio`` is 1."""
    if not 0.0 < ratio <= 1.0:
        raise ValueError(f"keep_ratio must be in (0, 1], got {ratio!r}")
    budget = len(spreads) if ratio == 1.0 else max(1, int(round(ratio * len(spreads))))
    return [int(g) for g in np.argsort(-spreads, kind="stable")[:budget]]


def top_p_groups(spreads: np.ndarray, p: float) -> list[int]:
    """The fewest groups, largest spread first (ties: lower index first), whose spreads sum to at
    least ``p`` x the total spread; at least one group (the first by index when no group has spread)."""
    if not 0.0 < p <= 1.0:
        raise ValueError(f"top_p must be in (0, 1], got {p!r}")
    ranked = np.argsort(-spreads, kind="stable")
    mass = np.cumsum(spreads[ranked])  # the total is mass[-1], summed in the same order, so p = 1 is reached exactly
    count = int(np.searchsorted(mass, p * mass[-1], side="left")) + 1
    return [int(g) for g in ranked[:count]]


def min_p_groups(spreads: np.ndarray, min_p: float) -> list[int]:
    """Every group whose spread is at least ``min_p`` x the largest spread (all of them when no
    group has spread)."""
    if not 0.0 <= min_p <= 1.0:
        raise ValueError(f"min_p must be in [0, 1], got {min_p!r}")
    return [g for g in range(len(spreads)) if spreads[g] >= min_p * spreads.max()]


def select_groups(
    rewards: np.ndarray,
    keep_ratio: float = 0.25,
    zero_spread_quota: float = 0.0,
    *,
    strategy: str = "top_k",
    top_p: float = 1.0,
    min_p: float = 0.0,
    drop_zero_spread: bool = False,
    tol: float = 1e-8,
) -> FilterResult:
    """Keep the groups ``strategy`` picks by raw reward spread, plus an optional zero-spread quota.

    ``top_k`` keeps ``keep_ratio`` of the groups (:func:`top_k_groups`; ``keep_ratio=1`` keeps
    every group: no filter, StarPO), ``top_p`` a share ``top_p`` of the spread
    (:func:`top_p_groups`), ``min_p`` the groups within ``min_p`` of the largest spread
    (:func:`min_p_groups`). With ``drop_zero_spread`` the picked groups with spread at most ``tol``
    are dropped. Then up to ``ceil(zero_spread_quota * P)`` zero-spread groups not yet kept are
    added, lowest mean reward first (the hardest states).
    """
    spreads = group_spreads(rewards)
    num_groups = len(spreads)
    if strategy not in FILTER_STRATEGIES:
        raise ValueError(f"strategy must be one of {list(FILTER_STRATEGIES)}, got {strategy!r}")
    if not 0.0 <= zero_spread_quota <= 1.0:
        raise ValueError(f"zero_spread_quota must be in [0, 1], got {zero_spread_quota!r}")
    if strategy == "top_k":
        picked = top_k_groups(spreads, keep_ratio)
    elif strategy == "top_p":
        picked = top_p_groups(spreads, top_p)
    else:
        picked = min_p_groups(spreads, min_p)
    by_spread = [g for g in picked if spreads[g] > tol or not drop_zero_spread]

    quota = math.ceil(zero_spread_quota * num_groups)
    flat = [g for g in range(num_groups) if spreads[g] <= tol and g not in by_spread]
    means = np.asarray(rewards, dtype=np.float64).mean(axis=1)
    flat.sort(key=lambda g: (means[g], g))
    by_quota = flat[:quota]

    kept = tuple(sorted(by_spread + by_quota))
    return FilterResult(kept, tuple(spreads.tolist()), len(by_spread), len(by_quota))


def select_by_game(rewards: np.ndarray, games: Sequence[str], **options: Any) -> FilterResult:
    """:func:`select_groups` (with ``options``) within each game's groups apart, for a mixture whose
    group ``g`` plays ``games[g]``: raw spreads are in each game's own reward units (a Sokoban
    solve pays 10, a FrozenLake win 1), so ranking them together would let the game with the larger
    rewards take the budget, and every game keeps its share of the update this way."""
    rewards = np.asarray(rewards, dtype=np.float64)
    if len(games) != len(rewards):
        raise ValueError(f"need one game per group, got {len(games)} games for {len(rewards)} groups")
    kept: list[int] = []
    by_spread = by_quota = 0
    for game in dict.fromkeys(games):
        rows = [g for g, name in enumerate(games) if name == game]
        part = select_groups(rewards[rows], **options)
        kept += [rows[i] for i in part.kept]
        by_spread += part.num_by_spread
        by_quota += part.num_by_quota
    return FilterResult(tuple(sorted(kept)), tuple(group_spreads(rewards).tolist()), by_spread, by_quota)
