"""Rerun the commands whose figures README.md quotes and write them, dated, to docs/readme_figures.json.

Runs, in a scratch directory, the README's main command (the embedded model through ``--local-server``
on 64 test Sokoban levels), the same levels with the ``random`` and ``oracle`` agents, and
``ragen-eval`` without arguments, and builds the base wheel; records the wheel's size, each command's wall time and, per game, the success rate with
its 95% interval, mean reward, format-error rate and think words per turn. The README cites the file;
rerun this after the default model or the games change.

    python scripts/readme_figures.py
"""

from __future__ import annotations

import datetime
import json
import os
import platform
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "docs" / "readme_figures.json"
#: The commands the README quotes, as a user types them (the run directories go to a scratch dir).
COMMANDS = (
    "ragen-eval --model default --local-server --env sokoban --episodes 64",
    "ragen-eval --model random --env sokoban --episodes 64",
    "ragen-eval --model oracle --env sokoban --episodes 64",
    "ragen-eval",
)
KEPT = ("episodes", "success_rate", "success_ci95", "mean_reward", "format_error_rate", "think_words_per_turn")


def measure(command: str, out: Path) -> dict:
    """Run one command with its runs under ``out``; its wall time and per-game figures."""
    argv = [*shlex.split(command), "--out", str(out), "--no-progress", "--json"]
    start = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, text=True, check=True)
    wall_s = time.perf_counter() - start
    summary = json.loads(done.stdout)
    per_env = {env: {key: figures[key] for key in KEPT} for env, figures in summary["per_env"].items()}
    return {"command": command, "wall_s": round(wall_s, 1), "per_env": per_env}


def wheel_bytes(scratch: Path) -> int:
    """Size of the base wheel, built as ``pip install .`` builds it."""
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", str(ROOT), "-w", str(scratch)],
                   check=True, capture_output=True)
    (wheel,) = scratch.glob("ragen_envs-*.whl")
    return wheel.stat().st_size


def main() -> int:
    """Run every command and write the dated figures."""
    with tempfile.TemporaryDirectory() as scratch:
        results = []
        for command in COMMANDS:
            print(f"running: {command}", file=sys.stderr)
            results.append(measure(command, Path(scratch)))
        base_wheel_bytes = wheel_bytes(Path(scratch) / "wheel")
    record = {"date": datetime.date.today().isoformat(),
              "machine": {"cpus": os.cpu_count(), "platform": platform.platform(), "python": platform.python_version()},
              "generated_by": "python scripts/readme_figures.py", "base_wheel_bytes": base_wheel_bytes,
              "commands": results}
    OUT.write_text(json.dumps(record, indent=2) + "\n")
    for r in results:
        print(f"{r['wall_s']:7.1f} s  {r['command']}")
    print(f"wrote {OUT.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
