"""The code blocks of a Markdown page, and the two ways a reader runs them: a shell and one Python session.

A fenced block's language says what it is: ``bash`` and ``python`` blocks are examples a reader runs;
``text``, ``json``, ``yaml`` and untagged blocks show output, formats or files, and are never run. A
block whose info string names a path after the language (``python corridor_game/game.py``) is a file the
reader saves there. An
example that cannot run on a test machine (an API key, a GPU, the network, hours of work) carries the
marker ``<!-- docs-test: skip (REASON) -->`` on the line right before its fence.
"""

from __future__ import annotations

import contextlib
import os
import queue
import re
import signal
import subprocess
import sys
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
#: Fence languages of blocks a reader runs.
RUNNABLE = ("bash", "python")
_FENCE = re.compile(r"^(?P<indent> {0,3})(?P<fence>`{3,})(?P<lang>[\w+-]*)[ \t]*(?P<path>[^\s`]*)[^\n]*\n"
                    r"(?P<code>.*?)^(?P=indent)(?P=fence)\s*$", re.S | re.M)
_MARKER = re.compile(r"<!-- docs-test: skip(?: \((?P<reason>[^)]*\S[^)]*)\))? -->\s*$")


@dataclass(frozen=True)
class Block:
    """One fenced code block of a page."""

    page: str
    line: int  # 1-based line of the opening fence
    language: str  # "" when untagged
    code: str
    path: str  # the file the reader saves the block as ("" for an example to run or a display)
    skip: str | None  # the marker's reason ("" for a marker without one); None: no marker

    def __str__(self) -> str:
        return f"{self.page}:{self.line}"


def code_blocks(page: str) -> list[Block]:
    """The fenced blocks of ``page`` (a path relative to the repository root), in order."""
    text = (REPO / page).read_text()
    blocks = []
    for m in _FENCE.finditer(text):
        before = text[:m.start()].rstrip("\n").rsplit("\n", 1)[-1]
        marker = _MARKER.search(before)
        skip = None if marker is None else (marker.group("reason") or "")
        blocks.append(Block(page, text.count("\n", 0, m.start()) + 1, m.group("lang"), m.group("code"),
                            m.group("path"), skip))
    return blocks


def command_env() -> dict[str, str]:
    """The environment documented commands run in: this checkout first on the path, one thread, a dummy key."""
    return {**os.environ, "PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1", "OPENAI_API_KEY": "sk-local-test",
            "PYTHONUNBUFFERED": "1"}


def run_shell(code: str, cwd: Path, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    """``code`` as a bash script (errexit, pipefail) in ``cwd``. Whatever it left running in the background
    (a server the block forgot to stop) is ended with it, so a block cannot hold the test up."""
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        process = subprocess.Popen(["bash", "-euo", "pipefail", "-c", code], cwd=cwd, env=command_env(),
                                   stdout=out, stderr=err, text=True, start_new_session=True)
        try:
            process.wait(timeout=timeout)
        finally:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
        out.seek(0), err.seek(0)
        return subprocess.CompletedProcess(process.args, process.returncode, out.read(), err.read())


_SENTINEL = "@@docs-test: block done@@"
_WORKER = f"""
import sys, traceback
namespace = {{"__name__": "__main__"}}
while True:
    size = sys.stdin.readline()
    if not size:
        break
    code = sys.stdin.read(int(size))
    try:
        exec(compile(code, "<docs block>", "exec"), namespace)
        status = "ok"
    except BaseException:
        traceback.print_exc(file=sys.stdout)
        status = "error"
    print("\\n{_SENTINEL}", status, flush=True)
"""


class PythonSession:
    """One Python interpreter in ``cwd`` that runs blocks one after another in a shared namespace, as a
    reader who keeps one session open while following a page."""

    def __init__(self, cwd: Path) -> None:
        self._process = subprocess.Popen([sys.executable, "-u", "-c", _WORKER], cwd=cwd, env=command_env(),
                                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                         text=True)
        self._lines: queue.Queue[str | None] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        for line in self._process.stdout:
            self._lines.put(line)
        self._lines.put(None)

    def run(self, code: str, timeout: float = 600) -> tuple[bool, str]:
        """Run ``code``; (whether it raised nothing, what it printed)."""
        self._process.stdin.write(f"{len(code)}\n{code}")
        self._process.stdin.flush()
        out = []
        while True:
            line = self._lines.get(timeout=timeout)
            if line is None:
                return False, "".join(out) + "\n(the Python session exited)"
            if line.startswith(_SENTINEL):
                return line.split()[-1] == "ok", "".join(out)
            out.append(line)

    def close(self) -> None:
        """End the interpreter."""
        self._process.stdin.close()
        try:
            self._process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self._process.kill()
