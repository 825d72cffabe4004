"""experiments/rollout_diversity/analyze.py: the plan's verdict rules on hand-made per-level outcomes written as its
compact data (Holm's procedure and the other shared pieces: tests/train/test_arm_comparison.py)."""

from __future__ import annotations

import csv

import numpy as np
import pytest

from tests.script_modules import load_script

analyze = load_script("experiments/rollout_diversity/analyze.py")
LEVELS = 200


def _write(root, name, outcomes, train=None):
    run = root / name
    run.mkdir(parents=True)
    with open(run / "test.csv", "w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["seed", "level_key", "success"])
        writer.writerows([1000 + i, f"{i % 150:04x}", int(s)] for i, s in enumerate(outcomes))
    if train is not None:
        with open(run / "train.csv", "w", newline="") as handle:
            writer = csv.writer(handle)
            writer.writerow(["step", "success_rate"])
            writer.writerows([step + 1, value] for step, value in enumerate(train))


def _study(tmp_path, rates: dict[str, list[float]], steps: int = analyze.STEPS):
    """Compact data where config c's seed s succeeds on the first rates[c][s] share of the levels."""
    for c, per_seed in rates.items():
        for s, rate in zip(analyze.SEEDS, per_seed):
            _write(tmp_path, f"frozenlake_det__{c}__seed{s}", np.arange(LEVELS) < round(rate * LEVELS), [0.3] * steps)
    _write(tmp_path, "start", np.arange(LEVELS) < round(0.3 * LEVELS))
    return analyze.analyse(*analyze.load(tmp_path))


def test_better_on_every_seed_is_reproduced(tmp_path):
    summary = _study(tmp_path, {"4x16": [0.3, 0.32, 0.34], "8x8": [0.5, 0.52, 0.55], "16x4": [0.3, 0.32, 0.34],
                                "32x2": [0.3, 0.3, 0.3]})
    assert summary["state"] == "complete"
    assert (summary["levels"], summary["distinct_levels"]) == (LEVELS, 150)
    test = summary["tests"]["8x8_vs_4x16"]
    assert test["holm_significant"] and test["seed_side"] == 1 and test["call"] == "better"
    assert test["mean_difference"] == pytest.approx(np.mean([0.5, 0.52, 0.55]) - np.mean([0.3, 0.32, 0.34]))
    assert summary["tests"]["16x4_vs_4x16"]["call"] == "neither"
    assert summary["verdict"] == "reproduced"
    assert summary["few_replies"]["against"] == "8x8" and summary["few_replies"]["verdict"] == "reproduced"
    assert summary["start_model"]["success"] == pytest.approx(0.3)


def test_a_gain_carried_by_one_seed_is_unclear(tmp_path):
    # the seeds overlap (0.31 < 0.34), yet the per-level means differ on many levels: significant, not consistent
    summary = _study(tmp_path, {"4x16": [0.3, 0.32, 0.34], "8x8": [0.31, 0.9, 0.9], "16x4": [0.3, 0.32, 0.34],
                                "32x2": [0.3, 0.3, 0.3]})
    test = summary["tests"]["8x8_vs_4x16"]
    assert test["holm_significant"] and test["seed_side"] == 0 and test["call"] == "neither"
    assert summary["verdict"] == "unclear"


def test_no_gain_is_not_reproduced_and_an_unfinished_study_has_no_verdict(tmp_path):
    same = [0.3, 0.32, 0.34]
    summary = _study(tmp_path, {c: same for c in analyze.CONFIGS})
    assert summary["verdict"] == "not reproduced"
    assert all(t["wilcoxon_p"] == 1.0 for t in summary["tests"].values())
    partial = _study(tmp_path / "partial", {c: same for c in analyze.CONFIGS}, steps=analyze.STEPS - 1)
    assert partial["state"] == "in progress: 0 of 12 runs finished" and "verdict" not in partial
