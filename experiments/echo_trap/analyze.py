"""The Echo-Trap study's table, test and figure, by the rules of plan.md beside this file.

    python experiments/echo_trap/analyze.py runs/echo --export experiments/echo_trap/data   # from the full runs
    python experiments/echo_trap/analyze.py experiments/echo_trap/data                      # from the committed copies

Writes summary.json and echo_trap.png beside this file. ``--export`` first copies each run's config.yaml and
the metric columns the rules read into DIR/<run>/ (the compact data this script reads again).
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

HERE = Path(__file__).resolve().parent
COLUMNS = ("step", "rollout/success_rate", "rollout/format_error_rate", "rollout/in_group_std", "rollout/reply_entropy",
           "rollout/reply_cond_entropy", "rollout/reply_mi", "losses/entropy", "losses/grad_norm_actor",
           "losses/grad_norm_critic", "alerts")
#: Drop signals of plan.md: metric -> ratio of its last-5 mean to its first-5 mean that raises the alert.
DROP_SIGNALS = {"rollout/in_group_std": 0.1, "rollout/reply_entropy": 0.5, "rollout/reply_cond_entropy": 0.5,
                "rollout/reply_mi": 0.5}
SPIKE_SIGNALS = ("losses/grad_norm_actor", "losses/grad_norm_critic")
WINDOW, SPIKE = 5, 10.0


def read_run(run: Path) -> tuple[str, str, int, dict[str, np.ndarray]]:
    """(game, preset, seed, column -> values) of a run directory or its compact copy."""
    config = (run / "config.yaml").read_text()
    game = re.search(r"^env: (\S+)", config, re.M).group(1)
    preset = re.search(r"^preset: (\S+)", config, re.M).group(1)
    seed = int(re.search(r"^seed: (\d+)", config, re.M).group(1))
    with open(run / "metrics.csv", newline="") as handle:
        rows = list(csv.DictReader(handle))
    series = {c: np.array([float(r[c]) if r.get(c) not in (None, "") else np.nan for r in rows])
              for c in COLUMNS if c != "alerts"}
    return game, preset, seed, series


def first_drop_alert(values: np.ndarray, ratio: float) -> int | None:
    """First step (1-based) whose last-WINDOW mean < ratio x the first-WINDOW mean (CollapseMonitor's rule)."""
    early = np.nanmean(values[:WINDOW])
    for t in range(2 * WINDOW, len(values) + 1):
        if early > 0 and np.nanmean(values[t - WINDOW:t]) < ratio * early:
            return t
    return None


def first_spike_alert(values: np.ndarray) -> int | None:
    """First step whose value > SPIKE x the median of the earlier steps (at least WINDOW of them)."""
    for t in range(WINDOW, len(values)):
        if np.isfinite(values[t]) and values[t] > SPIKE * np.nanmedian(values[:t]):
            return t + 1
    return None


def judge(series: dict[str, np.ndarray], horizon: int) -> dict:
    """The per-run figures of plan.md over steps 1..horizon."""
    success = series["rollout/success_rate"][:horizon]
    moving = np.convolve(success, np.ones(WINDOW) / WINDOW, mode="valid")  # moving[i] ends at step i + WINDOW
    peak_index = int(np.argmax(moving))
    peak = float(moving[peak_index])
    last10 = float(success[-10:].mean())
    collapsed = peak >= 0.2 and last10 < 0.5 * peak
    collapse_step = None
    if collapsed:
        below = np.nonzero(moving[peak_index + 1:] < 0.5 * peak)[0]
        collapse_step = int(peak_index + 1 + below[0] + WINDOW) if below.size else None
    alerts = {name: first_drop_alert(series[name][:horizon], ratio) for name, ratio in DROP_SIGNALS.items()}
    alerts.update({name: first_spike_alert(series[name][:horizon]) for name in SPIKE_SIGNALS})
    leads = {name: collapse_step - step for name, step in alerts.items()
             if collapse_step is not None and step is not None and step <= collapse_step}
    return {"peak_5_step_success": peak, "peak_step": peak_index + WINDOW, "last_10_success": last10,
            "collapsed": collapsed, "steps_to_collapse": collapse_step,
            "last_10_format_error_rate": float(series["rollout/format_error_rate"][:horizon][-10:].mean()),
            "first_alert_step": alerts, "lead_steps": leads}


def export(run: Path, out: Path) -> None:
    """Copy config.yaml and the COLUMNS of metrics.csv into out/<run name>/."""
    target = out / run.name
    target.mkdir(parents=True, exist_ok=True)
    (target / "config.yaml").write_text(re.sub(r"(?<=: )/\S*?/(?=(runs|ragen_eval)/)", "", (run / "config.yaml").read_text()))
    with open(run / "metrics.csv", newline="") as src, open(target / "metrics.csv", "w", newline="") as dst:
        writer = csv.DictWriter(dst, fieldnames=COLUMNS, extrasaction="ignore")
        writer.writeheader()
        writer.writerows(csv.DictReader(src))


def plot(runs: list[dict], horizons: dict[str, int], out: Path) -> None:
    """Success, reply MI and in-group reward std per step: a column per game and preset, a line per seed."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    keys = sorted({(r["game"], r["preset"]) for r in runs})
    rows = (("rollout/success_rate", "training success"), ("rollout/reply_mi", "reply MI estimate (nats)"),
            ("rollout/in_group_std", "in-group reward std"))
    fig, axes = plt.subplots(len(rows), len(keys), figsize=(4.2 * len(keys), 8), sharex="col", squeeze=False)
    for col, (game, preset) in enumerate(keys):
        for run in sorted((r for r in runs if (r["game"], r["preset"]) == (game, preset)), key=lambda r: r["seed"]):
            h = horizons[game]
            for row, (name, _) in enumerate(rows):
                values, steps = run["series"][name][:h], np.arange(1, h + 1)
                if name == "rollout/success_rate":  # the moving mean the rules read, at the step it ends on
                    values, steps = np.convolve(values, np.ones(WINDOW) / WINDOW, mode="valid"), steps[WINDOW - 1:]
                axes[row][col].plot(steps, values, "--" if run["collapsed"] else "-", lw=1,
                                    label=f"seed {run['seed']}" + (" (collapsed)" if run["collapsed"] else ""))
        axes[0][col].set_title(f"{game}, {preset}")
        axes[0][col].legend(fontsize=7)
        axes[-1][col].set_xlabel("RL step")
    for row, (_, label) in enumerate(rows):
        axes[row][0].set_ylabel(label)
    axes[0][0].text(0, 1.12, "training success: 5-step moving mean", transform=axes[0][0].transAxes, fontsize=8)
    fig.tight_layout()
    fig.savefig(out, dpi=80)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    """Judge every run under ROOT (its subfolders holding metrics.csv), print the table, write summary and figure."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("root", type=Path, help="folder of run directories (full runs or compact copies)")
    parser.add_argument("--export", type=Path, default=None, help="write compact copies here first, then read them")
    args = parser.parse_args(argv)
    found = sorted(p.parent for p in args.root.glob("*/metrics.csv"))
    if not found:
        parser.error(f"no run directories (*/metrics.csv) under {args.root}")
    if args.export is not None:
        for run in found:
            export(run, args.export)
        found = sorted(p.parent for p in args.export.glob("*/metrics.csv"))
    runs = []
    for path in found:
        game, preset, seed, series = read_run(path)
        runs.append({"run": path.name, "game": game, "preset": preset, "seed": seed, "series": series,
                     "steps": len(series["step"])})
    horizons = {g: min(r["steps"] for r in runs if r["game"] == g) for g in {r["game"] for r in runs}}
    for run in runs:
        run.update(judge(run["series"], horizons[run["game"]]))
    tests = {}
    for game in sorted(horizons):
        counts = {p: [r["collapsed"] for r in runs if r["game"] == game and r["preset"] == p] for p in ("starpo", "starpo-s")}
        table = [[sum(counts[p]), len(counts[p]) - sum(counts[p])] for p in ("starpo", "starpo-s")]
        last = {p: [r["last_10_success"] for r in runs if r["game"] == game and r["preset"] == p] for p in counts}
        tests[game] = {"horizon_steps": horizons[game], "collapsed_starpo": table[0][0], "collapsed_starpo_s": table[1][0],
                       "runs_per_preset": len(counts["starpo"]), "fisher_p": float(stats.fisher_exact(table)[1]),
                       "mannwhitney_last10_p": float(stats.mannwhitneyu(last["starpo"], last["starpo-s"]).pvalue),
                       "median_last10_starpo": float(np.median(last["starpo"])),
                       "median_last10_starpo_s": float(np.median(last["starpo-s"]))}
    print("| game | preset | seed | steps | peak 5-step | last-10 | format err (last 10) | collapsed at | first alerts (step) |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in sorted(runs, key=lambda r: (r["game"], r["preset"], r["seed"])):
        alerts = ", ".join(f"{k.split('/')[-1]} {v}" for k, v in r["first_alert_step"].items() if v is not None) or "-"
        print(f"| {r['game']} | {r['preset']} | {r['seed']} | {horizons[r['game']]} | {r['peak_5_step_success']:.2f} | "
              f"{r['last_10_success']:.2f} | {r['last_10_format_error_rate']:.2f} | {r['steps_to_collapse'] or '-'} | {alerts} |")
    print(json.dumps(tests, indent=1))
    summary = {"tests": tests, "runs": [{k: v for k, v in r.items() if k != "series"} for r in runs]}
    (HERE / "summary.json").write_text(json.dumps(summary, indent=1) + "\n")
    plot(runs, horizons, HERE / "echo_trap.png")
    return 0


if __name__ == "__main__":
    sys.exit(main())
