"""Rewrite the example prompts of docs/protocol.md from the commands that produce them.

Each example is a line holding a command in backticks (``python -m ragen_envs.text ...``), a blank line,
then a ```text block with that command's output. This script runs every such command and puts its
output in the block; ``--check`` only reports the examples that differ (exit 1), as
tests/test_readme.py does.

    python scripts/doc_examples.py [--check]
"""

from __future__ import annotations

import argparse
import re
import shlex
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "protocol.md"
EXAMPLE = re.compile(r"^`(python -m ragen_envs\.text [^`]+)`\n\n```text\n(.*?)```$", re.S | re.M)


def run_example(command: str) -> str:
    """The output of one documented ``python -m ragen_envs.text`` command, run with this Python."""
    argv = shlex.split(command)
    done = subprocess.run([sys.executable, *argv[1:]], capture_output=True, text=True, cwd=ROOT, check=True)
    return done.stdout


def main() -> int:
    """Regenerate (or, with --check, verify) every example of docs/protocol.md."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="report stale examples instead of rewriting them")
    args = parser.parse_args()
    text = PAGE.read_text()
    stale = [m.group(1) for m in EXAMPLE.finditer(text) if run_example(m.group(1)) != m.group(2)]
    if args.check:
        for command in stale:
            print(f"stale example in {PAGE.relative_to(ROOT)}: {command}")
        return 1 if stale else 0
    new = EXAMPLE.sub(lambda m: f"`{m.group(1)}`\n\n```text\n{run_example(m.group(1))}```", text)
    PAGE.write_text(new)
    print(f"rewrote {len(stale)} stale example(s) in {PAGE.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
