"""Evaluate the multi-game default model beside the oracle and random on the same test (or val) levels.

Runs ``ragen-eval evaluate`` (hf backend for the model, built-in agents for the baselines) at the
harness's default sampling settings and the test split (``--split val`` to choose between candidate
models without looking at test), and writes one JSON with each game's success rate, 95% interval
and format-error rate per player, plus the commands that produced them.

    python experiments/default_model/evaluate.py --model runs/default_model/sft --episodes 256 \\
        --out runs/default_model/eval --results experiments/default_model/results.json
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

#: The harness's default envs, so these figures are the leaderboard's (one figure per quantity).
GAMES = ("sokoban", "frozenlake", "bandit")
#: The preset each env's demonstrations were generated under, where the names differ: ``sokoban`` is
#: RAGEN's name for SimpleSokoban, the same generator and levels.
TRAINED_AS = {"sokoban": "simple_sokoban"}


def evaluate(player: str, model: str, episodes: int, out: Path, split: str = "test") -> tuple[dict, str]:
    """Run one ``ragen-eval evaluate`` over every game; returns its per-game summary and the command."""
    command = ["ragen-eval", "evaluate", "--model", model, *(["--backend", "hf"] if player == "model" else []),
               "--env", ",".join(GAMES), "--split", split, "--episodes", str(episodes), "--out", str(out),
               "--run-name", player, "--no-progress", "--json"]
    # one intra-op thread: a shared small CPU runs the tiny model faster without torch's thread pool
    env = {**os.environ, "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS", "1")}
    done = subprocess.run(command, check=True, capture_output=True, text=True, env=env)
    return json.loads(done.stdout)["per_env"], shlex.join(command)


def main(argv: list[str] | None = None) -> int:
    """Evaluate ``--model`` (and oracle/random unless ``--model-only``) and write ``--results``."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", required=True, help="checkpoint directory of the model to evaluate, or "
                        "`default` for the embedded model as shipped (half-precision weights)")
    parser.add_argument("--episodes", type=int, default=256, help="levels per game")
    parser.add_argument("--split", default="test", choices=("test", "val"),
                        help="test (the reported figures) or val (for choosing between candidate models)")
    parser.add_argument("--out", default="runs/default_model/eval", help="directory for the ragen-eval runs")
    parser.add_argument("--results", required=True, help="JSON file to write")
    parser.add_argument("--model-only", action="store_true", help="skip the oracle and random baselines")
    args = parser.parse_args(argv)
    if args.model != "default" and not (Path(args.model) / "config.json").is_file():
        parser.error(f"--model {args.model!r} is neither `default` (the embedded model) nor a checkpoint directory "
                     "(no config.json)")
    if args.episodes < 1:
        parser.error(f"--episodes must be positive, got {args.episodes}")
    players = {"model": args.model} if args.model_only else {"model": args.model, "oracle": "oracle",
                                                               "random": "random"}
    results: dict = {"episodes": args.episodes, "split": args.split, "players": {}, "commands": {}}
    for player, model in players.items():
        per_env, command = evaluate(player, model, args.episodes, Path(args.out), args.split)
        results["commands"][player] = command
        results["players"][player] = {game: {k: per_env[game][k] for k in (
            "episodes", "success_rate", "success_ci95", "format_error_rate", "mean_reward")} for game in GAMES}
    Path(args.results).write_text(json.dumps(results, indent=2) + "\n")
    for game in GAMES:
        row = "  ".join(f"{p} {results['players'][p][game]['success_rate']:.3f}" for p in results["players"])
        print(f"{game:15s} {row}  (model format errors "
              f"{results['players']['model'][game]['format_error_rate']:.3f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
