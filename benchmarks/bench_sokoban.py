"""Sokoban speed against gym-sokoban and TextArena, timed in one run, with the ratios printed.

    python benchmarks/bench_sokoban.py [--seconds 20] [--large-seconds 60] [--peer-python /tmp/venv-peer/bin/python]

The peers live in their own environment, since gym-sokoban needs gym 0.26.2 and numpy < 2:

    python -m venv /tmp/venv-peer && /tmp/venv-peer/bin/pip install "numpy<2" gym==0.26.2 gym-sokoban textarena

Measured: (1) levels generated per second (ours with its certificate; neither peer certifies)
at 6x6/1, 7x7/2, 10x10/3 and 10x10/4 boxes; (2) fewest-moves solving time of our 10x10/4
levels; (3) env steps per second, ours with the text grid rendered at every step, TextArena with
its text board, gym-sokoban with its image rendering bypassed (the raw room array, no text).
Each figure is a rate over a time budget; a peer call that raises counts as time spent without a
level. Peers and ours alternate size by size so that load from other processes hits both alike.
"""

from __future__ import annotations

import argparse
import json
import pathlib
import statistics
import subprocess
import sys
import time

import numpy as np

from ragen_envs.sokoban import SokobanConfig, SokobanEnv, generate, parse_level, solve

SIZES = ((6, 6, 1), (7, 7, 2), (10, 10, 3), (10, 10, 4))

# Runs inside the peers' environment; argv: task ("gen" or "step"), seconds, size as JSON.
# Prints one JSON object.
PEER_SCRIPT = r"""
import json, sys, time, warnings
import numpy as np
warnings.filterwarnings("ignore")
task, seconds, (h, w, n) = sys.argv[1], float(sys.argv[2]), json.loads(sys.argv[3])

def rate(make_one, budget):
    done = failed = 0
    calls = []
    start = time.perf_counter()
    seed = 0
    while time.perf_counter() - start < budget:
        t = time.perf_counter()
        try:
            make_one(seed)
            done += 1
        except Exception:
            failed += 1
        calls.append(time.perf_counter() - t)
        seed += 1
    total = time.perf_counter() - start
    calls.sort()
    return {"levels": done, "failed": failed, "seconds": total, "per_s": done / total,
            "median_call_s": calls[len(calls) // 2], "p90_call_s": calls[int(0.9 * (len(calls) - 1))]}

out = {}
if task == "gen":
    from gym_sokoban.envs.room_utils import generate_room as gym_generate
    from textarena.envs.Sokoban.utils import generate_room as ta_generate
    steps = int(1.7 * (h + w))
    gym_levels = []
    def gym_one(seed):
        np.random.seed(seed)
        fixed, state, _ = gym_generate(dim=(h, w), num_steps=steps, num_boxes=n)
        gym_levels.append((fixed.tolist(), state.tolist()))
    def ta_one(seed):
        ta_generate(dim=(h, w), num_steps=steps, num_boxes=n, seed=seed)
    out = {"gym-sokoban": rate(gym_one, seconds / 2), "textarena": rate(ta_one, seconds / 2),
           "gym_levels": gym_levels}
else:
    from gym_sokoban.envs.sokoban_env import SokobanEnv as GymSokoban
    from textarena.envs.Sokoban.env import SokobanEnv as TASokoban
    actions = np.random.default_rng(0).integers(1, 5, size=20_000).tolist()  # push/move up, down, left, right
    env = GymSokoban(dim_room=(h, w), num_boxes=n, max_steps=100)
    np.random.seed(0)
    env.reset()
    env.render = lambda mode=None: env.room_state  # skip its image rendering: the raw array, no text
    start, count = time.perf_counter(), 0
    while time.perf_counter() - start < seconds / 2:
        for a in actions:
            done = env.step(a)[2]
            count += 1
            if done:
                env.reset()
    out["gym-sokoban (raw room_state, no text)"] = count / (time.perf_counter() - start)
    ta_env = TASokoban(dim_room=(h, w), num_boxes=n, max_turns=100)
    ta_env.reset(num_players=1, seed=0)
    moves = ["[up]", "[down]", "[left]", "[right]"]
    start, count, seed = time.perf_counter(), 0, 0
    while time.perf_counter() - start < seconds / 2:
        for a in actions:
            done, _ = ta_env.step(moves[a - 1])
            count += 1
            if done:
                seed += 1
                ta_env.reset(num_players=1, seed=seed)
    out["textarena (text board)"] = count / (time.perf_counter() - start)
print(json.dumps(out))
"""


def run_peer(python: str, task: str, seconds: float, size: tuple[int, int, int]) -> dict | None:
    """One peer measurement in the peers' venv, or None (with the reason on stderr) if it fails."""
    if not pathlib.Path(python).exists():
        print(f"no peer python at {python}; see this file's docstring", file=sys.stderr)
        return None
    proc = subprocess.run([python, "-c", PEER_SCRIPT, task, str(seconds), json.dumps(size)],
                          capture_output=True, text=True)
    if proc.returncode != 0:
        print(f"peer run failed:\n{proc.stderr[-2000:]}", file=sys.stderr)
        return None
    return json.loads(proc.stdout.strip().splitlines()[-1])


def gym_level_text(fixed: list[list[int]], state: list[list[int]]) -> str:
    """A gym-sokoban room (fixed layout + state codes) in standard notation."""
    rows = []
    for fixed_row, state_row in zip(fixed, state):
        row = ""
        for f, s in zip(fixed_row, state_row):
            target = f == 2
            row += ("#" if s == 0 else ("+" if target else "@") if s == 5
                    else ("*" if target else "$") if s in (3, 4) else ("." if target else " "))
        rows.append(row)
    return "\n".join(rows)


def solve_peer_levels(levels: list) -> dict:
    """Our solver on gym-sokoban's generated levels: times and outcomes."""
    times, moves, statuses = [], [], []
    for fixed, state in levels:
        level = parse_level(gym_level_text(fixed, state))
        start = time.perf_counter()
        result = solve(level)
        times.append(time.perf_counter() - start)
        statuses.append(result.status.value)
        if result.solved:
            moves.append(result.moves)
    times.sort()
    return {"levels": len(levels), "solved": statuses.count("solved"), "median_s": times[len(times) // 2],
            "p90_s": times[int(0.9 * (len(times) - 1))], "worst_s": times[-1],
            "median_moves": statistics.median(moves) if moves else float("nan")}


def our_generation(budget: float, size: tuple[int, int, int]) -> dict:
    h, w, n = size
    cfg = SokobanConfig(height=h, width=w, num_boxes=n)
    done, pushes, start, seed = 0, [], time.perf_counter(), 0
    while time.perf_counter() - start < budget:
        level = generate(cfg, seed)
        pushes.append(level.certificate.pushes)
        done += 1
        seed += 1
    total = time.perf_counter() - start
    return {"per_s": done / total, "levels": done, "median_pushes": statistics.median(pushes),
            "max_pushes": max(pushes)}


def our_solving(levels: int, min_pushes: int) -> dict[str, float]:
    times, moves = [], []
    for seed in range(levels):
        level = generate(SokobanConfig(height=10, width=10, num_boxes=4, min_pushes=min_pushes), seed)
        start = time.perf_counter()
        result = solve(level)
        times.append(time.perf_counter() - start)
        assert result.moves == level.certificate.moves
        moves.append(result.moves)
    times.sort()
    return {"levels": levels, "median_s": times[len(times) // 2], "p90_s": times[int(0.9 * (levels - 1))],
            "worst_s": times[-1], "median_moves": statistics.median(moves)}


def our_steps(budget: float) -> float:
    env = SokobanEnv(config={"height": 6, "width": 6, "num_boxes": 1})
    env.reset(seed=0)
    actions = np.random.default_rng(0).integers(0, 4, size=20_000).tolist()
    start, count, episode_steps = time.perf_counter(), 0, 0
    while time.perf_counter() - start < budget:
        for a in actions:
            _, _, terminated, _, _ = env.step(a)
            env.observation_text("grid")
            count += 1
            episode_steps += 1
            if terminated or episode_steps == 100:
                env.reset()
                episode_steps = 0
    return count / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=20.0, help="time budget per measurement")
    parser.add_argument("--large-seconds", type=float, default=60.0,
                        help="time budget for the peers at 10x10 (one of their levels can take seconds)")
    parser.add_argument("--peer-python", default="/tmp/venv-peer/bin/python", help="python of the peers' venv")
    parser.add_argument("--json", type=pathlib.Path, help="also write every figure to this file")
    args = parser.parse_args()

    # Peers and ours alternate size by size, so a change in machine load hits both sides alike.
    ours, peers_gen = {}, {}
    for size in SIZES:
        key = "{}x{}/{}".format(*size)
        budget = args.large_seconds if size[0] >= 10 else args.seconds
        peers_gen[key] = run_peer(args.peer_python, "gen", budget, size)
        ours[key] = our_generation(args.seconds / 2, size)
    peer_steps = run_peer(args.peer_python, "step", args.seconds, (6, 6, 1))
    steps = our_steps(args.seconds / 2)
    solving = {"boxoban": our_solving(50, 1), "boxoban_hard (12+ pushes)": our_solving(50, 12)}
    gym_large = (peers_gen.get("10x10/4") or {}).pop("gym_levels", [])
    if gym_large:
        solving["gym-sokoban's own 10x10/4 levels (from the run above)"] = solve_peer_levels(gym_large)
    for figures in peers_gen.values():
        if figures:
            figures.pop("gym_levels", None)
    peers = {"gen": peers_gen, "step": peer_steps}

    print("\n## Levels generated per second (ours: with an optimal-solution certificate)")
    print("| size | ours | median pushes | gym-sokoban | TextArena | ours / faster peer |")
    print("|---|---|---|---|---|---|")
    for key, mine in ours.items():
        row = f"| {key} | {mine['per_s']:.1f} | {mine['median_pushes']:g} |"
        if peers["gen"][key]:
            g, t = peers["gen"][key]["gym-sokoban"], peers["gen"][key]["textarena"]
            best = max(g["per_s"], t["per_s"])
            ratio = f"{mine['per_s'] / best:.0f}x" if best > 0 else "peers made no level"
            row += (f" {g['per_s']:.2f} ({g['failed']} raised; median call {g['median_call_s']:.3f} s) |"
                    f" {t['per_s']:.2f} ({t['failed']} raised; median call {t['median_call_s']:.3f} s) | {ratio} |")
        else:
            row += " n/a | n/a | n/a |"
        print(row)
    print("\n## Fewest-moves solving with solve(), 10x10 / 4 boxes (ours: seeds 0..49)")
    for name, figures in solving.items():
        print(f"{name}: median {figures['median_s'] * 1e3:.1f} ms, 90th percentile {figures['p90_s'] * 1e3:.1f} ms, "
              f"worst {figures['worst_s'] * 1e3:.1f} ms (median solution {figures['median_moves']:g} moves"
              + (f"; {figures['solved']}/{figures['levels']} solved" if "solved" in figures else "") + ")")
    print("\n## env.step per second, 6x6 / 1 box")
    print(f"ours, with the text grid rendered every step: {steps:,.0f}")
    if peers["step"]:
        for name, value in peers["step"].items():
            print(f"{name}: {value:,.0f}  (ours / {name.split()[0]}: {steps / value:.1f}x)")
    if args.json:
        args.json.write_text(json.dumps({"ours": ours, "solving": solving, "steps": steps, "peers": peers}, indent=1))


if __name__ == "__main__":
    main()
