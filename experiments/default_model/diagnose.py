"""Where does a model's play go wrong? Move-by-move optimality of a ``ragen-eval`` run, against chance.

For every Sokoban turn of the run, each executed move is *optimal* when it shortens the fewest-moves
solution from the state it was played in by one (the solver's distance, recomputed after each move);
a move after a non-optimal one is scored from where that one left the player. For every FrozenLake
(slippery) turn, the first executed move is optimal when no other move has a higher chance of
reaching the goal within the actions left (finite-horizon value iteration). Beside each rate stands
what a uniformly random move would score on the same states, so "reads the grid" has a baseline.

    python experiments/default_model/diagnose.py runs/default_model/eval/model --out diagnosis.json
"""

from __future__ import annotations

import argparse
import copy
import json
import sys
from collections import defaultdict
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from ragen_envs.frozen_lake import FrozenLakeEnv, FrozenLakeLevel, value_iteration
from ragen_envs.frozen_lake.planning import neighbour_table
from ragen_envs.sokoban import SokobanEnv, solve

Cell = tuple[int, int]
#: FrozenLake's actions in Gymnasium's order: a slip turns the move one step either way in this order.
LAKE_ACTIONS = FrozenLakeEnv.action_names


class SokobanDistance:
    """Fewest moves to solve a Sokoban position (None: unsolvable), cached over one turn."""

    def __init__(self) -> None:
        self.cache: dict[tuple[tuple[Cell, ...], Cell], int | None] = {}

    def __call__(self, env: SokobanEnv) -> int | None:
        level = env.current_level()
        key = (tuple(sorted(level.boxes)), tuple(level.player))
        if key not in self.cache:
            self.cache[key] = 0 if set(level.boxes) == set(level.targets) else solve(level).moves
        return self.cache[key]


def sokoban_turn(state: Mapping[str, Any], moves: list[str], counts: dict[int, list[float]]) -> None:
    """Add one turn's moves to ``counts[k] = [turns, optimal, random's expected optimal]`` (k: 1-based).

    Each move is played by the game itself (``SokobanEnv.step`` on a copy), so the rule is the env's."""
    env = SokobanEnv()
    env.reset(options={"level": "\n".join(state["rows"])})
    distance_of = SokobanDistance()
    distance = distance_of(env)
    for k, move in enumerate(moves, start=1):
        if not distance:  # solved, or no solution left: nothing is optimal any more
            break
        shorter = {}
        for action, name in enumerate(SokobanEnv.action_names):
            trial = copy.deepcopy(env)
            trial.step(action)
            shorter[name] = distance_of(trial) == distance - 1
        env.step(SokobanEnv.action_names.index(move))
        counts[k][0] += 1
        counts[k][1] += shorter[move]
        counts[k][2] += sum(shorter.values()) / len(shorter)
        distance = distance_of(env)


def lake_action_values(rows: tuple[str, ...], player: Cell, steps: int, success_rate: float) -> np.ndarray:
    """Each move's best chance of reaching the goal within ``steps`` actions from ``player`` (slippery)."""
    level = FrozenLakeLevel(rows)
    after = value_iteration(level, is_slippery=True, success_rate=success_rate, horizon=max(steps - 1, 0))
    values = after.success_prob[-1].reshape(-1)
    reach = neighbour_table(level.height, level.width)[player[0] * level.width + player[1]]
    fail = (1.0 - success_rate) / 2.0
    out = np.zeros(len(LAKE_ACTIONS))
    for a in range(len(LAKE_ACTIONS)):
        for turn, p in ((-1, fail), (0, success_rate), (1, fail)):
            out[a] += p * values[reach[(a + turn) % len(LAKE_ACTIONS)]]
    return out


def diagnose(records: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """Move-by-move optimality of a run's Sokoban and slippery FrozenLake episodes (see the module doc)."""
    sokoban: dict[int, list[float]] = defaultdict(lambda: [0, 0, 0.0])
    lake = {"turns": 0, "optimal": 0, "random_optimal": 0.0, "chance": 0.0, "best_chance": 0.0, "random_chance": 0.0}
    for record in records:
        actions_left = record["protocol"]["max_actions_per_episode"]
        for turn in record["turns"]:
            state, moves = turn.get("state_before") or {}, turn.get("actions_executed") or []
            if moves and state.get("game") == "sokoban":
                sokoban_turn(state, moves, sokoban)
            elif moves and state.get("game") == "frozenlake" and state.get("is_slippery"):
                q = lake_action_values(tuple(state["rows"]), tuple(state["player"]), actions_left,
                                       record["env_config"]["success_rate"])
                best = q >= q.max() - 1e-12
                chosen = LAKE_ACTIONS.index(moves[0])
                lake["turns"] += 1
                lake["optimal"] += bool(best[chosen])
                lake["random_optimal"] += float(best.mean())
                lake["chance"] += float(q[chosen])
                lake["best_chance"] += float(q.max())
                lake["random_chance"] += float(q.mean())
            actions_left -= len(moves)
    out: dict[str, Any] = {}
    if sokoban:
        out["sokoban"] = [{"move_in_turn": k, "moves": int(n), "optimal": ok / n, "random_optimal": rnd / n}
                          for k, (n, ok, rnd) in sorted(sokoban.items())]
    if lake["turns"]:
        n = lake["turns"]
        out["frozenlake"] = {"turns": n, "first_move_optimal": lake["optimal"] / n,
                             "random_first_move_optimal": lake["random_optimal"] / n,
                             "mean_goal_chance_of_first_move": lake["chance"] / n,
                             "best_goal_chance": lake["best_chance"] / n,
                             "random_goal_chance": lake["random_chance"] / n}
    return out


def main(argv: list[str] | None = None) -> int:
    """Diagnose the run directory given and print (and optionally write) the figures as JSON."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("run", type=Path, help="a ragen-eval run directory (with episodes.jsonl)")
    parser.add_argument("--out", type=Path, default=None, help="also write the JSON here")
    args = parser.parse_args(argv)
    episodes = args.run / "episodes.jsonl"
    if not episodes.is_file():
        parser.error(f"{args.run} is not a ragen-eval run directory: no episodes.jsonl")
    records = [json.loads(line) for line in episodes.read_text().splitlines() if line.strip()]
    result = diagnose(r for r in records if not r.get("error"))
    if not result:
        parser.error(f"{episodes} holds no Sokoban or slippery FrozenLake turns to diagnose")
    text = json.dumps(result, indent=2) + "\n"
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text)
    print(text, end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
