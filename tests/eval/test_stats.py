"""Intervals and paired tests, checked against scipy and against exact binomial coverage."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats as sps

from ragen_eval.stats import SIGN_FLIP_EXACT_PAIRS, mcnemar_test, paired_bootstrap, sign_flip_test, wilson_interval


@pytest.mark.parametrize(("k", "n", "expected"), [
    (0, 10, (0.0, 0.27753)),  # textbook values of the Wilson score interval
    (5, 10, (0.23659, 0.76341)),
    (10, 10, (0.72247, 1.0)),
])
def test_wilson_matches_known_values(k, n, expected):
    low, high = wilson_interval(k, n)
    assert low == pytest.approx(expected[0], abs=1e-5)
    assert high == pytest.approx(expected[1], abs=1e-5)


def test_wilson_matches_scipy_binomtest():
    for k, n in [(3, 17), (40, 41), (128, 256), (1, 1000)]:
        ci = sps.binomtest(k, n).proportion_ci(confidence_level=0.95, method="wilson")
        assert wilson_interval(k, n) == pytest.approx((ci.low, ci.high), abs=1e-9)


@given(st.integers(min_value=1, max_value=2000).flatmap(lambda n: st.tuples(st.integers(0, n), st.just(n))))
def test_wilson_is_inside_unit_interval_and_contains_estimate_and_is_symmetric(kn):
    k, n = kn
    low, high = wilson_interval(k, n)
    assert 0.0 <= low <= k / n <= high <= 1.0
    mirrored = wilson_interval(n - k, n)
    assert low == pytest.approx(1 - mirrored[1], abs=1e-12)
    assert high == pytest.approx(1 - mirrored[0], abs=1e-12)


@pytest.mark.parametrize("p", [0.05, 0.3, 0.5])
def test_wilson_exact_coverage_is_near_nominal(p):
    n = 60
    ks = np.arange(n + 1)
    covered = np.array([wilson_interval(int(k), n)[0] <= p <= wilson_interval(int(k), n)[1] for k in ks])
    coverage = sps.binom.pmf(ks, n, p)[covered].sum()
    assert 0.90 <= coverage <= 0.995


def test_wilson_rejects_bad_counts():
    with pytest.raises(ValueError, match="successes"):
        wilson_interval(5, 3)
    with pytest.raises(ValueError):
        wilson_interval(-1, 3)
    with pytest.raises(TypeError):
        wilson_interval(True, 3)
    assert wilson_interval(0, 0) == (0.0, 1.0)


@given(st.lists(st.tuples(st.booleans(), st.booleans()), min_size=1, max_size=200))
def test_mcnemar_equals_exact_binomial_test_on_discordant_pairs(pairs):
    a = [x for x, _ in pairs]
    b = [y for _, y in pairs]
    result = mcnemar_test(a, b)
    a_only = sum(x and not y for x, y in pairs)
    b_only = sum(y and not x for x, y in pairs)
    assert (result.a_only, result.b_only, result.n) == (a_only, b_only, len(pairs))
    expected = 1.0 if a_only + b_only == 0 else sps.binomtest(a_only, a_only + b_only, 0.5).pvalue
    assert result.p_value == pytest.approx(expected, rel=1e-9, abs=1e-15)


def test_mcnemar_detects_a_clear_difference_and_rejects_unequal_lengths():
    a = [True] * 30 + [False] * 10
    b = [False] * 30 + [False] * 10
    assert mcnemar_test(a, b).p_value < 1e-6
    with pytest.raises(ValueError, match="equal length"):
        mcnemar_test([True], [True, False])


def test_paired_bootstrap_is_seeded_and_centred_on_the_mean_difference():
    rng = np.random.default_rng(1)
    level = rng.normal(size=200)  # shared level difficulty cancels in paired differences
    a = level + 0.3 + 0.1 * rng.normal(size=200)
    b = level + 0.1 * rng.normal(size=200)
    r1 = paired_bootstrap(a, b, n_resamples=2000, seed=7)
    r2 = paired_bootstrap(a, b, n_resamples=2000, seed=7)
    assert r1 == r2
    assert r1.mean_diff == pytest.approx(np.mean(a - b))
    assert r1.ci_low < r1.mean_diff < r1.ci_high
    assert 0.25 < r1.ci_low and r1.ci_high < 0.35  # the std error of the paired mean is about 0.01


def test_sign_flip_finds_no_difference_between_equal_samples():
    x = np.random.default_rng(0).normal(size=50)
    result = sign_flip_test(x, x.copy())
    assert result.mean_diff == 0.0 and result.p_value == 1.0
    noisy = sign_flip_test(x, np.random.default_rng(1).permutation(x), seed=3)
    assert noisy.p_value > 0.05 and not noisy.exact


@settings(max_examples=60, deadline=None)  # scipy enumerates up to 2**16 patterns per example
@given(st.lists(st.tuples(st.integers(-3, 3), st.integers(-3, 3)), min_size=2, max_size=SIGN_FLIP_EXACT_PAIRS))
def test_sign_flip_is_scipys_exact_paired_permutation_test(pairs):
    a, b = (np.array(side, dtype=float) for side in zip(*pairs))
    ours = sign_flip_test(a, b)
    if np.all(a == b):
        assert ours.p_value == 1.0
        return
    theirs = sps.permutation_test((a, b), lambda x, y, axis: np.mean(x - y, axis=axis), vectorized=True,
                                  permutation_type="samples", n_resamples=np.inf, alternative="two-sided")
    assert ours.exact and ours.p_value == pytest.approx(theirs.pvalue)


def test_few_levels_of_one_sign_are_no_evidence():
    """Every difference positive once gave the bootstrap's floor p (0.0002 at 5000 resamples) whatever the count;
    one sign on n levels is 2 / 2**n, as McNemar's exact test says of n discordant levels."""
    for n in (1, 3, 5):
        assert sign_flip_test([1.0] * n, [0.0] * n).p_value == pytest.approx(min(1.0, 2 / 2**n))
        assert sign_flip_test([1.0] * n, [0.0] * n).p_value == mcnemar_test([True] * n, [False] * n).p_value


def test_the_sampled_sign_flip_p_counts_the_observed_pattern():
    diff = np.full(40, 1.0)  # no random pattern reaches it: p is 1 / (1 + n_resamples), never 0
    result = sign_flip_test(diff, np.zeros(40), n_resamples=999, seed=2)
    assert not result.exact and result.p_value == pytest.approx(1 / 1000)
    assert sign_flip_test(diff, np.zeros(40), n_resamples=999, seed=2) == result  # seeded


def test_paired_bootstrap_rejects_bad_input():
    with pytest.raises(ValueError, match="at least one pair"):
        paired_bootstrap([], [])
    with pytest.raises(ValueError, match="equal length"):
        paired_bootstrap([1.0, 2.0], [1.0])
    with pytest.raises(ValueError, match="n_resamples"):
        paired_bootstrap([1.0], [1.0], n_resamples=0)
    for test in (paired_bootstrap, sign_flip_test):  # a NaN difference once gave the floor p as if significant
        with pytest.raises(ValueError, match="finite values"):
            test([float("nan"), 1.0, 2.0], [0.0, 0.0, 0.0])
        with pytest.raises(ValueError, match="finite values"):
            test([float("inf"), 1.0], [float("inf"), 1.0])
