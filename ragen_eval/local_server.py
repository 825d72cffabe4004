"""``--local-server``: run ``ragen-eval serve`` as a child process on loopback for one evaluation.

The child binds port 0 (a free port chosen by the OS, so parallel runs never collide) and
announces its URL on the first line of stdout; we wait for that line, hand the URL to the
OpenAI client, and stop the child when the evaluation ends, however it ends. The child's output
goes to a temporary file rather than a pipe, so a chatty server can never block on a full pipe.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

#: What the server prints before its URL (``ragen_eval.serve`` writes the same prefix).
LISTENING_PREFIX = "ragen-eval serve: listening on "


@contextmanager
def local_server(agent: str, extra_args: Sequence[str] = (), startup_timeout: float = 120.0) -> Iterator[str]:
    """Start ``ragen-eval serve --agent AGENT --port 0 EXTRA_ARGS``; yield its base URL (``.../v1``)."""
    command = [sys.executable, "-m", "ragen_eval.cli", "serve", "--agent", agent, "--host", "127.0.0.1",
               "--port", "0", *extra_args]
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    with tempfile.TemporaryFile("w+") as log:
        proc = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=env, text=True,
                                preexec_fn=_die_with_parent if sys.platform == "linux" else None)
        try:
            yield _wait_for_url(proc, log, startup_timeout)
        finally:
            _stop(proc)


def _die_with_parent() -> None:
    """In the child: ask Linux to SIGTERM us when the parent dies, even by SIGKILL (no orphaned servers)."""
    import ctypes

    try:
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # 1 = PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass  # without prctl the server is still stopped on every exit path except SIGKILL


def _wait_for_url(proc: subprocess.Popen, log, timeout: float) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        log.seek(0)
        output = log.read()
        for line in output.splitlines():
            if line.startswith(LISTENING_PREFIX):
                return line[len(LISTENING_PREFIX):].strip()
        if proc.poll() is not None:
            raise RuntimeError(f"the local server exited with code {proc.returncode} before listening:\n"
                               f"{output[-2000:]}")
        time.sleep(0.05)
    raise TimeoutError(f"the local server did not announce its URL within {timeout:.0f} s")


def _stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
