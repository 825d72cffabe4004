"""Write the environment cards that the OpenEnv server's ``/metadata`` carries, from committed data.

    python scripts/openenv_cards.py            # rewrites ragen_envs/openenv_server/cards.json
    python scripts/openenv_cards.py --check    # exits 1 when the committed file is out of date

One card per registered preset: oracle and random success on the test split (leaderboards/leaderboard.json
where the preset is on the leaderboard, else the runs of experiments/preset_baselines), the level space and
the split leak (docs/envs/level_space.json, written by scripts/level_space.py), the certificate's meaning,
the protocol budgets, and a measured RL gain (experiments/rl_gain/data/results.json) where one exists.
Standard library and ragen_envs only.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from ragen_envs import PRESETS
from ragen_envs.text.config import ProtocolConfig
from ragen_envs.text.episode import make_env

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "ragen_envs" / "openenv_server" / "cards.json"
LEADERBOARD = ROOT / "leaderboards" / "leaderboard.json"
LEVEL_SPACE = ROOT / "docs" / "envs" / "level_space.json"
RL_GAIN = ROOT / "experiments" / "rl_gain" / "data" / "results.json"
#: The built-in oracle's and random agent's runs on the presets the leaderboard leaves out.
PRESET_RUNS = ROOT / "experiments" / "preset_baselines"

#: What a level's certificate states, by game (the entry point's module).
CERTIFICATE_MEANING = {
    "ragen_envs.sokoban.env": "an optimal solution (fewest moves, then fewest pushes) found by the solver; "
                              "optimal_steps is its length",
    "ragen_envs.frozen_lake.env": "the shortest path length and the optimal success probability under "
                                  "slipping within the horizon (value iteration)",
    "ragen_envs.bandit.env": "each arm's expected reward and variance; the optimal arm",
    "ragen_envs.countdown.env": "a solution expression that reaches the target (only solvable instances are "
                                "generated)",
    "ragen_envs.sudoku.env": "the solution and its uniqueness (a solver confirmed exactly one), with the "
                             "placements that fill the grid",
    "ragen_envs.rubiks.env": "an optimal move sequence (shortest in face turns, from an exact distance table)",
}


def builtin_test_success(rows: list[dict[str, Any]], model: str, env: str) -> dict[str, Any] | None:
    """The built-in ``model``'s (``oracle``, ``random``) success on preset ``env``'s test split, with its 95% CI
    and source: the leaderboard's row (``rows``, leaderboards/leaderboard.json), else the preset runs'; None
    where neither has played it. The cards and docs/envs.md's preset table both take their figures from here."""
    for row in rows:
        if (row["model"] == model and row["backend"] == "builtin" and row["split"] == "test"
                and row.get("per_env", {}).get(env) is not None):
            return {"success": round(row["per_env"][env], 4), "ci95": [round(x, 4) for x in row["per_env_ci95"][env]],
                    "split": "test", "source": "leaderboards/leaderboard.json"}
    return _preset_run_success(model, env)


def _preset_run_success(model: str, env: str) -> dict[str, Any] | None:
    summary = PRESET_RUNS / f"{model}__builtin__test__presets" / "summary.json"
    per_env = json.loads(summary.read_text())["per_env"] if summary.exists() else {}
    if env not in per_env:
        return None
    played = per_env[env]
    return {"success": round(played["success_rate"], 4), "ci95": [round(x, 4) for x in played["success_ci95"]],
            "split": "test", "source": str(summary.relative_to(ROOT))}


def cards() -> dict[str, dict[str, Any]]:
    """Every preset's card, keyed by preset name, in registration order."""
    rows = json.loads(LEADERBOARD.read_text())["rows"]
    space = json.loads(LEVEL_SPACE.read_text())
    gains = {row["game"]: row for row in json.loads(RL_GAIN.read_text())}
    out: dict[str, dict[str, Any]] = {}
    for preset in PRESETS:
        env = make_env(preset.name)
        game = env.unwrapped
        config = ProtocolConfig().resolved(game.text_defaults)
        env.close()
        levels = space.get(preset.name, {})
        gain = gains.get(preset.name)
        out[preset.name] = {
            "env_id": preset.env_id,
            "description": preset.description,
            "actions": list(game.action_names),
            "oracle_test": builtin_test_success(rows, "oracle", preset.name),
            "random_test": builtin_test_success(rows, "random", preset.name),
            "level_space": None if not levels else {
                "distinct_in_sample": levels["distinct_in_sample"], "sampled_seeds": levels["sampled_seeds"],
                "chao1_estimate": levels["chao1_estimate"], "exact": levels.get("exact"),
                "source": "docs/envs/level_space.json (scripts/level_space.py)"},
            # Test-split levels among the sampled train-split levels: 0 by construction (ragen_envs/splits.py);
            # None where the game has a single level shared by every split (nothing to hold out).
            "split_leak": levels.get("overlap_512_test_split_vs_sampled_train_split"),
            "certificate": CERTIFICATE_MEANING[preset.entry_point.split(":")[0]],
            "budgets": {"max_turns": config.max_turns, "max_actions_per_turn": config.max_actions_per_turn,
                        "max_actions_per_episode": config.max_actions_per_episode,
                        "format_penalty": config.format_penalty},
            "rl_gain": None if gain is None else {
                "levels": gain["levels"], "sft_success": gain["sft_success"], "rl_success": gain["rl_success"],
                "mcnemar_p": gain["mcnemar_p"], "source": "experiments/rl_gain/data/results.json"},
        }
    return out


def main(argv: list[str] | None = None) -> int:
    """Write (or with ``--check`` compare) the cards file; returns the exit status."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare with the committed file instead of writing")
    args = parser.parse_args(argv)
    text = json.dumps(cards(), indent=1) + "\n"
    if args.check:
        if OUT.read_text() != text:
            print(f"{OUT.relative_to(ROOT)} is out of date: run python scripts/openenv_cards.py", file=sys.stderr)
            return 1
        print(f"{OUT.relative_to(ROOT)} is up to date")
        return 0
    OUT.write_text(text)
    print(f"wrote {OUT.relative_to(ROOT)} ({len(PRESETS)} cards)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
