"""Success against training data: evaluate the snapshots an SFT run kept, write a CSV and a plot.

``train.sh`` keeps the weights after every chunk under ``STAGE_DIR/snapshots/step_N``; the
demonstrations each had seen by then are counted from ``STAGE_DIR/demo_records.jsonl``, plus those
of the finished stages the stage started from (its ``--model`` chain). Pass the stage directories
to plot with ``--run``, first to last; the last one's final point can be taken from
``evaluate.py``'s results instead of evaluating it again (it then needs no snapshots). A chain
trained across sessions, whose earlier stages' snapshots are gone, keeps those stages' points from
the committed CSV with ``--previous``: its rows of stages before the first ``--run`` come first.

    python experiments/default_model/curve.py --run runs/default_model/sft-stage2 --run runs/default_model/sft \\
        --episodes 64 --final-results experiments/default_model/results.json \\
        --csv experiments/default_model/curve.csv --plot experiments/default_model/curve.png
    python experiments/default_model/curve.py --run runs/default_model/sft-stage9 --run runs/default_model/sft \\
        --final-results experiments/default_model/results.json --previous experiments/default_model/curve.csv \\
        --csv experiments/default_model/curve.csv --plot experiments/default_model/curve.png
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from evaluate import GAMES, TRAINED_AS, evaluate  # noqa: E402
from export import stage_chain  # noqa: E402


def earlier_stages(run: Path) -> Counter[str]:
    """Demonstrations of each game in the finished SFT stages ``run`` started from (its ``--model`` chain)."""
    counts: Counter[str] = Counter()
    for stage in stage_chain(run)[:-1]:
        for game, episodes in stage["demonstrations"].items():
            counts[game] += episodes * stage["epochs"]
    return counts


def episodes_seen(run: Path, step: int) -> dict[str, int]:
    """Demonstrations of each game trained on before ``step``, earlier stages included."""
    config = json.loads((run / "sft_config.json").read_text())
    names = [d["env"] for d in config["demos"]]
    counts: Counter[str] = earlier_stages(run)
    for line in (run / "demo_records.jsonl").read_text().splitlines():
        record = json.loads(line)
        if record["step"] < step and not record.get("dropped"):
            counts[names[record["set"]]] += 1
    return {game: counts[TRAINED_AS.get(game, game)] for game in GAMES}


def stage_number(run: Path) -> int:
    """1 for a stage trained from ``tiny``, 2 for one trained from a stage-1 output, and so on."""
    return len(stage_chain(run))


def main(argv: list[str] | None = None) -> int:
    """Evaluate every snapshot of each ``--run`` and write ``--csv`` and ``--plot``."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--run", required=True, action="append",
                        help="output directory of one SFT stage (repeat, first to last)")
    parser.add_argument("--episodes", type=int, default=64, help="test levels per game for each snapshot")
    parser.add_argument("--final-results", help="evaluate.py results of the last --run's finished model, used for its point")
    parser.add_argument("--out", default="runs/default_model/curve", help="directory for the ragen-eval runs")
    parser.add_argument("--previous", help="an earlier curve CSV whose points of stages before the first --run are kept")
    parser.add_argument("--csv", required=True)
    parser.add_argument("--plot", required=True)
    args = parser.parse_args(argv)
    if args.previous and not Path(args.previous).is_file():
        parser.error(f"--previous {args.previous}: no such file")
    points = []  # (run, step, snapshot directory or None for the --final-results point)
    for index, name in enumerate(args.run):
        run = Path(name)
        if not (run / "sft_config.json").is_file():
            parser.error(f"--run {name}: no sft_config.json, not an SFT output directory")
        snapshots = {int(p.name.split("_")[1]): p for p in (run / "snapshots").glob("step_*")}
        if args.final_results and index == len(args.run) - 1:
            snapshots[json.loads((run / "resume" / "progress.json").read_text())["step"]] = None
        if not snapshots:
            parser.error(f"{run}/snapshots holds no step_N snapshots; train with experiments/default_model/train.sh")
        points += [(run, step, snapshots[step]) for step in sorted(snapshots)]
    rows = []
    if args.previous:
        first = stage_number(Path(args.run[0]))
        with open(args.previous, newline="") as handle:
            rows = [{k: v if k == "game" else _number(v) for k, v in r.items()}
                    for r in csv.DictReader(handle) if int(r["stage"]) < first]
    for run, step, snapshot in points:
        stage = stage_number(run)
        if snapshot is None:
            per_env = json.loads(Path(args.final_results).read_text())["players"]["model"]
        else:
            out = Path(args.out) / f"stage{stage}" / snapshot.name
            per_env, _ = evaluate("model", str(snapshot), args.episodes, out)
        seen = episodes_seen(run, step)
        for game in GAMES:
            result = per_env[game]
            rows.append({"stage": stage, "step": step, "game": game, "demos_seen": seen[game],
                         "demos_seen_total": sum(seen.values()),
                         "episodes": result["episodes"], "success": round(result["success_rate"], 4),
                         "ci_low": round(result["success_ci95"][0], 4), "ci_high": round(result["success_ci95"][1], 4),
                         "format_error_rate": round(result["format_error_rate"], 4)})
    with open(args.csv, "w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    _plot(rows, Path(args.plot))
    print(f"wrote {args.csv} and {args.plot}")
    return 0


def _number(text: str) -> int | float:
    """A CSV cell as the int or float it was written from."""
    return int(text) if text.lstrip("-").isdigit() else float(text)


def _plot(rows: list[dict], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 3.6))
    for game in GAMES:
        points = [r for r in rows if r["game"] == game]
        x = [r["demos_seen"] for r in points]
        y = [r["success"] for r in points]
        err = [[r["success"] - r["ci_low"] for r in points], [r["ci_high"] - r["success"] for r in points]]
        ax.errorbar(x, y, yerr=err, marker="o", capsize=3, label=game)
    ax.set_xscale("log")
    ax.set_xlabel("oracle demonstrations of the game trained on")
    ax.set_ylabel("test success (95% CI)")
    ax.set_ylim(0, 1.02)
    ax.legend()
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


if __name__ == "__main__":
    sys.exit(main())
