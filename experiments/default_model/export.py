"""Copy the multi-game SFT model into ``ragen_eval/default_model/``, the embedded ``ragen-eval`` default.

Copies the weights in half precision and the tokenizer (only what a ``transformers`` / vLLM load
needs) and writes ``provenance.json`` and ``README.md`` from the run's ``sft_config.json`` and the
test results of ``evaluate.py``: the exact commands, the data scale and the per-game figures beside
the oracle and random. Paths are written relative to the repository root, never as machine paths.

    python experiments/default_model/export.py --run runs/default_model/sft \\
        --results experiments/default_model/results.json
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "experiments" / "baselines"))
from export_default_model import FILES, TARGET, install_checkpoint  # noqa: E402

TRAIN_COMMAND = "experiments/default_model/train.sh runs/default_model/sft"
EVAL_COMMAND = ("python experiments/default_model/evaluate.py --model default --episodes 256 "
                "--out runs/default_model/eval --results experiments/default_model/results.json")
#: The commit whose ``ragen_train``/``ragen_envs`` trained the shipped weights (unchanged since, up to the export).
COMMIT = "8220e09"
#: How the shipped weights were actually run, where that differs in form from TRAIN_COMMAND.
TRAINED_UNDER = ("The shipped weights ran the ten stages as separate jobs with the same settings: stage 1 is the "
                 "SFT stage of `experiments/rl_gain/run.sh simple_sokoban runs/rl_gain_short2` (chunks of 400 "
                 "steps), stages 2 to 8 the `ragen-train sft` lines of train.sh (chunks of 500), stage 9 "
                 "train.sh's stage-9 line, at commit 1790521, from a copy of the eight-stage weights as they were "
                 "shipped before it, and stage 10 train.sh's last line, at commit 1c5083b, from a copy of the "
                 "nine-stage weights as shipped (both from half precision, in chunks of 1,000 steps).")


def main(argv: list[str] | None = None) -> int:
    """Export the model of ``--run`` with the figures of ``--results``."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--run", default="runs/default_model/sft", help="the last stage's output directory")
    parser.add_argument("--results", default="experiments/default_model/results.json", help="evaluate.py output")
    args = parser.parse_args(argv)
    run, results_path = Path(args.run), Path(args.results)
    missing = [f for f in FILES if not (run / f).is_file()]
    if missing or not results_path.is_file():
        parser.error(f"{run} lacks {missing} or {results_path} is missing; train and evaluate first")
    results = json.loads(results_path.read_text())
    stages = stage_chain(run)
    install_checkpoint(run)
    model_config = json.loads((run / "config.json").read_text())
    games = list(stages[-1]["demonstrations"])
    provenance = {
        "games": games,
        "stage": "oracle-sft",
        "protocol": "default (ragen_envs.text.ProtocolConfig defaults; ragen-eval's prompts)",
        "model": {k: model_config[k] for k in ("hidden_size", "num_hidden_layers", "num_attention_heads",
                                               "intermediate_size", "vocab_size")},
        "stages": stages,
        "test": results["players"],
        "test_episodes_per_game": results["episodes"],
        "train_command": TRAIN_COMMAND,
        "eval_command": results["commands"]["model"],
        "trained_at_commit": COMMIT,
    }
    (TARGET / "provenance.json").write_text(json.dumps(provenance, indent=2) + "\n")
    size_mb = sum((TARGET / f).stat().st_size for f in FILES) / 1e6
    (TARGET / "README.md").write_text(_readme(provenance, size_mb))
    print(f"exported {run} to {TARGET}: {size_mb:.1f} MB")
    return 0


def stage_chain(run: Path) -> list[dict]:
    """The SFT runs that made ``run``, first to last, as provenance entries.

    Follows each run's ``--model`` back to ``tiny``, or to a copy of an exported default model (a
    stage trained on top of the shipped weights), whose own provenance lists the stages before it.
    """
    stages: list[dict] = []
    while True:
        if not (run / "sft_config.json").is_file() and (run / "provenance.json").is_file():
            return json.loads((run / "provenance.json").read_text())["stages"] + stages
        config = json.loads((run / "sft_config.json").read_text())
        with open(run / "sft_metrics.csv") as handle:
            rows = list(csv.DictReader(handle))
        demos = config["demos"]
        stages.insert(0, {"demonstrations": {d["env"]: d["num_episodes"] for d in demos},
                          "protocol": demos[0].get("protocol") or "default", "demo_seed": demos[0]["seed"],
                          **{k: config[k] for k in ("epochs", "batch_size", "lr", "warmup_steps", "seed")},
                          "optimizer_steps": len(rows),
                          "step_seconds": round(sum(float(r["seconds"]) for r in rows))})
        if config["model"] == "tiny":
            return stages
        run = Path(config["model"])


def _readme(p: dict, size_mb: float) -> str:
    n_params = "{hidden_size} hidden, {num_hidden_layers} layers".format(**p["model"])
    table = "\n".join(
        f"| {g} | {p['test']['model'][g]['success_rate']:.3f} "
        f"[{p['test']['model'][g]['success_ci95'][0]:.3f}, {p['test']['model'][g]['success_ci95'][1]:.3f}] | "
        f"{p['test']['model'][g]['format_error_rate']:.3f} | "
        + " | ".join(f"{p['test'][b][g]['success_rate']:.3f}" for b in ("oracle", "random") if b in p["test"]) + " |"
        for g in p["test"]["model"])  # the envs it was evaluated on, the leaderboard's
    demos = "; then ".join(", ".join(f"{n} {g}" for g, n in st["demonstrations"].items())
                           + f" ({st['optimizer_steps']} steps of batch {st['batch_size']}, lr {st['lr']}, "
                           + ("the default protocol)" if st["protocol"] == "default" else
                              "a short prompt: the grid alone each turn, experiments/rl_gain/short_protocol.json)")
                           for st in p["stages"])
    return f"""<!-- generated by experiments/default_model/export.py; do not edit -->
# The embedded default model of `ragen-eval`

One tiny Qwen2-architecture causal LM ({n_params}; {size_mb:.1f} MB with float16 weights, random
init, trained only on a CPU) that plays SimpleSokoban, FrozenLake (slippery) and Bandit with the
default text protocol, the prompts every other model is evaluated with. It was trained by
supervised fine-tuning on oracle play of fresh train-split levels, one pass each, in {len(p['stages'])} stage(s):
{demos}. Its replies are
`<think></think><answer>...</answer>`. See experiments/default_model/README.md for the curve of success against data.

Test split ({p['test_episodes_per_game']} levels per game, ragen-eval's default sampling):

| game | success [95% CI] | format errors | oracle | random |
|---|---|---|---|---|
{table}

Bandit success is the rate of choosing the arm with the higher expected reward.

{TRAINED_UNDER}

Reproduce (from the repository root, at the commit that added these weights; what SFT runs in
`ragen_train` and `ragen_envs` is unchanged since {p['trained_at_commit']}, where they were trained):

```
{TRAIN_COMMAND}
{EVAL_COMMAND}
python experiments/default_model/export.py --run runs/default_model/sft --results experiments/default_model/results.json
```
"""


if __name__ == "__main__":
    sys.exit(main())
