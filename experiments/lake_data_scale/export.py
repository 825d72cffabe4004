"""The lake data-scale curve from ``run.sh``'s evaluations: a CSV of success per kept model and split, and a plot.

Stage 1 is the run from scratch (``RUN/sft``), stage 2 its continuation on fresh levels
(``RUN/sft-more``; its kept models are evaluated as ``more_step_N``), so a point's demonstrations
are counted across both. Beside success stands how often a turn's first move was optimal (no move
has a higher chance of reaching the goal), with what a uniformly random move would score on the
same states: ``experiments/default_model/diagnose.py``'s measure of whether a model reads the lake.

    python experiments/lake_data_scale/export.py runs/lake_data_scale --out experiments/lake_data_scale/data
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "default_model"))
from diagnose import diagnose  # noqa: E402

from ragen_eval.jsonl_store import read_jsonl  # noqa: E402

BATCH = 16  # run.sh's batch size: one demonstration episode per row, one epoch


def first_stage_demonstrations(run: Path) -> int:
    """Demonstrations the first stage trained on (all of them: the second stage starts from its end)."""
    config = json.loads((run / "sft" / "sft_config.json").read_text())
    return sum(demos["num_episodes"] for demos in config["demos"]) * config["epochs"]


def rows(run: Path) -> list[dict]:
    """One row per evaluated model (a kept SFT model of stage 1 or 2, or random/oracle) and split."""
    out = []
    first_stage: int | None = None  # read once, when a stage-2 model is met
    for summary_path in sorted((run / "eval").glob("*/summary.json")):
        name, _, split = summary_path.parent.name.rpartition("-")
        overall = json.loads(summary_path.read_text())["overall"]
        records = read_jsonl(summary_path.parent / "episodes.jsonl")
        moves = diagnose(r for r in records if not r.get("error"))["frozenlake"]
        stage, step, seen = None, None, None
        if name.startswith(("step_", "more_step_")):
            stage = 2 if name.startswith("more_") else 1
            step = int(name.rpartition("step_")[2])
            if stage == 2 and first_stage is None:
                first_stage = first_stage_demonstrations(run)
            seen = step * BATCH + (first_stage if stage == 2 else 0)
        out.append({"model": "sft" if stage else name, "stage": stage, "step": step, "demonstrations": seen,
                    "split": split, "episodes": overall["episodes"], "success": round(overall["success_rate"], 4),
                    "ci95_low": round(overall["success_ci95"][0], 4), "ci95_high": round(overall["success_ci95"][1], 4),
                    "format_error_rate": round(overall["format_error_rate"], 4),
                    "first_move_optimal": round(moves["first_move_optimal"], 4),
                    "random_first_move_optimal": round(moves["random_first_move_optimal"], 4)})
    return sorted(out, key=lambda r: (r["split"], r["model"], r["demonstrations"] or 0))


def plot(table: list[dict], path: Path) -> None:
    """Success against demonstrations, one line per split, with random and oracle as dashed levels."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 3.6))
    for split, colour in (("val", "tab:blue"), ("test", "tab:orange")):
        points = [r for r in table if r["split"] == split and r["model"] == "sft"]
        xs = [r["demonstrations"] / 1000 for r in points]
        errors = [[r["success"] - r["ci95_low"] for r in points], [r["ci95_high"] - r["success"] for r in points]]
        ax.errorbar(xs, [r["success"] for r in points], yerr=errors, fmt="o-", color=colour, capsize=3,
                    label=f"SFT, {split}")
        for ref, style in (("random", ":"), ("oracle", "--")):
            level = [r["success"] for r in table if r["split"] == split and r["model"] == ref]
            if level:
                ax.axhline(level[0], color=colour, linestyle=style, linewidth=1, label=f"{ref}, {split}")
    first = [r["demonstrations"] for r in table if r["stage"] == 1]
    if any(r["stage"] == 2 for r in table) and first:
        ax.axvline(max(first) / 1000, color="grey", linewidth=0.8)
        ax.text(max(first) / 1000, 0.46, " stage 2: fresh levels, lr 1e-3", fontsize=7, color="grey")
    ax.set_xlabel("FrozenLake demonstrations seen (thousands)")
    ax.set_ylabel("success, 512 levels")
    ax.set_title("Slippery FrozenLake, 2-layer tiny model, short prompt")
    ax.set_ylim(0.15, 0.5)
    ax.legend(fontsize=7, ncol=3, loc="lower center")
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def loss_curve(run: Path) -> list[dict]:
    """Each stage's mean loss per answer token over each 100 of its steps (the per-step logs are too long to commit)."""
    out = []
    for stage, folder in ((1, "sft"), (2, "sft-more")):
        path = run / folder / "sft_metrics.csv"
        if not path.is_file():
            continue
        blocks: dict[int, list[float]] = {}
        with open(path, newline="") as f:
            for row in csv.DictReader(f):
                blocks.setdefault(int(row["step"]) // 100 * 100, []).append(float(row["loss"]))
        out += [{"stage": stage, "first_step": step, "steps": len(losses),
                 "mean_loss": round(sum(losses) / len(losses), 4)} for step, losses in sorted(blocks.items())]
    return out


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
