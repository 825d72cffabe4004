"""The rollout-diversity study's table, tests and figure, by the rules of plan.md beside this file.

    python experiments/rollout_diversity/analyze.py runs/diversity --export experiments/rollout_diversity/data
    python experiments/rollout_diversity/analyze.py experiments/rollout_diversity/data

Writes summary.json and diversity.png beside this file. ``--export`` first copies, for every run, its training
success per step and, once evaluated, its per-level test outcomes (seed, level key, success) into DIR/<run>/, and
the start model's test outcomes into DIR/start/. While runs are missing, only the training record is summarised
(the plan's test is made on all twelve runs or not at all).
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from arm_comparison import (  # noqa: E402
    ALPHA,
    arm_success,
    compare,
    export as export_runs,
    judge,
    load_runs,
    plot_study,
    read_test,
    seed_side,
    study_main,
    tested_levels,
    training_summary,
    wilcoxon_p,
)

from ragen_eval.stats import wilson_interval  # noqa: E402

HERE = Path(__file__).resolve().parent
CONFIGS = ("4x16", "8x8", "16x4", "32x2")
BASELINE = "4x16"
SEEDS = (0, 1, 2)
STEPS = 30


def export(root: Path, out: Path) -> None:
    """Compact copies: DIR/<run>/train.csv (step, success_rate), DIR/<run>/test.csv and DIR/start/test.csv
    (seed, level_key, success) where the evaluation exists."""
    export_runs(root, out, "frozenlake_det", "frozenlake_det__*__seed*", {"start": "start-test"})


def load(root: Path) -> tuple[dict[tuple[str, int], dict], dict[int, dict] | None]:
    """(config, seed) -> {"train": success per step, "test": level seed -> its test.csv row, or None}; and the
    start model's test outcomes (or None)."""
    return load_runs(root, r"frozenlake_det__(\d+x\d+)__seed(\d+)"), read_test(root / "start" / "test.csv")


def verdict(tests: dict[str, dict]) -> str:
    """The plan's verdict from the 8x8 and 16x4 comparisons against 4x16."""
    diverse = [tests[f"{c}_vs_{BASELINE}"] for c in ("8x8", "16x4")]
    calls = [t["call"] for t in diverse]
    if "better" in calls and "worse" not in calls:
        return "reproduced"
    if not any(t["holm_significant"] and t["mean_difference"] > 0 for t in diverse):
        return "not reproduced"
    return "unclear"


def analyse(runs: dict, start: dict | None) -> dict:
    """The training record, and, once every run and the start model are evaluated, the plan's tests."""
    out = training_summary(runs, CONFIGS, SEEDS, STEPS)
    levels = tested_levels(out, runs, CONFIGS, SEEDS, [start])
    if levels is None:
        return out
    per_seed, per_level = arm_success(runs, CONFIGS, SEEDS, levels)
    wins = sum(start[lv]["success"] for lv in levels)
    out.update(state="complete", levels=len(levels), distinct_levels=len({start[lv]["level_key"] for lv in levels}),
               start_model={"success": wins / len(levels), "wilson95": list(wilson_interval(wins, len(levels)))},
               success={c: {"mean": float(per_level[c].mean()), "per_seed": per_seed[c]} for c in CONFIGS})
    tests = compare(per_seed, per_level, [c for c in CONFIGS if c != BASELINE], BASELINE)
    out["tests"] = tests
    out["verdict"] = verdict(tests)
    best = max(("8x8", "16x4"), key=lambda c: per_level[c].mean())
    difference = float((per_level["32x2"] - per_level[best]).mean())
    p = wilcoxon_p(per_level["32x2"], per_level[best])
    call = judge(difference, p < ALPHA, seed_side(per_seed["32x2"], per_seed[best]))
    out["few_replies"] = {"against": best, "mean_difference": difference, "wilcoxon_p": p, "call": call,
                          "verdict": "reproduced" if call == "worse" else
                          "not reproduced" if not (p < ALPHA and difference < 0) else "unclear"}
    return out


def plot(runs: dict, summary: dict, out: Path) -> None:
    """Training success per step (thin: each run; thick: the mean over a configuration's finished seeds) and, once
    complete, test success per configuration with each seed and the start model."""

    def start(axis) -> None:
        low, high = summary["start_model"]["wilson95"]
        axis.axhspan(low, high, color="grey", alpha=0.2)
        axis.axhline(summary["start_model"]["success"], color="grey", ls="--", label="start model")

    colours = dict(zip(CONFIGS, ("tab:blue", "tab:green", "tab:orange", "tab:red")))
    plot_study(runs, summary, out, CONFIGS, SEEDS, STEPS, colours, str, "env_groups x group_size", start)


def main(argv: list[str] | None = None) -> int:
    """Print and write the summary and the figure."""
    return study_main(argv, __doc__.split("\n\n")[0], export, load, analyse, plot, HERE / "summary.json",
                      HERE / "diversity.png")


if __name__ == "__main__":
    sys.exit(main())
