"""The lake data-scale curve from ``run.sh``'s evaluations: a CSV of success per kept model and split, and a plot.

Beside success stands how often a turn's first move was optimal (no move has a higher chance of
reaching the goal), with what a uniformly random move would score on the same states:
``experiments/default_model/diagnose.py``'s measure of whether a model reads the lake.

    python experiments/lake_data_scale/export.py runs/lake_data_scale --out docs/baselines/lake_data_scale
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "default_model"))
from diagnose import diagnose  # noqa: E402

BATCH = 16  # run.sh's batch size: one demonstration episode per row, one epoch


def rows(run: Path) -> list[dict]:
    """One row per evaluated model (a kept SFT model, or random/oracle) and split."""
    out = []
    for summary_path in sorted((run / "eval").glob("*/summary.json")):
        name, _, split = summary_path.parent.name.rpartition("-")
        overall = json.loads(summary_path.read_text())["overall"]
        episodes = (summary_path.parent / "episodes.jsonl").read_text().splitlines()
        moves = diagnose(r for r in map(json.loads, episodes) if not r.get("error"))["frozenlake"]
        step = int(name.removeprefix("step_")) if name.startswith("step_") else None
        out.append({"model": name if step is None else "sft", "step": step,
                    "demonstrations": step * BATCH if step is not None else None, "split": split,
                    "episodes": overall["episodes"], "success": round(overall["success_rate"], 4),
                    "ci95_low": round(overall["success_ci95"][0], 4), "ci95_high": round(overall["success_ci95"][1], 4),
                    "format_error_rate": round(overall["format_error_rate"], 4),
                    "first_move_optimal": round(moves["first_move_optimal"], 4),
                    "random_first_move_optimal": round(moves["random_first_move_optimal"], 4)})
    return sorted(out, key=lambda r: (r["split"], r["model"], r["step"] or 0))


def plot(table: list[dict], path: Path) -> None:
    """Success against demonstrations, one line per split, with random and oracle as dashed levels."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 3.6))
    for split, colour in (("val", "tab:blue"), ("test", "tab:orange")):
        points = [r for r in table if r["split"] == split and r["model"] == "sft"]
        xs = [r["demonstrations"] / 1000 for r in points]
        ax.errorbar(xs, [r["success"] for r in points], fmt="o-", color=colour, capsize=3, label=f"SFT, {split}",
                    yerr=[[r["success"] - r["ci95_low"] for r in points], [r["ci95_high"] - r["success"] for r in points]])
        for ref, style in (("random", ":"), ("oracle", "--")):
            level = [r["success"] for r in table if r["split"] == split and r["model"] == ref]
            if level:
                ax.axhline(level[0], color=colour, linestyle=style, linewidth=1, label=f"{ref}, {split}")
    ax.set_xlabel("FrozenLake demonstrations seen (thousands)")
    ax.set_ylabel("success, 512 levels")
    ax.set_title("Slippery FrozenLake, 2-layer tiny model, short prompt")
    ax.set_ylim(0.15, 0.5)
    ax.legend(fontsize=7, ncol=3, loc="lower center")
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def loss_curve(run: Path) -> list[dict]:
    """The SFT run's mean loss per answer token over each 100 steps (its per-step log is too long to commit)."""
    rows = list(csv.DictReader(open(run / "sft" / "sft_metrics.csv", newline="")))
    blocks: dict[int, list[float]] = {}
    for row in rows:
        blocks.setdefault(int(row["step"]) // 100 * 100, []).append(float(row["loss"]))
    return [{"first_step": step, "steps": len(losses), "mean_loss": round(sum(losses) / len(losses), 4)}
            for step, losses in sorted(blocks.items())]


def main(argv: list[str] | None = None) -> int:
    """Write ``curve.csv``, ``curve.png`` and (when the SFT run is there) ``loss.csv`` under ``--out``."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("run", type=Path, help="run.sh's output directory")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    table = rows(args.run)
    if not table:
        raise SystemExit(f"no evaluations under {args.run / 'eval'}; run experiments/lake_data_scale/run.sh first")
    args.out.mkdir(parents=True, exist_ok=True)
    with open(args.out / "curve.csv", "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(table[0]))
        writer.writeheader()
        writer.writerows(table)
    plot(table, args.out / "curve.png")
    written = ["curve.csv", "curve.png"]
    if (args.run / "sft" / "sft_metrics.csv").is_file():
        losses = loss_curve(args.run)
        with open(args.out / "loss.csv", "w", newline="") as f:
            writer = csv.DictWriter(f, fieldnames=list(losses[0]))
            writer.writeheader()
            writer.writerows(losses)
        written.append("loss.csv")
    print(f"wrote {', '.join(str(args.out / name) for name in written)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
