"""The rollout-diversity study's table, tests and figure, by the rules of plan.md beside this file.

    python experiments/rollout_diversity/analyze.py runs/diversity --export experiments/rollout_diversity/data
    python experiments/rollout_diversity/analyze.py experiments/rollout_diversity/data

Writes summary.json and diversity.png beside this file. ``--export`` first copies, for every run, its training
success per step and, once evaluated, its per-level test outcomes (seed, level key, success) into DIR/<run>/, and
the start model's test outcomes into DIR/start/. While runs are missing, only the training record is summarised
(the plan's test is made on all twelve runs or not at all).
"""

from __future__ import annotations

import argparse
import csv
import json
import re
import sys
from pathlib import Path

import numpy as np
from scipy import stats

from ragen_eval.stats import wilson_interval

HERE = Path(__file__).resolve().parent
CONFIGS = ("4x16", "8x8", "16x4", "32x2")
BASELINE = "4x16"
SEEDS = (0, 1, 2)
STEPS = 30
ALPHA = 0.05
RUN = re.compile(r"frozenlake_det__(\d+x\d+)__seed(\d+)")


def export(root: Path, out: Path) -> None:
    """Compact copies: DIR/<run>/train.csv (step, success_rate), DIR/<run>/test.csv and DIR/start/test.csv
    (seed, level_key, success) where the evaluation exists."""
    from ragen_envs.splits import LevelSplitter
    from ragen_eval.jsonl_store import read_jsonl

    levels = LevelSplitter("frozenlake_det")

    def write_test(episodes: Path, target: Path) -> None:
        target.mkdir(parents=True, exist_ok=True)
        with open(target / "test.csv", "w", newline="") as dst:
            writer = csv.writer(dst)
            writer.writerow(["seed", "level_key", "success"])
            writer.writerows(sorted([r["seed"], levels.level_key(r["seed"]).hex(), int(bool(r["success"]))]
                                    for r in read_jsonl(episodes)))

    for run in sorted(p.parent for p in root.glob("frozenlake_det__*__seed*/metrics.csv")):
        target = out / run.name
        target.mkdir(parents=True, exist_ok=True)
        with open(run / "metrics.csv", newline="") as src, open(target / "train.csv", "w", newline="") as dst:
            writer = csv.writer(dst)
            writer.writerow(["step", "success_rate"])
            writer.writerows([row["step"], row["rollout/success_rate"]] for row in csv.DictReader(src))
        if (root / f"{run.name}-test" / "summary.json").is_file():
            write_test(root / f"{run.name}-test" / "episodes.jsonl", target)
    if (root / "start-test" / "summary.json").is_file():
        write_test(root / "start-test" / "episodes.jsonl", out / "start")


def _read_test(path: Path) -> dict[int, tuple[str, int]] | None:
    """level seed -> (level key, success), or None when the file does not exist."""
    if not path.is_file():
        return None
    with open(path, newline="") as handle:
        return {int(r["seed"]): (r["level_key"], int(r["success"])) for r in csv.DictReader(handle)}


def load(root: Path) -> tuple[dict[tuple[str, int], dict], dict[int, tuple[str, int]] | None]:
    """(config, seed) -> {"train": success per step, "test": level seed -> (key, success) or None}; and the
    start model's test outcomes (or None)."""
    runs = {}
    for run in sorted(root.glob("frozenlake_det__*__seed*")):
        config, seed = RUN.fullmatch(run.name).groups()
        with open(run / "train.csv", newline="") as handle:
            train = [float(r["success_rate"]) for r in csv.DictReader(handle)]
        runs[(config, int(seed))] = {"train": train, "test": _read_test(run / "test.csv")}
    return runs, _read_test(root / "start" / "test.csv")


def holm(pvalues: list[float], alpha: float = ALPHA) -> list[bool]:
    """Holm's step-down procedure: which hypotheses are rejected at family-wise ``alpha``.

    The i-th smallest p (i = 0, 1, ...) is compared with alpha / (m - i); testing stops at the first that fails.
    """
    rejected = [False] * len(pvalues)
    for rank, index in enumerate(np.argsort(pvalues, kind="stable")):
        if pvalues[index] > alpha / (len(pvalues) - rank):
            break
        rejected[index] = True
    return rejected


def seed_side(seeds: list[float], baseline: list[float]) -> int:
    """+1 when every seed lies above every baseline seed, -1 when every one lies below, else 0."""
    if min(seeds) > max(baseline):
        return 1
    if max(seeds) < min(baseline):
        return -1
    return 0


def wilcoxon_p(a: np.ndarray, b: np.ndarray) -> float:
    """Two-sided Wilcoxon signed-rank p over paired items, zero differences dropped; 1.0 when all are zero."""
    return float(stats.wilcoxon(a, b).pvalue) if np.any(a != b) else 1.0


def judge(difference: float, significant: bool, side: int) -> str:
    """``better`` / ``worse`` (significant, and seed-consistent in the same direction) or ``neither``."""
    if significant and difference > 0 and side > 0:
        return "better"
    if significant and difference < 0 and side < 0:
        return "worse"
    return "neither"


def verdict(tests: dict[str, dict]) -> str:
    """The plan's verdict from the 8x8 and 16x4 comparisons against 4x16."""
    diverse = [tests[f"{c}_vs_{BASELINE}"] for c in ("8x8", "16x4")]
    calls = [t["call"] for t in diverse]
    if "better" in calls and "worse" not in calls:
        return "reproduced"
    if not any(t["holm_significant"] and t["mean_difference"] > 0 for t in diverse):
        return "not reproduced"
    return "unclear"


def training_summary(runs: dict) -> dict:
    """Per finished run: its mean training success over the steps; and how many runs have finished."""
    done = {key: run for key, run in runs.items() if len(run["train"]) >= STEPS}
    return {"runs_finished": len(done), "runs_planned": len(CONFIGS) * len(SEEDS),
            "mean_training_success": {c: {str(s): float(np.mean(done[(c, s)]["train"][:STEPS]))
                                          for s in SEEDS if (c, s) in done} for c in CONFIGS}}


def analyse(runs: dict, start: dict | None) -> dict:
    """The training record, and, once every run and the start model are evaluated, the plan's tests."""
    out = training_summary(runs)
    complete = all((c, s) in runs and runs[(c, s)]["test"] is not None for c in CONFIGS for s in SEEDS)
    if not complete or start is None or out["runs_finished"] < out["runs_planned"]:
        out["state"] = f"in progress: {out['runs_finished']} of {out['runs_planned']} runs finished"
        return out
    levels = sorted(start)
    if any(sorted(runs[(c, s)]["test"]) != levels for c in CONFIGS for s in SEEDS):
        raise SystemExit("the checkpoints did not play the same test levels")
    per_seed = {c: [float(np.mean([runs[(c, s)]["test"][lv][1] for lv in levels])) for s in SEEDS] for c in CONFIGS}
    per_level = {c: np.mean([[runs[(c, s)]["test"][lv][1] for lv in levels] for s in SEEDS], axis=0) for c in CONFIGS}
    wins = sum(start[lv][1] for lv in levels)
    out.update(state="complete", levels=len(levels), distinct_levels=len({start[lv][0] for lv in levels}),
               start_model={"success": wins / len(levels), "wilson95": list(wilson_interval(wins, len(levels)))},
               success={c: {"mean": float(per_level[c].mean()), "per_seed": per_seed[c]} for c in CONFIGS})
    others = [c for c in CONFIGS if c != BASELINE]
    pvalues = [wilcoxon_p(per_level[c], per_level[BASELINE]) for c in others]
    tests = {}
    for c, p, significant in zip(others, pvalues, holm(pvalues)):
        difference = float((per_level[c] - per_level[BASELINE]).mean())
        side = seed_side(per_seed[c], per_seed[BASELINE])
        tests[f"{c}_vs_{BASELINE}"] = {"mean_difference": difference, "wilcoxon_p": p, "holm_significant": significant,
                                       "seed_side": side, "call": judge(difference, significant, side)}
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
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    colours = dict(zip(CONFIGS, ("tab:blue", "tab:green", "tab:orange", "tab:red")))
    complete = summary["state"] == "complete"
    fig, axes = plt.subplots(1, 2 if complete else 1, figsize=(10 if complete else 5.5, 3.6), squeeze=False)
    left = axes[0][0]
    for c in CONFIGS:
        curves = [runs[(c, s)]["train"][:STEPS] for s in SEEDS if (c, s) in runs]
        for curve in curves:
            left.plot(range(1, len(curve) + 1), curve, color=colours[c], lw=0.6, alpha=0.4)
        finished = [curve for curve in curves if len(curve) == STEPS]
        if finished:
            left.plot(range(1, STEPS + 1), np.mean(finished, axis=0), color=colours[c], lw=2,
                      label=f"{c} ({len(finished)} seeds)")
    left.set_xlabel("RL step")
    left.set_ylabel("training success (64 episodes)")
    left.set_title("env_groups x group_size", fontsize=9)
    if left.get_legend_handles_labels()[0]:
        left.legend(fontsize=8)
    if complete:
        right = axes[0][1]
        for i, c in enumerate(CONFIGS):
            result = summary["success"][c]
            right.bar(i, result["mean"], color=colours[c], alpha=0.5)
            right.scatter([i] * len(SEEDS), result["per_seed"], color=colours[c], zorder=3)
        low, high = summary["start_model"]["wilson95"]
        right.axhspan(low, high, color="grey", alpha=0.2)
        right.axhline(summary["start_model"]["success"], color="grey", ls="--", label="start model")
        right.set_xticks(range(len(CONFIGS)), CONFIGS)
        right.set_ylabel(f"test success ({summary['levels']} levels)")
        right.set_title("bars: mean over seeds; dots: each seed", fontsize=9)
        right.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out, dpi=80)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    """Print and write the summary and the figure."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("root", type=Path, help="the runs folder (with --export) or the compact data folder")
    parser.add_argument("--export", type=Path, default=None, help="write compact copies here first, then read them")
    args = parser.parse_args(argv)
    root = args.root
    if args.export is not None:
        export(root, args.export)
        root = args.export
    runs, start = load(root)
    summary = analyse(runs, start)
    print(json.dumps(summary, indent=1))
    (HERE / "summary.json").write_text(json.dumps(summary, indent=1) + "\n")
    plot(runs, summary, HERE / "diversity.png")
    return 0


if __name__ == "__main__":
    sys.exit(main())
