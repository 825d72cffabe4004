"""experiments/arm_comparison.py: Holm's procedure against the adjusted-p formula, the Wilcoxon p against the normal
approximation written out, the seed-consistency call, the compact train.csv written and read back, and test.csv read
back with its types."""

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
    # per-level means over three seeds (successes of three episodes): thirds, so many ties and many zero
    # differences among 512 levels; the reference takes the differences from the integer counts, exactly
    wins_a, wins_b = rng.integers(0, 4, 512), rng.integers(0, 4, 512)
    a = np.mean([wins_a >= 1, wins_a >= 2, wins_a >= 3], axis=0)
    b = np.mean([wins_b >= 1, wins_b >= 2, wins_b >= 3], axis=0)
    assert np.sum(wins_a == wins_b) > 50
    # ranks and the statistic are the same for the counts as for their thirds
    assert arms.wilcoxon_p(a, b) == pytest.approx(_normal_approximation(wins_a, wins_b), rel=1e-9)
    assert arms.wilcoxon_p(a, a.copy()) == 1.0


def test_wilcoxon_p_takes_float_rounding_for_no_difference():
    # three seeds' 0.8 averaged is 0.8000000000000002; as a pair with 0.8 it is a zero difference
    seeds = np.full((3, 40), 0.8)
    assert np.mean(seeds, axis=0)[0] != 0.8
    assert arms.wilcoxon_p(np.mean(seeds, axis=0), np.full(40, 0.8)) == 1.0
    # 1 - 2/3 and 1/3 - 0 are one tied difference, whatever their floats: ranks as for exact thirds
    a = np.array([1.0] * 10 + [1 / 3] * 10 + [0.5] * 5)
    b = np.array([np.mean([1.0, 1.0, 0.0])] * 10 + [0.0] * 10 + [0.0] * 5)
    assert len(set(np.abs(a - b)[:20])) == 2
    assert arms.wilcoxon_p(a, b) == pytest.approx(float(stats.wilcoxon([1 / 3] * 20 + [0.5] * 5).pvalue), rel=1e-12)


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


def test_export_train_writes_the_step_and_the_asked_columns_and_read_train_reads_them_back(tmp_path):
    (tmp_path / "metrics.csv").write_text("step,rollout/success_rate,rollout/a/success_rate,losses/approx_kl\n"
                                          "1,0.25,0.5,0.01\n2,0.75,,0.02\n")
    arms.export_train(tmp_path / "metrics.csv", tmp_path / "out")
    assert (tmp_path / "out" / "train.csv").read_text().splitlines() == ["step,success_rate", "1,0.25", "2,0.75"]
    arms.export_train(tmp_path / "metrics.csv", tmp_path / "out", ("a/success_rate", "success_rate"))
    assert (tmp_path / "out" / "train.csv").read_text().splitlines() == ["step,a/success_rate,success_rate",
                                                                         "1,0.5,0.25", "2,,0.75"]
    train = arms.read_train(tmp_path / "out" / "train.csv")
    assert list(train) == ["step", "a/success_rate", "success_rate"]
    assert train["step"] == [1.0, 2.0] and train["success_rate"] == [0.25, 0.75]
    assert train["a/success_rate"][0] == 0.5 and np.isnan(train["a/success_rate"][1])  # a step that logged none
    assert arms.read_train(tmp_path / "missing.csv") is None


def test_export_train_stops_on_a_metric_the_run_did_not_log_before_writing(tmp_path):
    (tmp_path / "metrics.csv").write_text("step,rollout/success_rate\n1,0.25\n")
    with pytest.raises(SystemExit, match="has no column rollout/a/format_error_rate"):
        arms.export_train(tmp_path / "metrics.csv", tmp_path / "out", ("success_rate", "a/format_error_rate"))
    assert not (tmp_path / "out").exists()
