"""docs/integrations.md shows each door in a snippet that runs as shown: the in-process and Gymnasium one with
the base install, the two TRL hooks' in the ``trl`` install profile (scripts/smoke_profiles.sh). The OpenEnv and
verifiers snippets are run by their own tests (tests/envs/test_openenv_server.py, tests/test_verifiers_env.py)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGE = (ROOT / "docs" / "integrations.md").read_text()


def snippet(heading: str) -> str:
    """The first ```python block after the heading line ``heading`` of docs/integrations.md."""
    section = PAGE.split(f"\n{heading}\n", 1)[1]
    return re.search(r"```python\n(.*?)```", section, re.S).group(1)


def run(code: str, cwd: Path) -> str:
    """Run ``code`` with this Python, as a user would, in ``cwd``; its stdout."""
    env = {**os.environ, "TRL_EXPERIMENTAL_SILENCE": "1"}  # both hooks are marked experimental by TRL
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=900, cwd=cwd, env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


def test_the_in_process_and_gymnasium_snippet_prints_what_it_shows(tmp_path):
    code = snippet("## In process and Gymnasium")
    shown = re.search(r"print\(.*\)\s+# (.*)", code).group(1)
    assert run(code, tmp_path).strip().splitlines()[-1] == shown


@pytest.mark.slow
@pytest.mark.train
@pytest.mark.parametrize("heading", ["### `rollout_func`: the text protocol", "### `environment_factory`: tool calls"])
def test_the_trl_snippets_train_two_steps(heading, tmp_path):
    pytest.importorskip("trl")
    out = run(snippet(heading), tmp_path)
    # The trainer's closing log line, printed once max_steps is reached.
    assert "'train_runtime'" in out, out[-2000:]
    assert (tmp_path / "tiny" / "config.json").exists()
