"""How well do the scripted demonstration players play? Success and turns of ``ragen_train.demos``.

Plays ``--episodes`` demonstrations per game and player (``oracle``, and ``format``: uniformly random
valid actions) on the train split with demo seed 0, the levels SFT trains on, and writes the figures
as JSON beside the record that quotes them (experiments/baselines/README.md, "Demonstration players, measured").

    python experiments/baselines/demo_players.py --out experiments/baselines/demo_players.json
"""

from __future__ import annotations

import argparse
import json
import sys
from datetime import date
from pathlib import Path

from ragen_train.demos import DemoConfig, play_demos

GAMES = ("bandit", "frozenlake", "frozenlake_det", "simple_sokoban")
PLAYERS = ("oracle", "format")


def measure(env: str, mode: str, episodes: int) -> dict[str, float | int | str]:
    """Success rate and mean turns of ``episodes`` demonstrations of one player on one game."""
    records = [demo.record for demo in play_demos(DemoConfig(env=env, mode=mode, num_episodes=episodes, seed=0))]
    return {"env": env, "player": mode, "episodes": len(records),
            "success": sum(bool(r["success"]) for r in records) / len(records),
            "mean_turns": sum(r["num_turns"] for r in records) / len(records)}


def main(argv: list[str] | None = None) -> int:
    """Measure every game and player, write the JSON and print the Markdown table."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--episodes", type=int, default=300, help="demonstrations per game and player")
    parser.add_argument("--out", type=Path, default=Path("experiments/baselines/demo_players.json"))
    args = parser.parse_args(argv)
    if args.episodes < 1:
        parser.error(f"--episodes must be >= 1, got {args.episodes}")
    rows = [measure(env, mode, args.episodes) for env in GAMES for mode in PLAYERS]
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"measured": date.today().isoformat(), "split": "train", "demo_seed": 0,
                                    "rows": rows}, indent=2) + "\n")
    print("| game | player | success | mean turns |\n|---|---|---|---|")
    for row in rows:
        print(f"| {row['env']} | {row['player']} | {row['success']:.3f} | {row['mean_turns']:.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
