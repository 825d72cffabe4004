"""Every command of README.md runs: its Python snippet as written, its ragen-eval and ragen-train lines with
smaller budgets (and, where they name a remote endpoint, a local `ragen-eval serve` in its place), in the
order the README gives them, in a fresh directory. Install lines are run by scripts/smoke_profiles.sh, the
main and test commands by CI itself."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from tests.doc_blocks import RUNNABLE, code_blocks, command_env

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()
BLOCKS = [(block.language, block.code) for block in code_blocks("README.md") if block.language in RUNNABLE]
MARKED = {m.group(1).strip() for m in re.finditer(r"<!-- [a-z-]+ -->\s*```bash\n(.+?)\n```", README, re.S)}


def _commands(*programs: str) -> list[str]:
    """The README's lines that run one of ``programs``, in the README's order (the marked commands aside)."""
    lines = [line.split(" #")[0].strip() for kind, block in BLOCKS if kind == "bash" and block.strip() not in MARKED
             for line in block.replace("\\\n", " ").splitlines()]
    return [line for line in lines if line.split(" ")[0] in programs]


def _run(argv: list[str], cwd: Path) -> str:
    done = subprocess.run(argv, cwd=cwd, env=command_env(), capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, f"{shlex.join(argv)} exited {done.returncode}:\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}"
    return done.stdout


def _program(name: str) -> list[str]:
    return [sys.executable, "-m", {"ragen-eval": "ragen_eval.cli", "ragen-train": "ragen_train.cli"}[name]]


def test_the_readme_shows_the_commands_this_file_runs():
    assert len(_commands("ragen-eval")) >= 5 and len(_commands("ragen-train")) >= 2
    assert [kind for kind, _ in BLOCKS].count("python") == 1


def test_the_python_snippet_runs(tmp_path):
    snippet = next(block for kind, block in BLOCKS if kind == "python")
    out = _run([sys.executable, "-c", snippet], tmp_path)
    assert "optimal" in out.lower() or "solution" in out.lower(), out  # the certificate
    assert re.fullmatch(r"-?\d+(\.\d+)? (True|False)", out.strip().splitlines()[-1]), out  # a turn's reward, done


def _with(argv: list[str], flag: str, value: str) -> list[str]:
    """``argv`` with ``flag`` set to ``value``, in place where it is given (list flags refuse a repeat)."""
    if flag not in argv:
        return [*argv, flag, value]
    at = argv.index(flag) + 1
    return [*argv[:at], value, *argv[at + 1:]]


@pytest.mark.slow
def test_the_evaluate_leaderboard_and_train_commands_run_in_order(tmp_path):
    from ragen_eval.serve import ServeConfig, serve_in_thread

    (tmp_path / "configs").symlink_to(ROOT / "configs")
    with serve_in_thread(ServeConfig(agent="oracle", port=0)) as url:
        for command in _commands("ragen-eval", "ragen-train"):
            program, *argv = shlex.split(command)
            if program == "ragen-train" and argv[0] == "sft":
                argv = _with(_with(argv, "--episodes", "32"), "--epochs", "1")
            elif program == "ragen-train":
                argv += ["total_steps=2", "save_every=2", "eval_every=0", "env_groups=2", "group_size=4"]
            elif argv[0] != "leaderboard":
                argv = [url if a.startswith("http") else a for a in argv]
                argv = [str(ROOT / "ragen_eval" / "default_model") if a == "path/to/checkpoint" else a for a in argv]
                argv = [re.sub(r"step_\d+$", "step_000002", a) for a in argv]
                argv = [*_with(argv, "--episodes", "2"), "--no-progress"]
            _run([*_program(program), *argv], tmp_path)
    assert (tmp_path / "leaderboards" / "leaderboard.md").is_file()
    assert (tmp_path / "runs" / "train" / "bandit-s" / "checkpoints" / "step_000002").is_dir()
