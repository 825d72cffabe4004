"""Confidence intervals and paired significance tests for success rates and rewards.

Everything here is a pure function of its inputs (the bootstrap takes an explicit seed), so a
summary recomputed from the same episodes gives the same figures.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass

import numpy as np

#: Two-sided 95% normal quantile.
Z95 = 1.959963984540054


def wilson_interval(successes: int, n: int, z: float = Z95) -> tuple[float, float]:
    """Wilson score interval for a binomial proportion ``successes / n``.

    Unlike the normal ("Wald") interval it stays inside [0, 1] and keeps close to nominal
    coverage at 0 or n successes, which matters for baselines such as random (near 0) and
    oracle (near 1). ``n == 0`` carries no information and returns ``(0.0, 1.0)``.
    """
    if isinstance(successes, bool) or isinstance(n, bool):
        raise TypeError("wilson_interval takes integer counts, not booleans")
    if n < 0 or successes < 0 or successes > n:
        raise ValueError(f"need 0 <= successes <= n, got successes={successes}, n={n}")
    if z <= 0:
        raise ValueError(f"z must be positive, got {z}")
    if n == 0:
        return (0.0, 1.0)
    p = successes / n
    denom = 1.0 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    # Analytically the bounds are exactly 0 at k == 0 and 1 at k == n; pin them against rounding.
    low = 0.0 if successes == 0 else max(0.0, centre - half)
    high = 1.0 if successes == n else min(1.0, centre + half)
    return (low, high)


@dataclass(frozen=True)
class McNemarResult:
    """Exact McNemar test on paired binary outcomes."""

    n: int  # pairs
    a_only: int  # pairs where only A succeeded
    b_only: int  # pairs where only B succeeded
    p_value: float  # two-sided, exact binomial on the discordant pairs

    def to_dict(self) -> dict:
        """JSON-friendly form."""
        return asdict(self)


def _paired_arrays(a: Sequence, b: Sequence, dtype) -> tuple[np.ndarray, np.ndarray]:
    a_arr = np.asarray(a, dtype=dtype)
    b_arr = np.asarray(b, dtype=dtype)
    if a_arr.ndim != 1 or b_arr.ndim != 1:
        raise ValueError("paired tests take two 1-D sequences")
    if a_arr.shape != b_arr.shape:
        raise ValueError(f"paired samples must have equal length, got {a_arr.size} and {b_arr.size}")
    return a_arr, b_arr


def mcnemar_test(a: Sequence[bool], b: Sequence[bool]) -> McNemarResult:
    """Exact McNemar test: did A and B succeed on the same items at different rates?

    Only discordant pairs carry information; under the null each is equally likely to favour A or
    B, so their split is Binomial(d, 1/2). The exact test is used at every size because it is
    cheap and avoids the chi-square approximation's poor behaviour when few pairs disagree.
    """
    a_arr, b_arr = _paired_arrays(a, b, bool)
    a_only = int(np.sum(a_arr & ~b_arr))
    b_only = int(np.sum(b_arr & ~a_arr))
    d = a_only + b_only
    if d == 0:
        return McNemarResult(int(a_arr.size), 0, 0, 1.0)
    k = min(a_only, b_only)
    # The same integers as summing math.comb(d, i), each term from the last: linear in k, not quadratic
    # (6,000 discordant levels took 0.8 s).
    term = total = 1
    for i in range(k):
        term = term * (d - i) // (i + 1)
        total += term
    tail = total / 2**d
    return McNemarResult(int(a_arr.size), a_only, b_only, min(1.0, 2.0 * tail))


@dataclass(frozen=True)
class BootstrapResult:
    """Paired bootstrap of the mean difference ``mean(a - b)``: its percentile interval."""

    n: int
    mean_diff: float
    ci_low: float
    ci_high: float
    n_resamples: int

    def to_dict(self) -> dict:
        """JSON-friendly form."""
        return asdict(self)


def paired_bootstrap(
    a: Sequence[float],
    b: Sequence[float],
    n_resamples: int = 10_000,
    seed: int = 0,
    confidence: float = 0.95,
) -> BootstrapResult:
    """Paired bootstrap over items for the difference of means of ``a`` and ``b``: the percentile interval.

    Items (the levels both runs played) are resampled with replacement, keeping each pair
    together, so level difficulty cancels out. Its p-value is :func:`sign_flip_test`'s: a bootstrap
    tail at 0 is empty whenever every difference has one sign, whatever the number of pairs.
    """
    diff = _finite_differences("paired_bootstrap", a, b, n_resamples)
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, diff.size, size=(n_resamples, diff.size))
    means = diff[idx].mean(axis=1)
    alpha = 1.0 - confidence
    low, high = np.quantile(means, [alpha / 2, 1 - alpha / 2])
    return BootstrapResult(int(diff.size), float(diff.mean()), float(low), float(high), n_resamples)


#: Up to this many pairs the sign-flip test enumerates every sign pattern (2**16 of them).
SIGN_FLIP_EXACT_PAIRS = 16


@dataclass(frozen=True)
class SignFlipResult:
    """Paired sign-flip (permutation) test of ``mean(a - b) == 0``."""

    n: int
    mean_diff: float
    p_value: float  # two-sided: the share of sign patterns whose |mean| reaches the observed one
    exact: bool  # every pattern enumerated; else ``n_resamples`` random ones

    def to_dict(self) -> dict:
        """JSON-friendly form."""
        return asdict(self)


def sign_flip_test(a: Sequence[float], b: Sequence[float], n_resamples: int = 10_000,
                   seed: int = 0) -> SignFlipResult:
    """Two-sided paired permutation test: under the null each pair's difference is as likely negated.

    Exact over all ``2**n`` sign patterns up to :data:`SIGN_FLIP_EXACT_PAIRS` pairs (three pairs of one
    sign give p = 0.25, as the exact McNemar test does on three discordant levels); beyond, ``n_resamples``
    random patterns and ``p = (1 + hits) / (1 + n_resamples)``, which never reports a p the draws
    cannot support.
    """
    diff = _finite_differences("sign_flip_test", a, b, n_resamples)
    observed = float(diff.mean())
    if np.all(diff == 0):
        return SignFlipResult(int(diff.size), observed, 1.0, True)
    # Means that equal the observed one up to rounding count as reaching it.
    reach = abs(observed) * (1 - 1e-9)
    if diff.size <= SIGN_FLIP_EXACT_PAIRS:
        patterns = (np.arange(2**diff.size)[:, None] >> np.arange(diff.size)) & 1
        means = ((1 - 2 * patterns) * diff).mean(axis=1)
        return SignFlipResult(int(diff.size), observed, float(np.mean(np.abs(means) >= reach)), True)
    signs = np.random.default_rng(seed).choice([-1.0, 1.0], size=(n_resamples, diff.size))
    hits = int(np.sum(np.abs((signs * diff).mean(axis=1)) >= reach))
    return SignFlipResult(int(diff.size), observed, (1 + hits) / (1 + n_resamples), False)


def _finite_differences(name: str, a: Sequence[float], b: Sequence[float], n_resamples: int) -> np.ndarray:
    a_arr, b_arr = _paired_arrays(a, b, float)
    if a_arr.size == 0:
        raise ValueError(f"{name} needs at least one pair")
    if n_resamples < 1:
        raise ValueError(f"n_resamples must be >= 1, got {n_resamples}")
    diff = a_arr - b_arr
    if not np.all(np.isfinite(diff)):  # a NaN difference fell on neither side of 0 and made p its floor
        raise ValueError(f"{name} needs finite values; a pair's difference is {diff[~np.isfinite(diff)][0]}")
    return diff
