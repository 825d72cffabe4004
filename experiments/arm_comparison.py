"""Comparing the arms of a training study on the same test levels, as the studies' plans lay it down.

What every such ``analyze.py`` shares: the compact per-run data (``train.csv``: step, success_rate and any
other ``rollout/`` metrics; ``test.csv`` or another evaluation CSV: seed, level_key, success and any extra
per-episode counts) written from a runs folder and read back; the paired test of each arm against a reference arm
(Wilcoxon signed-rank over levels, Holm's step-down correction, seed consistency, the better / worse call) or of one
arm against another alone; one model's success against another's on the same levels (exact McNemar); the figure
(training curves per step, test figures per arm); and the command line (``ROOT [--export DIR]``). The analyses
import it by putting ``experiments/`` on ``sys.path``.
"""

from __future__ import annotations

import argparse
import csv
import json
import re
from collections.abc import Callable, Hashable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from scipy import stats

from ragen_eval.stats import mcnemar_test

if TYPE_CHECKING:
    from ragen_envs.splits import LevelSplitter

ALPHA = 0.05
TEST_COLUMNS = ("seed", "level_key", "success")
#: train.csv's columns by default: the ``rollout/`` metrics of these names.
TRAIN_COLUMNS = ("success_rate",)

#: An extra column of test.csv: its value for one episode record of ``episodes.jsonl``.
Column = Callable[[dict], int]


def export_train(metrics: Path, target: Path, columns: Sequence[str] = TRAIN_COLUMNS) -> None:
    """``target/train.csv`` (step and each of ``columns``, the ``rollout/`` metric of that name; empty where the
    step logged none) from a run's ``metrics.csv``; a run without one of those metrics stops the export."""
    with open(metrics, newline="") as src:
        reader = csv.DictReader(src)
        missing = [c for c in columns if f"rollout/{c}" not in (reader.fieldnames or [])]
        if missing:
            raise SystemExit(f"{metrics} has no column rollout/{missing[0]}")
        rows = [[row["step"], *(row[f"rollout/{c}"] for c in columns)] for row in reader]
    target.mkdir(parents=True, exist_ok=True)
    with open(target / "train.csv", "w", newline="") as dst:
        writer = csv.writer(dst)
        writer.writerow(["step", *columns])
        writer.writerows(rows)


def export_test(evaluation: Path, destination: Path, levels: LevelSplitter,
                columns: Mapping[str, Column] | None = None) -> None:
    """The CSV ``destination`` from a finished evaluation folder (its ``summary.json`` written; nothing otherwise):
    per episode, by seed, its seed, level key (hex, from the ``LevelSplitter`` ``levels``; ``shared`` in hex where
    the game has one level, as Bandit's preset), success, and each of ``columns`` computed from the episode record."""
    from ragen_eval.jsonl_store import read_jsonl

    if not (evaluation / "summary.json").is_file():
        return
    columns = columns or {}
    destination.parent.mkdir(parents=True, exist_ok=True)
    with open(destination, "w", newline="") as dst:
        writer = csv.writer(dst)
        writer.writerow([*TEST_COLUMNS, *columns])
        writer.writerows(sorted([r["seed"], (levels.level_key(r["seed"]) or b"shared").hex(),
                                 int(bool(r["success"])), *(count(r) for count in columns.values())]
                                for r in read_jsonl(evaluation / "episodes.jsonl")))


def export(root: Path, out: Path, env: str, runs: str, evaluations: Mapping[str, str],
           columns: Mapping[str, Column] | None = None, train_columns: Sequence[str] = TRAIN_COLUMNS) -> None:
    """Compact copies of a runs folder: for every run folder matching the glob ``runs`` that has a
    ``metrics.csv``, ``out/<run>/train.csv`` (with ``train_columns``) and, once its evaluation ``<run>-test``
    has finished, ``out/<run>/test.csv`` (with ``columns``); and for each ``name: folder`` of ``evaluations``
    (the start model's), ``out/<name>/test.csv`` once that evaluation has finished."""
    from ragen_envs.splits import LevelSplitter

    levels = LevelSplitter(env)
    out.mkdir(parents=True, exist_ok=True)
    for run in sorted(p.parent for p in root.glob(f"{runs}/metrics.csv")):
        export_train(run / "metrics.csv", out / run.name, train_columns)
        export_test(root / f"{run.name}-test", out / run.name / "test.csv", levels, columns)
    for name, folder in evaluations.items():
        export_test(root / folder, out / name / "test.csv", levels, columns)


def read_test(path: Path) -> dict[int, dict[str, Any]] | None:
    """level seed -> its row of a compact test.csv (level_key a string, every other column an int), or None
    when the file does not exist."""
    if not path.is_file():
        return None
    with open(path, newline="") as handle:
        return {int(r["seed"]): {name: value if name == "level_key" else int(value) for name, value in r.items()}
                for r in csv.DictReader(handle)}


def read_train(path: Path) -> dict[str, list[float]] | None:
    """column -> its value per step of a compact train.csv (the step among them; NaN where a step logged none), or
    None when the file does not exist."""
    if not path.is_file():
        return None
    with open(path, newline="") as handle:
        reader = csv.DictReader(handle)
        rows = list(reader)
    return {name: [float(r[name]) if r[name] != "" else float("nan") for r in rows] for name in reader.fieldnames or []}


def load_runs(root: Path, pattern: str, arm: Callable[[str], Hashable] = str) -> dict[tuple[Any, int], dict]:
    """(arm, seed) -> {"train": success per step, "curves": every column of train.csv but the step, per step (NaN
    where empty), "test": read_test's rows or None} for every folder of the compact data whose name fully matches
    ``pattern`` (two groups: the arm, read by ``arm``, and the seed)."""
    runs = {}
    for run in sorted(root.iterdir()):
        match = re.fullmatch(pattern, run.name)
        if match is None:
            continue
        curves = {name: values for name, values in read_train(run / "train.csv").items() if name != "step"}
        runs[(arm(match[1]), int(match[2]))] = {"train": curves["success_rate"], "curves": curves,
                                                "test": read_test(run / "test.csv")}
    return runs


def training_summary(runs: dict, arms: Sequence, seeds: Sequence[int], steps: int) -> dict:
    """Per finished run (``steps`` steps logged): its mean training success over the steps; and how many runs
    have finished of the ``len(arms) * len(seeds)`` planned."""
    done = {key: run for key, run in runs.items() if len(run["train"]) >= steps}
    return {"runs_finished": len(done), "runs_planned": len(arms) * len(seeds),
            "mean_training_success": {str(a): {str(s): float(np.mean(done[(a, s)]["train"][:steps]))
                                               for s in seeds if (a, s) in done} for a in arms}}


def tested_levels(out: dict, runs: dict, arms: Sequence, seeds: Sequence[int],
                  starts: Sequence[dict | None]) -> list[int] | None:
    """The test levels every planned run and every start-model evaluation played, once all of them are tested;
    None (and ``out["state"]`` set to "in progress") before. ``out`` is :func:`training_summary`'s. SystemExit
    where the evaluations did not all play the same levels."""
    tested = all((a, s) in runs and runs[(a, s)]["test"] is not None for a in arms for s in seeds)
    if not tested or any(start is None for start in starts) or out["runs_finished"] < out["runs_planned"]:
        out["state"] = f"in progress: {out['runs_finished']} of {out['runs_planned']} runs finished"
        return None
    levels = sorted(starts[0])
    if any(sorted(start) != levels for start in starts[1:]):
        raise SystemExit("the start model's evaluations did not play the same test levels")
    if any(sorted(runs[(a, s)]["test"]) != levels for a in arms for s in seeds):
        raise SystemExit("the checkpoints did not play the start model's test levels")
    return levels


def arm_success(runs: dict, arms: Sequence, seeds: Sequence[int], levels: Sequence[int]
                ) -> tuple[dict[Any, list[float]], dict[Any, np.ndarray]]:
    """Per arm: each seed's test success over ``levels``, and each level's success averaged over the seeds."""
    outcomes = {a: np.array([[runs[(a, s)]["test"][lv]["success"] for lv in levels] for s in seeds]) for a in arms}
    per_seed = {a: [float(np.mean(row)) for row in outcomes[a]] for a in arms}
    per_level = {a: np.mean(outcomes[a], axis=0) for a in arms}
    return per_seed, per_level


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
    """Two-sided Wilcoxon signed-rank p over paired items, zero differences dropped; 1.0 when all are zero.

    The differences are rounded to 12 decimals first: per-level values are means over seeds, whose float rounding
    would otherwise make equal values differ (0.8 against the mean of three 0.8s) and split tied differences
    (1 - 2/3 against 1/3 - 0) into distinct ranks.
    """
    differences = np.round(np.asarray(a, dtype=float) - np.asarray(b, dtype=float), 12)
    return float(stats.wilcoxon(differences).pvalue) if np.any(differences != 0) else 1.0


def nan_mean(values: np.ndarray, axis: int | None = None) -> np.ndarray | float:
    """The mean over the values that are not NaN (along ``axis``); NaN where none is."""
    present = ~np.isnan(values)
    count = present.sum(axis=axis)
    mean = np.where(count > 0, np.where(present, values, 0.0).sum(axis=axis) / np.maximum(count, 1), np.nan)
    return float(mean) if axis is None else mean


def judge(difference: float, significant: bool, side: int) -> str:
    """``better`` / ``worse`` (significant, and seed-consistent in the same direction) or ``neither``."""
    if significant and difference > 0 and side > 0:
        return "better"
    if significant and difference < 0 and side < 0:
        return "worse"
    return "neither"


def compare(per_seed: dict, per_level: dict, others: Sequence, baseline: Hashable,
            name: Callable[[Any], str] = str) -> dict[str, dict]:
    """Each arm of ``others`` against ``baseline``, keyed ``<name(arm)>_vs_<name(baseline)>``: the mean per-level
    difference, the Wilcoxon p, Holm's call over the family ``others`` at ALPHA, the seed side and the call."""
    pvalues = [wilcoxon_p(per_level[a], per_level[baseline]) for a in others]
    tests = {}
    for a, p, significant in zip(others, pvalues, holm(pvalues)):
        difference = float((per_level[a] - per_level[baseline]).mean())
        side = seed_side(per_seed[a], per_seed[baseline])
        tests[f"{name(a)}_vs_{name(baseline)}"] = {"mean_difference": difference, "wilcoxon_p": p,
                                                   "holm_significant": significant, "seed_side": side,
                                                   "call": judge(difference, significant, side)}
    return tests


def paired_test(a: np.ndarray, b: np.ndarray, seeds_a: Sequence[float], seeds_b: Sequence[float],
                alpha: float = ALPHA) -> dict[str, Any]:
    """One arm against another (or the start model) alone, over levels: ``a`` and ``b`` hold each level's value
    (NaN where an arm has none; such levels leave the pairs), ``seeds_a`` and ``seeds_b`` each seed's test mean
    (the start model's one value). The pairs, the mean per-level difference (None without pairs), the Wilcoxon p,
    whether p < ``alpha``, the seed side and the call."""
    keep = ~(np.isnan(a) | np.isnan(b))
    difference = float((a[keep] - b[keep]).mean()) if keep.any() else None
    p = wilcoxon_p(a[keep], b[keep])
    side = seed_side(list(seeds_a), list(seeds_b))
    return {"pairs": int(keep.sum()), "mean_difference": difference, "wilcoxon_p": p, "significant": p < alpha,
            "seed_side": side, "call": judge(difference or 0.0, p < alpha, side)}


def mcnemar_levels(model: Mapping[int, dict], other: Mapping[int, dict], mismatch: str) -> dict[str, Any]:
    """One model against another on the same levels (rows by level seed, as :func:`read_test` gives them): the
    success difference, the levels only ``model`` / only ``other`` won, and the exact McNemar p. SystemExit with
    ``mismatch`` where the two did not play the same levels (seeds and level keys)."""
    levels = sorted(other)
    if sorted(model) != levels or any(model[lv]["level_key"] != other[lv]["level_key"] for lv in levels):
        raise SystemExit(mismatch)
    test = mcnemar_test([bool(model[lv]["success"]) for lv in levels], [bool(other[lv]["success"]) for lv in levels])
    return {"difference": (test.a_only - test.b_only) / len(levels), "model_only": test.a_only,
            "other_only": test.b_only, "mcnemar_p": test.p_value}


def plot_curves(axis, runs: dict, arms: Sequence, seeds: Sequence[int], steps: int, colours: Mapping,
                label: Callable[[Any], str], curve: Callable[[dict], list[float]] = lambda run: run["train"]) -> None:
    """A training curve per step on ``axis`` (``curve`` of a run; default its success): thin, each run; thick,
    the mean over an arm's finished seeds."""
    for a in arms:
        curves = [curve(runs[(a, s)])[:steps] for s in seeds if (a, s) in runs]
        for values in curves:
            axis.plot(range(1, len(values) + 1), values, color=colours[a], lw=0.6, alpha=0.4)
        finished = [values for values in curves if len(values) == steps]
        if finished:
            axis.plot(range(1, steps + 1), np.mean(finished, axis=0), color=colours[a], lw=2,
                      label=f"{label(a)} ({len(finished)} seeds)")
    axis.set_xlabel("RL step")


def plot_arms(axis, results: Mapping[str, dict], arms: Sequence, colours: Mapping,
              label: Callable[[Any], str]) -> None:
    """A test figure per arm on ``axis``: a bar for ``results[str(arm)]["mean"]``, a dot for each of its
    ``per_seed``."""
    for i, a in enumerate(arms):
        result = results[str(a)]
        axis.bar(i, result["mean"], color=colours[a], alpha=0.5)
        seeds = np.array(result["per_seed"], dtype=float)  # None (a seed without a value) draws nothing
        axis.scatter([i] * len(seeds), seeds, color=colours[a], zorder=3)
    axis.set_xticks(range(len(arms)), [label(a) for a in arms])


def plot_study(runs: dict, summary: dict, out: Path, arms: Sequence, seeds: Sequence[int], steps: int,
               colours: Mapping, label: Callable[[Any], str], title: str, start: Callable[[Any], None]) -> None:
    """The study's figure: training success per step (thin: each run; thick: the mean over an arm's finished
    seeds) and, once the summary is complete, test success per arm (a bar for the mean over seeds, a dot for each
    seed) with the start model, which ``start`` draws on that panel's axis."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    complete = summary["state"] == "complete"
    fig, axes = plt.subplots(1, 2 if complete else 1, figsize=(10 if complete else 5.5, 3.6), squeeze=False)
    left = axes[0][0]
    plot_curves(left, runs, arms, seeds, steps, colours, label)
    left.set_ylabel("training success (64 episodes)")
    left.set_title(title, fontsize=9)
    if left.get_legend_handles_labels()[0]:
        left.legend(fontsize=8, ncol=1 if len(arms) <= 4 else 2)  # two columns keep six arms off the curves
    if complete:
        right = axes[0][1]
        plot_arms(right, summary["success"], arms, colours, label)
        start(right)
        right.set_ylabel(f"test success ({summary['levels']} levels)")
        right.set_title("bars: mean over seeds; dots: each seed", fontsize=9)
        right.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out, dpi=80)
    plt.close(fig)


def study_main(argv: list[str] | None, description: str, export: Callable[[Path, Path], None],
               load: Callable[[Path], tuple], analyse: Callable[..., dict], plot: Callable[[dict, dict, Path], None],
               summary_path: Path, figure_path: Path) -> int:
    """The analyses' command line: ``ROOT [--export DIR]``; exports first where asked, then loads the compact
    data (``load`` gives the runs and the start model's outcomes), prints and writes the summary, and draws."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("root", type=Path, help="the runs folder (with --export) or the compact data folder")
    parser.add_argument("--export", type=Path, default=None, help="write compact copies here first, then read them")
    args = parser.parse_args(argv)
    if not args.root.is_dir():
        parser.error(f"{args.root} is not a folder")
    root = args.root
    if args.export is not None:
        export(root, args.export)
        root = args.export
    runs, start = load(root)
    summary = analyse(runs, start)
    print(json.dumps(summary, indent=1))
    summary_path.write_text(json.dumps(summary, indent=1) + "\n")
    plot(runs, summary, figure_path)
    return 0
