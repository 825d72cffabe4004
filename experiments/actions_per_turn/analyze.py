"""The actions-per-turn study's table, tests and figure, by the rules of plan.md beside this file.

    python experiments/actions_per_turn/analyze.py runs/actions --export experiments/actions_per_turn/data
    python experiments/actions_per_turn/analyze.py experiments/actions_per_turn/data

Writes summary.json and actions.png beside this file. ``--export`` first copies, for every run, its training
success per step and, once evaluated, its per-level test outcomes (seed, level key, success, turns played, turns
whose reply carried more actions than the turn allowed) into DIR/<run>/, and the start model's test outcomes under
each k into DIR/start-k<K>/. While runs or evaluations are missing, only the training record is summarised (the
plan's test is made on all eighteen runs and the six start rows or not at all).
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from arm_comparison import (  # noqa: E402
    arm_success,
    compare,
    export as export_runs,
    load_runs,
    plot_study,
    read_test,
    study_main,
    tested_levels,
    training_summary,
)

from ragen_eval.stats import wilson_interval  # noqa: E402

HERE = Path(__file__).resolve().parent
ARMS = (1, 2, 3, 5, 7, 10)  # at most k actions per turn
BASELINE = 5
SEEDS = (0, 1, 2)
STEPS = 30
#: test.csv's extra columns: the turns an episode played, and those whose reply had actions over the turn's limit.
DROPPED_COLUMNS = {"turns": lambda record: len(record["turns"]),
                   "turns_with_dropped": lambda record: sum(bool(t["actions_dropped"]) for t in record["turns"])}


def name(k: int) -> str:
    """An arm's label: ``k5``."""
    return f"k{k}"


def export(root: Path, out: Path) -> None:
    """Compact copies: DIR/<run>/train.csv (step, success_rate), DIR/<run>/test.csv and DIR/start-k<K>/test.csv
    (seed, level_key, success, turns, turns_with_dropped) where the evaluation exists."""
    export_runs(root, out, "frozenlake_det", "frozenlake_det__k*__seed*",
                {f"start-k{k}": f"start-k{k}-test" for k in ARMS}, DROPPED_COLUMNS)


def load(root: Path) -> tuple[dict[tuple[int, int], dict], dict[int, dict[int, dict] | None]]:
    """(k, seed) -> {"train": success per step, "test": level seed -> its test.csv row, or None}; and per k the
    start model's test outcomes under that k (or None)."""
    runs = load_runs(root, r"frozenlake_det__k(\d+)__seed(\d+)", int)
    return runs, {k: read_test(root / f"start-k{k}" / "test.csv") for k in ARMS}


def dropped_share(tests: list[dict[int, dict]]) -> float:
    """The share of turns, over every episode of ``tests``, whose reply carried more actions than the turn allowed."""
    turns = sum(row["turns"] for test in tests for row in test.values())
    return sum(row["turns_with_dropped"] for test in tests for row in test.values()) / turns


def verdict(tests: dict[str, dict]) -> str:
    """The plan's verdict from the five comparisons against k = 5."""
    one = tests[f"{name(1)}_vs_{name(BASELINE)}"]
    if any(t["call"] == "better" for t in tests.values()):
        return "not reproduced"
    if not (one["holm_significant"] and one["mean_difference"] < 0):
        return "not reproduced"
    return "reproduced" if one["call"] == "worse" else "unclear"


def analyse(runs: dict, starts: dict[int, dict | None]) -> dict:
    """The training record, and, once every run and the start model under every k are evaluated, the plan's
    tests and what it reports beside them."""
    out = training_summary(runs, ARMS, SEEDS, STEPS)
    levels = tested_levels(out, runs, ARMS, SEEDS, list(starts.values()))
    if levels is None:
        return out
    per_seed, per_level = arm_success(runs, ARMS, SEEDS, levels)
    start_model = {}
    for k in ARMS:
        wins = sum(starts[k][lv]["success"] for lv in levels)
        start_model[str(k)] = {"success": wins / len(levels), "wilson95": list(wilson_interval(wins, len(levels))),
                               "dropped_share": dropped_share([starts[k]])}
    out.update(state="complete", levels=len(levels),
               distinct_levels=len({starts[BASELINE][lv]["level_key"] for lv in levels}), start_model=start_model,
               success={str(k): {"mean": float(per_level[k].mean()), "per_seed": per_seed[k]} for k in ARMS})
    tests = compare(per_seed, per_level, [k for k in ARMS if k != BASELINE], BASELINE, name)
    out["tests"] = tests
    out["verdict"] = verdict(tests)
    beyond = tests[f"{name(10)}_vs_{name(BASELINE)}"]["call"]
    out["k10_vs_k5"] = {"call": beyond, "verdict": "not consistent" if beyond == "better" else "consistent"}
    best = max(ARMS, key=lambda k: per_level[k].mean())
    out["best_arm"] = {"k": best, "mean": float(per_level[best].mean())}
    out["gain_over_start"] = {str(k): float(per_level[k].mean()) - start_model[str(k)]["success"] for k in ARMS}
    out["dropped_share"] = {str(k): {"share": dropped_share([runs[(k, s)]["test"] for s in SEEDS]),
                                     "per_seed": [dropped_share([runs[(k, s)]["test"]]) for s in SEEDS]}
                            for k in ARMS}
    return out


def plot(runs: dict, summary: dict, out: Path) -> None:
    """Training success per step (thin: each run; thick: the mean over an arm's finished seeds) and, once
    complete, test success per arm with each seed and the start model under the same k (Wilson 95%)."""

    def start(axis) -> None:
        rows = [summary["start_model"][str(k)] for k in ARMS]
        success = np.array([row["success"] for row in rows])
        bounds = np.array([row["wilson95"] for row in rows])
        axis.errorbar(np.arange(len(ARMS)) + 0.3, success, yerr=[success - bounds[:, 0], bounds[:, 1] - success],
                      fmt="s", color="grey", ms=4, capsize=2, label="start model (Wilson 95%)")

    colours = dict(zip(ARMS, ("tab:purple", "tab:blue", "tab:cyan", "tab:green", "tab:orange", "tab:red")))
    plot_study(runs, summary, out, ARMS, SEEDS, STEPS, colours, lambda k: f"k = {k}", "at most k actions per turn",
               start)


def main(argv: list[str] | None = None) -> int:
    """Print and write the summary and the figure."""
    return study_main(argv, __doc__.split("\n\n")[0], export, load, analyse, plot, HERE / "summary.json",
                      HERE / "actions.png")


if __name__ == "__main__":
    sys.exit(main())
