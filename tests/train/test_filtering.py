"""The StarPO-S filter picks the right groups, from raw rewards."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from ragen_train.filtering import group_spreads, min_p_groups, select_groups, top_p_groups


def test_keeps_top_quarter_by_raw_std():
    rewards = np.array([
        [0, 0, 0, 0],          # 0: all fail, spread 0
        [1, 0, 1, 0],          # 1: std 0.5
        [1, 1, 1, 0],          # 2: std 0.433
        [5, 5, 5, 5],          # 3: all succeed, spread 0
        [0.1, 0.1, 0.1, 1.0],  # 4: std 0.3897
        [10, 0, 10, 0],        # 5: std 5  (raw scale matters: GRPO-normalised it would equal group 1)
        [0, 0, 0, 1],          # 6: std 0.433
        [-0.1, -0.1, 0, 0],    # 7: std 0.05
    ], dtype=float)
    result = select_groups(rewards, keep_ratio=0.25)
    assert result.kept == (1, 5)
    assert result.kept_fraction == 0.25
    np.testing.assert_allclose(result.spreads, rewards.std(axis=1))
    # 0.5 of 8 = 4 groups; tie between 2 and 6 (both 0.433) broken by index
    assert select_groups(rewards, keep_ratio=0.5).kept == (1, 2, 5, 6)


def test_top_fraction_is_kept_whatever_the_spread_as_ragen_does():
    rewards = np.array([[0, 0, 0], [1, 1, 1], [0, 1, 0], [0.5, 0.5, 0.5]], dtype=float)
    # budget 3, one group with spread: the two zero-spread groups first in index order fill it
    ragen = select_groups(rewards, keep_ratio=0.75)
    assert ragen.kept == (0, 1, 2) and ragen.num_by_spread == 3 and ragen.num_by_quota == 0
    # a step where no group disagrees still keeps (and trains on) a quarter of them
    assert select_groups(np.ones((8, 4)), keep_ratio=0.25).kept == (0, 1)


def test_drop_zero_spread_keeps_only_disagreeing_groups_and_quota_adds_hardest():
    rewards = np.array([[0, 0, 0], [1, 1, 1], [0, 1, 0], [0.5, 0.5, 0.5]], dtype=float)
    plain = select_groups(rewards, keep_ratio=0.75, drop_zero_spread=True)  # budget 3, one group has spread
    assert plain.kept == (2,) and plain.num_by_spread == 1 and plain.num_by_quota == 0
    assert select_groups(np.ones((8, 4)), keep_ratio=0.25, drop_zero_spread=True).kept == ()
    remedy = select_groups(rewards, keep_ratio=0.25, zero_spread_quota=0.25)  # one extra: the all-fail group
    assert remedy.kept == (0, 2) and remedy.num_by_quota == 1
    two = select_groups(rewards, keep_ratio=0.25, zero_spread_quota=0.5)  # next hardest: mean 0.5
    assert two.kept == (0, 2, 3)
    # the quota never counts a group twice: rank already kept the all-fail group 0
    both = select_groups(rewards, keep_ratio=0.75, zero_spread_quota=0.25)
    assert both.kept == (0, 1, 2, 3) and both.num_by_quota == 1


def test_ratio_one_keeps_everything_including_flat_groups():
    rewards = np.zeros((3, 4))
    assert select_groups(rewards, keep_ratio=1.0).kept == (0, 1, 2)
    # The flag acts at 1.0 as at any ratio: it once returned every group there.
    mixed = np.array([[0.0] * 6, [1.0, 0.0] * 3, [0.0] * 6])
    assert select_groups(mixed, keep_ratio=1.0, drop_zero_spread=True).kept == (1,)
    assert select_groups(mixed, keep_ratio=1.0, drop_zero_spread=True, zero_spread_quota=0.3).kept == (0, 1)


def test_groups_whose_rewards_all_agree_have_no_spread_and_rank_by_index():
    """Six rewards of 0.7 had a spread of 1.1e-16 from rounding and outranked exactly flat groups."""
    flat_noisy = [0.7] * 6
    assert np.std(flat_noisy) > 0  # the rounding this guards against
    rewards = np.array([[0.0] * 6, flat_noisy, [1.0, 0.0] * 3, [0.0] * 6])
    assert group_spreads(rewards)[1] == 0.0
    assert select_groups(rewards, keep_ratio=0.5).kept == (0, 2)
    agree = np.array([[0.0] * 6, flat_noisy, [0.0] * 6])
    assert select_groups(agree, strategy="min_p", min_p=0.5).kept == (0, 1, 2)
    assert select_groups(agree, strategy="top_p", top_p=0.9).kept == (0,)


@settings(max_examples=60, deadline=None)
@given(arrays(np.float64, st.tuples(st.integers(1, 12), st.integers(1, 6)),
              elements=st.sampled_from([-0.1, 0.0, 0.5, 1.0, 2.0])),
       st.floats(0.05, 1.0), st.booleans())
def test_filter_invariants(rewards, ratio, drop_zero_spread):
    result = select_groups(rewards, keep_ratio=ratio, drop_zero_spread=drop_zero_spread)
    spreads = rewards.std(axis=1)
    kept = set(result.kept)
    if ratio < 1.0:
        budget = max(1, int(round(ratio * len(rewards))))
        assert len(kept) <= budget
        if drop_zero_spread:
            assert all(spreads[g] > 1e-8 for g in kept)
        else:
            assert len(kept) == budget
        # nothing dropped has a larger spread than anything kept
        dropped = [spreads[g] for g in range(len(rewards)) if g not in kept]
        if kept and dropped:
            assert max(dropped) <= min(spreads[g] for g in kept)
        # a group with spread is dropped only when the budget is full
        if any(spreads[g] > 1e-8 for g in range(len(rewards)) if g not in kept):
            assert len(kept) == budget
    assert list(result.kept) == sorted(kept)


def test_bad_input_raises():
    with pytest.raises(ValueError, match="keep_ratio"):
        select_groups(np.zeros((2, 2)), keep_ratio=0.0)
    with pytest.raises(ValueError, match="NaN"):
        group_spreads(np.array([[np.nan, 1.0]]))
    with pytest.raises(ValueError, match="shape"):
        group_spreads(np.zeros(3))


# --- top_p and min_p, against brute force over every subset ----------------------------------------------


def _brute_top_p(spreads: list[float], p: float) -> tuple[int, float]:
    """Size of the smallest set of groups whose spreads reach p of the total, and the largest sum such a set has."""
    total = sum(spreads)
    for size in range(1, len(spreads) + 1):
        sums = [sum(spreads[g] for g in subset) for subset in itertools.combinations(range(len(spreads)), size)]
        reaching = [s for s in sums if s >= p * total]
        if reaching:
            return size, max(reaching)
    raise AssertionError("the whole set always reaches p")


# integer spreads keep every sum exact, so the brute force and the filter compare the same numbers
_spreads = st.lists(st.integers(0, 6), min_size=1, max_size=8).map(lambda xs: np.array(xs, dtype=float))


@settings(max_examples=150, deadline=None)
@given(_spreads, st.sampled_from([0.05, 0.25, 0.5, 0.6, 0.75, 0.9, 1.0]))
def test_top_p_is_the_smallest_set_reaching_the_share(spreads, p):
    kept = top_p_groups(spreads, p)
    size, best = _brute_top_p(spreads.tolist(), p)
    assert len(kept) == len(set(kept)) == size
    assert sum(spreads[g] for g in kept) == best  # of the smallest sets, the one with the most spread
    # among equal spreads the lower index goes first
    for g in kept:
        assert all(h in kept for h in range(g) if spreads[h] == spreads[g])


@settings(max_examples=150, deadline=None)
@given(_spreads, st.sampled_from([0.0, 0.2, 0.5, 0.8, 1.0]))
def test_min_p_keeps_the_groups_near_the_largest_spread(spreads, min_p):
    expected = [g for g, s in enumerate(spreads.tolist()) if s >= min_p * max(spreads.tolist())]
    assert min_p_groups(spreads, min_p) == expected


def test_strategies_through_select_groups():
    rewards = np.array([
        [0, 0, 0, 0],    # 0: spread 0
        [1, 0, 1, 0],    # 1: 0.5
        [1, 1, 1, 0],    # 2: 0.433
        [10, 0, 10, 0],  # 3: 5
        [0, 0, 0, 1],    # 4: 0.433
    ], dtype=float)
    # the total spread is 6.366; group 3 alone holds 78.5% of it, 3 and 1 86.4%
    assert select_groups(rewards, strategy="top_p", top_p=0.75).kept == (3,)
    assert select_groups(rewards, strategy="top_p", top_p=0.8).kept == (1, 3)
    assert select_groups(rewards, strategy="top_p", top_p=1.0).kept == (1, 2, 3, 4)
    assert select_groups(rewards, strategy="min_p", min_p=0.09).kept == (1, 3)
    assert select_groups(rewards, strategy="min_p", min_p=0.0).kept == (0, 1, 2, 3, 4)
    assert select_groups(rewards, strategy="min_p", min_p=0.0, drop_zero_spread=True).kept == (1, 2, 3, 4)
    flat = select_groups(np.ones((4, 3)), strategy="top_p", top_p=0.5, zero_spread_quota=0.25)
    # no spread anywhere: top_p keeps one group (the first), and the quota adds the next flat one
    assert flat.kept == (0, 1) and flat.num_by_spread == 1 and flat.num_by_quota == 1
    with pytest.raises(ValueError, match="strategy"):
        select_groups(rewards, strategy="top_q")
