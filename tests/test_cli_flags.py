"""A list flag given twice stops the command instead of keeping only its last value."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

HAS_TORCH = importlib.util.find_spec("torch") is not None
needs_torch = pytest.mark.skipif(not HAS_TORCH, reason="ragen-train needs the [train] extra")

@pytest.mark.parametrize("command", [
    ["ragen_eval.cli", "--model", "random", "--env", "bandit", "--env", "frozenlake", "--episodes", "2"],
    pytest.param(["ragen_train.cli", "sft", "--env", "bandit", "--env", "frozenlake"], marks=needs_torch),
    pytest.param(["ragen_train.cli", "sft", "--env", "bandit,frozenlake", "--episodes", "4", "--episodes", "8"],
                 marks=needs_torch),
])
def test_a_repeated_list_flag_exits_2_before_writing(command: list[str], tmp_path: Path) -> None:
    out = tmp_path / "out"
    result = subprocess.run([sys.executable, "-m", *command, "--out", str(out)], capture_output=True, text=True,
                            cwd=tmp_path, timeout=120)
    assert result.returncode == 2, result.stderr
    flag = "--env" if command.count("--env") == 2 else "--episodes"
    assert f"{flag} was given twice" in result.stderr.splitlines()[-1]
    assert not out.exists()


@needs_torch
def test_one_use_of_each_list_flag_is_accepted() -> None:
    from ragen_train.sft import config_from_args
    config = config_from_args(["--out", "x", "--env", "bandit,frozenlake", "--episodes", "4,8"])
    assert [(d.env, d.num_episodes) for d in config.demos] == [("bandit", 4), ("frozenlake", 8)]
