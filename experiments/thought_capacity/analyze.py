"""The thought-capacity probe's figures (plan.md beside this file): claim accuracy by kind against training step.

    python experiments/thought_capacity/analyze.py runs/thought_capacity/eval --export experiments/thought_capacity/data
    python experiments/thought_capacity/analyze.py experiments/thought_capacity/data

``--export`` copies each finished evaluation of run.sh (``random``, ``oracle``, ``S-stepN``, ``B-stepN``) into
DIR/<evaluation>.json: ragen-eval's figures for larger_sokoban (success, format errors, think words, thought-state
consistency with its claim kinds). Writes summary.json (per model and step, and the plan's decision where both
models reached step 2,000) and capacity.png beside this file.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
PRESET = "larger_sokoban"
EVALUATION = re.compile(r"(?P<model>[SB])-step(?P<step>\d+)|random|oracle")
MODELS = {"S": "2 layers x 128 (the default model's shape)", "B": "4 layers x 256"}
KINDS = ("position", "relation", "prediction")
FINAL_STEP = 2000
READS, FAILS = 0.95, 0.90  # the plan's thresholds on position accuracy at the final step


def compact(evaluation: Path) -> dict[str, Any]:
    """The figures of one finished evaluation directory."""
    group = json.loads((evaluation / "summary.json").read_text())["per_env"][PRESET]
    consistency = group.get("consistency") or {}
    return {"episodes": group["episodes"], "success_rate": group["success_rate"],
            "format_error_rate": group["format_error_rate"], "think_words_per_turn": group["think_words_per_turn"],
            "claim_accuracy": consistency.get("claim_accuracy"), "n_claims": consistency.get("n_claims"),
            "by_kind": {kind: (consistency.get("by_kind") or {}).get(kind) for kind in KINDS}}


def summarize(data: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """Per model, its figures by step; the baselines; the plan's decision once both models reached the last step."""
    curves: dict[str, dict[int, Any]] = {model: {} for model in MODELS}
    for name, figures in data.items():
        match = EVALUATION.fullmatch(name)
        if match and match["model"]:
            curves[match["model"]][int(match["step"])] = figures
    out: dict[str, Any] = {"preset": PRESET, "models": MODELS,
                           "baselines": {name: data[name] for name in ("random", "oracle") if name in data},
                           "curves": {m: {str(k): v for k, v in sorted(c.items())} for m, c in curves.items()}}
    finals = {m: c.get(FINAL_STEP) for m, c in curves.items()}
    if all(finals.values()):
        position = {m: f["by_kind"]["position"]["claim_accuracy"] for m, f in finals.items()}
        if position["B"] >= READS and position["S"] < FAILS:
            verdict = "size is what fails: B reads the 8x8 room, S does not"
        elif position["B"] < FAILS and position["S"] < FAILS:
            verdict = "neither size reads the room from these demonstrations"
        elif position["B"] >= READS and position["S"] >= READS:
            verdict = "both read the room: reading is learnable at the default's size"
        else:
            verdict = "no rule of the plan applies"
        out["decision"] = {"position_accuracy_at_final_step": position, "verdict": verdict}
    return out


def plot(summary: dict[str, Any], path: Path) -> None:
    """Claim accuracy by kind against step, one line per model and kind."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.4, 4))
    styles = {"S": "--", "B": "-"}
    colors = {"position": "tab:blue", "relation": "tab:orange", "prediction": "tab:green"}
    for model, curve in summary["curves"].items():
        steps = [int(s) for s in curve]
        for kind in KINDS:
            values = [curve[str(s)]["by_kind"][kind]["claim_accuracy"] for s in steps]
            ax.plot(steps, values, styles[model], marker="o", color=colors[kind],
                    label=f"{model} ({summary['models'][model].split(' (')[0]}): {kind}")
    ax.axhline(READS, color="grey", lw=0.8, ls=":")
    if any(int(step) > FINAL_STEP for step in summary["curves"]["S"]):  # the plan's addition: S continued
        ax.axvline(FINAL_STEP, color="grey", lw=0.8, ls="--")
        ax.text(FINAL_STEP + 60, 0.03, "S continued: new demonstrations,\nfresh warm-up and decay", fontsize=7)
    ax.set(xlabel="SFT step (16 one-turn demonstrations each)", ylabel="claim accuracy on 128 val levels",
           ylim=(0, 1.02), title=f"Can a bigger tiny model read an 8x8 room? ({PRESET}, first turn)")
    ax.legend(fontsize=7, loc="lower right")
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main(argv: list[str] | None = None) -> int:
    """Export (optionally), summarise and plot."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("source", type=Path, help="run.sh's eval directory, or a directory of exported JSON")
    parser.add_argument("--export", type=Path, help="copy the finished evaluations' figures here first")
    args = parser.parse_args(argv)
    if args.export is not None:
        args.export.mkdir(parents=True, exist_ok=True)
        for evaluation in sorted(args.source.iterdir()):
            if EVALUATION.fullmatch(evaluation.name) and (evaluation / "summary.json").is_file():
                (args.export / f"{evaluation.name}.json").write_text(
                    json.dumps(compact(evaluation), indent=1) + "\n")
        source = args.export
    else:
        source = args.source
    data = {p.stem: json.loads(p.read_text()) for p in sorted(source.glob("*.json"))}
    summary = summarize(data)
    (HERE / "summary.json").write_text(json.dumps(summary, indent=1) + "\n")
    if any(summary["curves"].values()):
        plot(summary, HERE / "capacity.png")
    print(json.dumps(summary.get("decision", "not both models at the final step yet"), indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
