"""The staleness study's table, test and figure, by the rules of plan.md beside this file.

    python experiments/rollout_staleness/analyze.py runs/staleness --export experiments/rollout_staleness/data
    python experiments/rollout_staleness/analyze.py experiments/rollout_staleness/data

Writes summary.json and staleness.png beside this file. ``--export`` first copies, for every run, its training
metrics (step, success) and the per-level test outcomes (seed, level key, success) into DIR/<run>/.
"""

from __future__ import annotations

import argparse
import csv
import json
import re
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from arm_comparison import export as export_runs, wilcoxon_p  # noqa: E402

HERE = Path(__file__).resolve().parent
KS = (0, 2, 8)
SEEDS = (0, 1, 2)
BAR = 0.025


def export(root: Path, out: Path) -> None:
    """Compact copies: DIR/<run>/train.csv (step, success) and DIR/<run>/test.csv (seed, level, success); Bandit's
    preset is one level (its key is None: every split shares it), written as "shared"."""
    export_runs(root, out, "bandit", "bandit__k*__seed*", {})


def load(root: Path) -> dict[tuple[int, int], dict]:
    """(k, seed) -> {"train": success per step, "test": {level seed: success}, "keys": {level seed: key}}."""
    runs = {}
    for run in sorted(root.glob("bandit__k*__seed*")):
        k, seed = map(int, re.fullmatch(r"bandit__k(\d+)__seed(\d+)", run.name).groups())
        with open(run / "train.csv", newline="") as handle:
            train = [float(r["success_rate"]) for r in csv.DictReader(handle)]
        with open(run / "test.csv", newline="") as handle:
            rows = list(csv.DictReader(handle))
        runs[(k, seed)] = {"train": train, "test": {int(r["seed"]): int(r["success"]) for r in rows},
                           "keys": {int(r["seed"]): r["level_key"] for r in rows}}
    missing = [(k, s) for k in KS for s in SEEDS if (k, s) not in runs]
    if missing:
        raise SystemExit(f"runs missing under {root}: {missing}")
    return runs


def analyse(runs: dict) -> dict:
    """Per-k test success and the plan's two Wilcoxon tests against k = 0."""
    levels = sorted(runs[(0, 0)]["test"])
    if any(sorted(r["test"]) != levels for r in runs.values()):
        raise SystemExit("the runs did not play the same test levels")
    per_level = {k: np.mean([[runs[(k, s)]["test"][lv] for lv in levels] for s in SEEDS], axis=0) for k in KS}
    out = {"levels": len(levels), "distinct_levels": len({runs[(0, 0)]["keys"][lv] for lv in levels}),
           "success": {str(k): {"mean": float(per_level[k].mean()),
                                "per_seed": [float(np.mean(list(runs[(k, s)]["test"].values()))) for s in SEEDS]}
                       for k in KS}, "tests": {}}
    for k in KS[1:]:
        diff = per_level[k] - per_level[0]
        p = wilcoxon_p(per_level[k], per_level[0])
        out["tests"][f"k{k}_vs_k0"] = {"mean_difference": float(diff.mean()), "wilcoxon_p": p,
                                      "worse": bool(p < BAR and diff.mean() < 0), "better": bool(p < BAR and diff.mean() > 0)}
    worse = any(t["worse"] for t in out["tests"].values())
    better = any(t["better"] for t in out["tests"].values())
    out["verdict"] = "reproduced" if worse and not better else "not reproduced" if not worse else "unclear"
    return out


def plot(runs: dict, summary: dict, out: Path) -> None:
    """Training success per step (a line per run, coloured by k) and test success per k with each seed."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    colours = dict(zip(KS, ("tab:blue", "tab:orange", "tab:red")))
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 3.6))
    for (k, seed), run in sorted(runs.items()):
        left.plot(range(1, len(run["train"]) + 1), run["train"], color=colours[k], lw=1,
                  label=f"k = {k}" if seed == 0 else None)
    left.set_xlabel("RL step")
    left.set_ylabel("training success (64 rollouts)")
    left.legend(fontsize=8)
    for i, k in enumerate(KS):
        result = summary["success"][str(k)]
        right.bar(i, result["mean"], color=colours[k], alpha=0.5)
        right.scatter([i] * len(SEEDS), result["per_seed"], color=colours[k], zorder=3)
    right.set_xticks(range(len(KS)), [f"k = {k}" for k in KS])
    right.set_ylabel(f"test success ({summary['levels']} levels)")
    right.set_title("bars: mean over seeds; dots: each seed", fontsize=9)
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
    runs = load(root)
    summary = analyse(runs)
    print(json.dumps(summary, indent=1))
    (HERE / "summary.json").write_text(json.dumps(summary, indent=1) + "\n")
    plot(runs, summary, HERE / "staleness.png")
    return 0


if __name__ == "__main__":
    sys.exit(main())
