"""benchmarks/bench_images.py: what it times is a real image observation, and a missing peer is one clear error."""

from __future__ import annotations

import sys

import pytest

from tests.script_modules import load_script


def test_ours_makes_frames_of_the_requested_size():
    bench = load_script("benchmarks/bench_images.py")
    small, large = bench.ours(0.05, 112), bench.ours(0.05, None)
    assert small["frames"] > 0 and small["seconds"] > 0 and small["shape"] == [112, 112, 3]
    assert large["shape"] == [224, 224, 3] and large["url_chars"] > small["url_chars"]


def test_a_peer_without_gym_sokoban_stops_with_its_reason():
    bench = load_script("benchmarks/bench_images.py")
    try:
        import gym_sokoban  # noqa: F401
    except ImportError:
        with pytest.raises(SystemExit, match="the peer failed"):
            bench.peer(sys.executable, 0.01)
    else:
        pytest.skip("gym-sokoban is installed here")
