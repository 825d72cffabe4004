"""``python -m ragen_envs.text``: the chat a model would see, and one clear line for bad input."""

from __future__ import annotations

import subprocess
import sys

import pytest


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "ragen_envs.text", *args], capture_output=True, text=True,
                          timeout=60)


def test_prints_the_chat_and_plays_replies():
    done = run("bandit", "--seed", "3", "--reply", "<think>x</think><answer>Phoenix</answer>")
    assert done.returncode == 0, done.stderr
    assert "--- user ---" in done.stdout and "--- episode over:" in done.stdout


@pytest.mark.parametrize(("args", "named"), [
    (["nosuch"], "unknown environment 'nosuch'"),
    (["sokoban", "--seed", "-1"], "seed must be a non-negative integer"),
])
def test_bad_input_is_one_line_and_exit_status_2(args, named):
    done = run(*args)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("python -m ragen_envs.text: error: ") and named in last
