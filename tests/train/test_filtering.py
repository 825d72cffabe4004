"""The StarPO-S filter picks the right groups, from raw rewards."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from ragen_train.filtering import group_spreads, select_groups


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
