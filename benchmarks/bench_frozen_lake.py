"""FrozenLake env steps per second, ours against TextArena (text) and Gymnasium (no text), in one run.

    python benchmarks/bench_frozen_lake.py [--seconds 5] [--peer-python /tmp/venv-textarena/bin/python]

TextArena lives in its own environment (it pins its own dependencies):

    python -m venv /tmp/venv-textarena && /tmp/venv-textarena/bin/pip install textarena==0.7.4

Every figure is steps per second of CPU time (``time.process_time``, so other jobs on a shared
machine count against neither side) over a time budget, with uniformly random actions on 4x4
lakes, resetting whenever an episode ends; reset time counts against the rate unless the row says
otherwise. "text" means the model-facing observation string is produced after every step: ours
``env.observation_text("grid")``, TextArena's ``get_observation()`` (its default wrappers).
Gymnasium's FrozenLake renders no text. Our lakes are new on every reset and carry a certificate
(value iteration), Gymnasium's map is fixed, TextArena draws a new map without a certificate.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time

import gymnasium as gym
import numpy as np

import ragen_envs
from ragen_envs.frozen_lake import FrozenLakeEnv

# Runs inside TextArena's environment; prints one JSON object.
PEER_SCRIPT = r"""
import json, random, sys, time, warnings
warnings.filterwarnings("ignore")
import textarena as ta
seconds = float(sys.argv[1])
env = ta.make("FrozenLake-v0")
moves = [random.Random(0).choice(["[up]", "[down]", "[left]", "[right]"]) for _ in range(4096)]
steps = 0
env.reset(num_players=1, seed=0)
env.get_observation()
start = time.process_time()
while time.process_time() - start < seconds:
    for _ in range(256):
        done, _ = env.step(action=moves[steps % 4096])
        steps += 1
        if done:
            env.reset(num_players=1, seed=steps)
        env.get_observation()
elapsed = time.process_time() - start
print(json.dumps({"textarena_text": steps / elapsed}))
"""


def _rate(env: gym.Env, seconds: float, text: bool, reset_free: bool = False) -> float:
    """Steps per second of ``env`` under random actions; ``reset_free`` leaves reset time out of the clock."""
    actions = np.random.default_rng(0).integers(0, 4, size=4096).tolist()
    unwrapped = env.unwrapped
    env.reset(seed=0)
    steps = 0
    reset_time = 0.0
    start = time.process_time()
    while time.process_time() - start - reset_time < seconds:
        for _ in range(256):
            _, _, terminated, truncated, _ = env.step(actions[steps & 4095])
            if text:
                unwrapped.observation_text("grid")
            steps += 1
            if terminated or truncated:
                t = time.process_time()
                env.reset()
                if reset_free:
                    reset_time += time.process_time() - t
    return steps / (time.process_time() - start - reset_time)


def measure_ours(seconds: float) -> dict[str, float]:
    """Our rates: text on and off, unwrapped and through gymnasium.make's wrappers."""
    return {
        "ours_text": _rate(FrozenLakeEnv(), seconds, text=True),
        "ours_text_no_reset_time": _rate(FrozenLakeEnv(), seconds, text=True, reset_free=True),
        "ours_text_no_unlimited_cert": _rate(FrozenLakeEnv(config={"certify_unlimited": False}), seconds, text=True),
        "ours_text_deterministic": _rate(FrozenLakeEnv(config={"is_slippery": False}), seconds, text=True),
        "ours_text_gym_make": _rate(ragen_envs.make("frozenlake"), seconds, text=True),
        "ours_no_text": _rate(FrozenLakeEnv(), seconds, text=False),
    }


def measure_gymnasium(seconds: float) -> dict[str, float]:
    """Gymnasium's FrozenLake-v1 (fixed 4x4 map, slippery, no text), wrapped as gym.make returns it and bare."""
    return {
        "gymnasium_no_text": _rate(gym.make("FrozenLake-v1"), seconds, text=False),
        "gymnasium_no_text_unwrapped": _rate(gym.make("FrozenLake-v1").unwrapped, seconds, text=False),
    }


def measure_textarena(seconds: float, python: str) -> dict[str, float]:
    """TextArena's FrozenLake-v0 in its own interpreter; empty if that interpreter cannot run it."""
    result = subprocess.run([python, "-c", PEER_SCRIPT, str(seconds)], capture_output=True, text=True)
    if result.returncode != 0:
        print(f"TextArena run failed ({python}):\n{result.stderr[-2000:]}", file=sys.stderr)
        return {}
    return json.loads(result.stdout.strip().splitlines()[-1])


def main() -> None:
    """Time every env, print a table and the ratios."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=5.0, help="time budget of each measurement")
    parser.add_argument("--peer-python", default="/tmp/venv-textarena/bin/python",
                        help="interpreter with textarena installed")
    args = parser.parse_args()
    rates = {**measure_ours(args.seconds), **measure_gymnasium(args.seconds),
             **measure_textarena(args.seconds, args.peer_python)}
    width = max(map(len, rates))
    print(f"{'env':<{width}}  steps/s")
    for name, rate in rates.items():
        print(f"{name:<{width}}  {rate:>10,.0f}")
    if "textarena_text" in rates:
        print(f"ours_text / textarena_text = {rates['ours_text'] / rates['textarena_text']:.1f}x (target >= 10x)")
    print(f"ours_text / gymnasium_no_text = {rates['ours_text'] / rates['gymnasium_no_text']:.2f}x")
    print(f"ours_no_text / gymnasium_no_text = {rates['ours_no_text'] / rates['gymnasium_no_text']:.2f}x")


if __name__ == "__main__":
    main()
