"""Frames/s of the image observation against gym-sokoban's ``rgb_array``, in interleaved pairs.

    python benchmarks/bench_images.py [--pairs 5] [--seconds 2] [--peer-python /tmp/venv-visual/bin/python]

Ours: one image observation of a 7x7 room with 2 boxes, as the text protocol sends it: ``env.render()``
(``rgb_array``), :func:`ragen_envs.images.styled_frame`, :func:`encode_png` and :func:`png_data_url`,
at the size gym-sokoban draws (16 px a cell, 112x112) and at our own (32 px, 224x224). Peer:
gym-sokoban's ``render(mode="rgb_array")`` of its ``Sokoban-small-v0`` room (7x7, 2 boxes), a frame
without any encoding, timed in its own virtual environment:

    python -m venv /tmp/venv-visual && /tmp/venv-visual/bin/pip install gym-sokoban

Each pair times ours, then the peer, for ``--seconds`` each, on a fresh random-walk state every frame
(stepping is not timed); the ratio is ours / peer frames per second.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time

import numpy as np

from ragen_envs.images import encode_png, png_data_url, styled_frame
from ragen_envs.sokoban import SokobanEnv

PEER_SCRIPT = r"""
import json, sys, time, warnings
warnings.filterwarnings("ignore")
import numpy as np
import gym
import gym_sokoban  # noqa: F401  (registers the ids)
seconds = float(sys.argv[1])
env = gym.make("Sokoban-small-v0").unwrapped
np.random.seed(0)  # gym-sokoban draws its room from the global numpy RNG
env.reset()
rng = np.random.default_rng(0)
frames, busy, start = 0, 0.0, time.perf_counter()
while time.perf_counter() - start < seconds:
    env.step(int(rng.integers(1, 5)))
    t = time.perf_counter()
    frame = env.render(mode="rgb_array")
    busy += time.perf_counter() - t
    frames += 1
print(json.dumps({"frames": frames, "seconds": busy, "shape": list(frame.shape)}))
"""


def ours(seconds: float, size: int | None) -> dict:
    """Image observations of random-walk states for ``seconds``; frames and the time spent making them."""
    env = SokobanEnv(render_mode="rgb_array", config={"height": 7, "width": 7, "num_boxes": 2})
    env.reset(seed=0)
    rng = np.random.default_rng(0)
    frames, busy, start, url = 0, 0.0, time.perf_counter(), ""
    while time.perf_counter() - start < seconds:
        env.step(int(rng.integers(0, 4)))
        t = time.perf_counter()
        frame = styled_frame(env.render(), size)
        url = png_data_url(encode_png(frame))
        busy += time.perf_counter() - t
        frames += 1
    return {"frames": frames, "seconds": busy, "shape": list(frame.shape), "url_chars": len(url)}


def peer(python: str, seconds: float) -> dict:
    """gym-sokoban's rgb_array frames for ``seconds``, in the peer's Python."""
    proc = subprocess.run([python, "-c", PEER_SCRIPT, str(seconds)], capture_output=True, text=True, check=False,
                          timeout=seconds * 10 + 120)
    if proc.returncode != 0:
        raise SystemExit(f"the peer failed ({python}): {proc.stderr.strip().splitlines()[-1:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    """Run the interleaved pairs and print each pair and the median ratio with its range."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=5, help="interleaved pairs (default 5)")
    parser.add_argument("--seconds", type=float, default=2.0, help="seconds of each side of a pair (default 2)")
    parser.add_argument("--peer-python", default="/tmp/venv-visual/bin/python", help="Python with gym-sokoban")
    args = parser.parse_args(argv)
    if args.pairs < 1 or args.seconds <= 0:
        parser.error("--pairs must be >= 1 and --seconds > 0")
    ratios: dict[str, list[float]] = {"112 px": [], "224 px": []}
    for pair in range(1, args.pairs + 1):
        small, large, theirs = ours(args.seconds, 112), ours(args.seconds, None), peer(args.peer_python, args.seconds)
        rates = {name: r["frames"] / r["seconds"] for name, r in
                 (("112 px", small), ("224 px", large), ("peer", theirs))}
        for name in ratios:
            ratios[name].append(rates[name] / rates["peer"])
        print(f"pair {pair}: ours 112 px {rates['112 px']:,.0f} frames/s ({small['url_chars']:,} URL chars), "
              f"ours 224 px {rates['224 px']:,.0f} ({large['url_chars']:,}), gym-sokoban rgb_array "
              f"{tuple(theirs['shape'])} {rates['peer']:,.0f}; ratios {ratios['112 px'][-1]:.2f}x, "
              f"{ratios['224 px'][-1]:.2f}x", flush=True)
    for name, values in ratios.items():
        print(f"ours ({name}) / gym-sokoban: median {statistics.median(values):.2f}x "
              f"(range {min(values):.2f}-{max(values):.2f}x, {len(values)} pairs)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
