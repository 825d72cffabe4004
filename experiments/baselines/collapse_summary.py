"""Did a run collapse? One line per ``ragen-train`` run directory, and the success curves side by side.

A run *collapsed* when its training success, having reached ``--peak`` (mean of any 5 consecutive
steps), ends below ``--floor`` (mean of its last 10 steps): it learned, then lost it. The table
also gives the step of the first collapse alert and the validation success at the last step.

    python experiments/baselines/collapse_summary.py runs/baselines/bandit/rl/starpo \\
        runs/baselines/bandit/rl/starpo-s runs/collapse/bandit__* --plot experiments/baselines/bandit_seeds.png

``--export DIR`` also writes each run's compact copy (``config.yaml`` and the metric columns the
study reads) to ``DIR/<run name>/``; those copies are run directories this script reads again, so the
committed tables can be recomputed without the full runs.
"""

from __future__ import annotations

import argparse
import csv
import json
import re
import sys
from pathlib import Path

import numpy as np

from ragen_train.run_log import upgrade_row


def summarize(run_dir: Path, peak: float, floor: float) -> dict:
    """Preset, seed, learning and collapse figures of one run directory (old flat metric names too)."""
    metrics = run_dir / "metrics.csv"
    config = run_dir / "config.yaml"
    if not metrics.is_file() or not config.is_file():
        raise FileNotFoundError(f"{run_dir} is not a ragen-train run directory (no metrics.csv/config.yaml)")
    import yaml

    cfg = yaml.safe_load(config.read_text())
    with open(metrics, newline="") as handle:
        rows = [upgrade_row(row) for row in csv.DictReader(handle)]
    if len(rows) < 10:
        raise ValueError(f"{run_dir} has {len(rows)} steps; the collapse rule needs at least 10")
    success = np.array([float(r["rollout/success_rate"]) for r in rows])
    best5 = float(np.convolve(success, np.ones(5) / 5, mode="valid").max())
    last10 = float(success[-10:].mean())
    alerts = [int(r["step"]) for r in rows if r.get("alerts")]
    evals = [float(r["eval/success_rate"]) for r in rows if r.get("eval/success_rate") not in (None, "")]
    return {"run": str(run_dir), "env": cfg.get("env", "-"), "preset": cfg["preset"], "seed": cfg["seed"], "steps": len(rows),
            "best_5_step_success": best5, "last_10_success": last10,
            "final_val_success": evals[-1] if evals else None, "first_alert_step": alerts[0] if alerts else None,
            "collapsed": best5 >= peak and last10 < floor, "curve": success.tolist()}


#: The metrics.csv columns a compact copy keeps: what the table, the curves and the Echo-Trap signs read.
EXPORT_COLUMNS = ("step", "rollout/success_rate", "rollout/mean_reward", "rollout/format_error_rate",
                  "rollout/in_group_std", "rollout/kept_fraction",
                  "losses/entropy", "losses/clip_fraction", "losses/approx_kl", "losses/grad_norm_actor",
                  "losses/optimizer_steps", "alerts", "eval/success_rate", "time/rollout_s", "time/update_s")


def export(run_dir: Path, out_dir: Path) -> Path:
    """Write ``run_dir``'s compact copy (config.yaml, metrics.csv of :data:`EXPORT_COLUMNS`) to ``out_dir/<name>``."""
    with open(run_dir / "metrics.csv", newline="") as handle:
        rows = [upgrade_row(row) for row in csv.DictReader(handle)]
    target = out_dir / run_dir.name
    target.mkdir(parents=True, exist_ok=True)
    # A committed copy names no machine's folders: absolute paths into a checkout become relative to it.
    config = re.sub(r"(?<=: )/\S*?/(?=(runs|ragen_eval)/)", "", (run_dir / "config.yaml").read_text())
    (target / "config.yaml").write_text(config)
    with open(target / "metrics.csv", "w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=EXPORT_COLUMNS, extrasaction="ignore")
        writer.writeheader()
        writer.writerows(rows)
    return target


def plot(summaries: list[dict], out: Path) -> None:
    """Training success per step, one panel per preset, one line per seed."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    presets = sorted({s["preset"] for s in summaries})
    fig, axes = plt.subplots(1, len(presets), figsize=(6 * len(presets), 3.6), sharey=True, squeeze=False)
    for ax, preset in zip(axes[0], presets):
        for s in sorted((s for s in summaries if s["preset"] == preset), key=lambda s: s["seed"]):
            style = "-" if not s["collapsed"] else "--"
            ax.plot(range(1, s["steps"] + 1), s["curve"], style, lw=1.2,
                    label=f"seed {s['seed']}" + (" (collapsed)" if s["collapsed"] else ""))
        ax.set_title(f"{preset}: training success per step")
        ax.set_xlabel("step")
        ax.legend(fontsize=8)
    axes[0][0].set_ylabel("success (64 rollouts, T=1)")
    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=90)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    """Print the table (or JSON) for the given run directories; optionally plot them."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("runs", nargs="+", type=Path, help="ragen-train run directories")
    parser.add_argument("--peak", type=float, default=0.8, help="success a run must have reached (5-step mean)")
    parser.add_argument("--floor", type=float, default=0.5, help="collapsed if the last 10 steps average below this")
    parser.add_argument("--plot", type=Path, default=None, help="write the success curves to this PNG")
    parser.add_argument("--json", action="store_true", help="print JSON instead of a Markdown table")
    parser.add_argument("--export", type=Path, default=None, help="write each run's compact copy under this folder")
    args = parser.parse_args(argv)
    if not 0 <= args.floor < args.peak <= 1:
        parser.error(f"need 0 <= --floor < --peak <= 1, got {args.floor}, {args.peak}")
    summaries = [summarize(run, args.peak, args.floor) for run in args.runs]
    if args.export is not None:
        for run in args.runs:
            export(run, args.export)
    if args.json:
        print(json.dumps([{k: v for k, v in s.items() if k != "curve"} for s in summaries], indent=2))
    else:
        print("| env | preset | seed | steps | best 5-step success | last-10 success | final val success | "
              "first alert | collapsed |")
        print("|---|---|---|---|---|---|---|---|---|")
        for s in sorted(summaries, key=lambda s: (s["env"], s["preset"], s["seed"])):
            val = "-" if s["final_val_success"] is None else f"{s['final_val_success']:.3f}"
            print(f"| {s['env']} | {s['preset']} | {s['seed']} | {s['steps']} | {s['best_5_step_success']:.3f} | "
                  f"{s['last_10_success']:.3f} | {val} | {s['first_alert_step'] or '-'} | "
                  f"{'yes' if s['collapsed'] else 'no'} |")
    if args.plot is not None:
        plot(summaries, args.plot)
    return 0


if __name__ == "__main__":
    sys.exit(main())
