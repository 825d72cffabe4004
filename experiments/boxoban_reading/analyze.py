"""The boxoban reading probe's figures (plan.md beside this file): first-turn position accuracy against demonstrations.

    python experiments/boxoban_reading/analyze.py runs/boxoban_reading/eval --export experiments/boxoban_reading/data
    python experiments/boxoban_reading/analyze.py experiments/boxoban_reading/data

``--export`` scores each finished evaluation of run.sh (``random``, ``oracle``, ``S-stepN``, ``B-stepN``) with the harness's
checker (``ragen_eval.consistency.score_episode``, first turns only: the probe plays one turn) and writes
DIR/<evaluation>.json: success, format errors, position and relation claims, and position claims by the object they
place (player, box, target). Writes summary.json (per model and step, and the plan's decision once S's step 8,000 is
there; B, the plan's addition, is reported beside S with no rule) and reading.png beside this file.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path
from typing import Any

from ragen_eval.consistency.scoring import aggregate, positions_by_object, score_episode
from ragen_eval.jsonl_store import read_jsonl

HERE = Path(__file__).resolve().parent
PRESET = "boxoban"
EVALUATION = re.compile(r"(?P<model>[SB])-step(?P<step>\d+)|random|oracle")
MODELS = ("S", "B")  # 2 x 128 (the default's shape) and 4 x 256, the plan's addition
BATCH = 16  # demonstrations per step (run.sh's --batch-size)
FINAL_STEP, EARLIER_STEP = 8000, 6000
READS, FAILS, FLAT = 0.95, 0.90, 0.02  # the plan's thresholds


def compact(evaluation: Path) -> dict[str, Any]:
    """The figures of one finished evaluation directory: ragen-eval's success and format errors, and its first
    turns' checkable position and relation claims (pooled and, for positions, by the object placed)."""
    group = json.loads((evaluation / "summary.json").read_text())["per_env"][PRESET]
    first = [score_episode(record)["turns"][0] for record in read_jsonl(evaluation / "episodes.jsonl")]
    by_kind = aggregate(first)["by_kind"]
    return {"episodes": group["episodes"], "success_rate": group["success_rate"],
            "format_error_rate": group["format_error_rate"], "position": by_kind["position"],
            "relation": by_kind["relation"], "position_by_object": positions_by_object(first)}


def export(runs: Path, data: Path) -> list[str]:
    """Write DATA/<evaluation>.json for each finished evaluation under RUNS; returns their names."""
    data.mkdir(parents=True, exist_ok=True)
    names = sorted(p.name for p in runs.iterdir() if EVALUATION.fullmatch(p.name) and (p / "summary.json").is_file())
    for name in names:
        (data / f"{name}.json").write_text(json.dumps(compact(runs / name), indent=1) + "\n")
    return names


def _position(figures: dict[str, Any], thing: str | None = None) -> float | None:
    return (figures["position"] if thing is None else figures["position_by_object"].get(thing, {})).get("claim_accuracy")


def decision(steps: dict[int, dict[str, Any]]) -> dict[str, Any] | None:
    """The plan's rule on the step-8,000 copy (None before it exists): ``reads`` (positions and targets >= 0.95,
    with the first step at which each crossed 0.95), ``levels off`` (positions < 0.90 and less than 0.02 gained
    since step 6,000), else ``neither``, with the gain since step 6,000."""
    if FINAL_STEP not in steps:
        return None
    final = steps[FINAL_STEP]
    positions, targets = _position(final) or 0.0, _position(final, "target") or 0.0
    gain = positions - (_position(steps[EARLIER_STEP]) or 0.0) if EARLIER_STEP in steps else None

    def first(thing: str | None) -> int | None:
        return next((s for s in sorted(steps) if (_position(steps[s], thing) or 0.0) >= READS), None)

    if positions >= READS and targets >= READS:
        verdict = "reads"
    elif positions < FAILS and gain is not None and gain < FLAT:
        verdict = "levels off"
    else:
        verdict = "neither"
    return {"verdict": verdict, "positions": positions, "targets": targets, "gain_since_step_6000": gain,
            "first_step_positions_0.95": first(None), "first_step_targets_0.95": first("target")}


def summarize(data: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """Per model and step (and the random and oracle players): the compact figures, and the plan's decision on S."""
    steps: dict[str, dict[int, dict[str, Any]]] = {model: {} for model in MODELS}
    for name, figures in data.items():
        if (m := EVALUATION.fullmatch(name)) and m["step"]:
            steps[m["model"]][int(m["step"])] = figures
    return {"models": {model: {str(s): {"demonstrations": s * BATCH, **curve[s]} for s in sorted(curve)}
                       for model, curve in steps.items() if curve},
            "players": {name: data[name] for name in ("random", "oracle") if name in data},
            "decision": decision(steps["S"])}


def plot(summary: dict[str, Any], path: Path) -> None:
    """Position accuracy (pooled and by object) against demonstrations, with the plan's 0.95 line."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.4, 4))
    for model, line, mark in (("S", "-", "o"), ("B", ":", "x")):
        rows = list(summary["models"].get(model, {}).values())
        x = [row["demonstrations"] for row in rows]
        ax.plot(x, [_position(row) for row in rows], "k" + line, marker=mark, label=f"{model}: all positions")
        for thing, color in (("player", "C0"), ("box", "C1"), ("target", "C2")):
            ax.plot(x, [_position(row, thing) for row in rows], color + line, marker=mark, markersize=4,
                    label=f"{model}: {thing}")
    ax.axhline(READS, color="grey", linewidth=0.8, linestyle=":")
    ax.set(xlabel="one-turn boxoban demonstrations", ylabel="first-turn position claims right", ylim=(0, 1.02),
           title="Reading a 10x10 four-box room from random weights (val, 128 levels)")
    ax.legend(loc="lower right", fontsize=7, ncol=2)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    """Export (``--export``) and summarize; writes summary.json and reading.png beside this file."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("source", type=Path, help="run.sh's eval directory (with --export) or an exported data dir")
    parser.add_argument("--export", type=Path, default=None, help="write the compact data here first")
    args = parser.parse_args(argv)
    if not args.source.is_dir():
        parser.exit(2, f"analyze.py: error: {args.source} is not a directory\n")
    source = args.source
    if args.export is not None:
        if not export(source, args.export):
            parser.exit(2, f"analyze.py: error: no finished evaluation under {source}\n")
        source = args.export
    data = {p.stem: json.loads(p.read_text()) for p in sorted(source.glob("*.json")) if EVALUATION.fullmatch(p.stem)}
    if not data:
        parser.exit(2, f"analyze.py: error: no exported evaluation in {source}\n")
    summary = summarize(data)
    (HERE / "summary.json").write_text(json.dumps(summary, indent=1) + "\n")
    if summary["models"]:
        plot(summary, HERE / "reading.png")
    for model, curve in summary["models"].items():
        for step, row in curve.items():
            objects = " ".join(f"{thing} {figures['claim_accuracy']:.3f}" for thing, figures in
                               row["position_by_object"].items() if figures["claim_accuracy"] is not None)
            print(f"{model} step {step:>5} ({row['demonstrations']:,} demos): positions {_position(row) or 0:.3f} | "
                  f"{objects} | relations {row['relation']['claim_accuracy'] or 0:.3f} | "
                  f"success {row['success_rate']:.3f} | format errors {row['format_error_rate']:.3f}")
    print("decision:", summary["decision"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
