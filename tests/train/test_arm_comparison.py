"""experiments/arm_comparison.py: Holm's procedure against the adjusted-p formula, the Wilcoxon p against the normal
approximation written out, the seed-consistency call, the compact train.csv written and test.csv read back with its
types."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy import stats

from tests.script_modules import load_script

arms = load_script("experiments/arm_comparison.py")


def holm_adjusted(pvalues: list[float]) -> list[float]:
    """Holm-adjusted p-values, written out: sorted p_(j) times (m - j), running maximum, capped at 1."""
    m = len(pvalues)
    order = sorted(range(m), key=lambda i: pvalues[i])
    adjusted, running = [0.0] * m, 0.0
    for j, i in enumerate(order):
        running = max(running, min(1.0, (m - j) * pvalues[i]))
        adjusted[i] = running
    return adjusted


def test_holm_on_hand_computed_cases():
    # 0.01 <= 0.05/3 is rejected; 0.03 > 0.05/2 stops the procedure, so 0.04 is kept although 0.04 <= 0.05
    assert arms.holm([0.01, 0.04, 0.03]) == [True, False, False]
    assert arms.holm([0.04, 0.01, 0.02]) == [True, True, True]
    assert arms.holm([0.2, 0.3, 0.4]) == [False, False, False]


@given(st.lists(st.floats(0.0, 1.0), min_size=1, max_size=6), st.sampled_from([0.01, 0.05, 0.1]))
def test_holm_rejects_exactly_the_hypotheses_whose_adjusted_p_is_within_alpha(pvalues, alpha):
    assert arms.holm(pvalues, alpha) == [p <= alpha for p in holm_adjusted(pvalues)]


def _normal_approximation(a: np.ndarray, b: np.ndarray) -> float:
    """Two-sided signed-rank p by the normal approximation with the tie correction, zero differences dropped."""
    d = (a - b)[a != b]
    n = len(d)
    ranks = stats.rankdata(np.abs(d))
    smaller = min(ranks[d > 0].sum(), ranks[d < 0].sum())
    _, ties = np.unique(np.abs(d), return_counts=True)
    se = np.sqrt(n * (n + 1) * (2 * n + 1) / 24 - (ties**3 - ties).sum() / 48)
    return float(2 * stats.norm.sf(abs(smaller - n * (n + 1) / 4) / se))


def test_wilcoxon_p_drops_zero_differences_and_is_one_when_nothing_differs():
    rng = np.random.default_rng(7)
    # per-level means over three seeds: thirds, so many ties and many zero differences among 512 levels
    a, b = rng.integers(0, 4, 512) / 3, rng.integers(0, 4, 512) / 3
    assert np.sum(a == b) > 50
    assert arms.wilcoxon_p(a, b) == pytest.approx(_normal_approximation(a, b), rel=1e-9)
    assert arms.wilcoxon_p(a, a.copy()) == 1.0


def test_seed_side_and_the_call():
    assert arms.seed_side([0.5, 0.6, 0.7], [0.4, 0.45, 0.49]) == 1
    assert arms.seed_side([0.1, 0.2, 0.3], [0.4, 0.45, 0.49]) == -1
    assert arms.seed_side([0.1, 0.2, 0.45], [0.4, 0.45, 0.49]) == 0
    assert arms.seed_side([0.5, 0.6, 0.4], [0.4, 0.45, 0.49]) == 0  # a tie with a baseline seed is not above it
    assert arms.judge(0.1, True, 1) == "better"
    assert arms.judge(-0.1, True, -1) == "worse"
    assert arms.judge(0.1, False, 1) == "neither"  # consistent but not significant
    assert arms.judge(-0.1, True, 0) == "neither"  # significant but carried by some seeds
    assert arms.judge(0.1, True, -1) == "neither"


def test_read_test_types_its_columns_and_is_none_for_a_missing_file(tmp_path):
    (tmp_path / "test.csv").write_text("seed,level_key,success,turns\n12,00ab,1,5\n3,0100,0,10\n")
    assert arms.read_test(tmp_path / "test.csv") == {12: {"seed": 12, "level_key": "00ab", "success": 1, "turns": 5},
                                                     3: {"seed": 3, "level_key": "0100", "success": 0, "turns": 10}}
    assert arms.read_test(tmp_path / "missing.csv") is None


def test_export_train_writes_the_step_and_the_asked_columns_the_run_logged(tmp_path):
    (tmp_path / "metrics.csv").write_text("step,rollout/success_rate,rollout/a/success_rate,losses/approx_kl\n"
                                          "1,0.25,0.5,0.01\n2,0.75,1.0,0.02\n")
    arms.export_train(tmp_path / "metrics.csv", tmp_path / "out")
    assert (tmp_path / "out" / "train.csv").read_text().splitlines() == ["step,success_rate", "1,0.25", "2,0.75"]
    # a column the run did not log (here the format-error rate) is left out
    arms.export_train(tmp_path / "metrics.csv", tmp_path / "out", {"a/success_rate": "rollout/a/success_rate",
                                                                  "a/format_error_rate": "rollout/a/format_error_rate"})
    assert (tmp_path / "out" / "train.csv").read_text().splitlines() == ["step,a/success_rate", "1,0.5", "2,1.0"]
