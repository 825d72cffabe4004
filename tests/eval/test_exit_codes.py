"""Exit statuses of ``ragen-eval evaluate``: a run whose episodes all failed is a failed run, a run with some
errors says how many (and fails above ``--max-error-rate``), a missing extra is one line, not a traceback."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys

import pytest

from ragen_eval.cli import EXIT_BAD_INPUT, EXIT_OK, EXIT_RUN_FAILED, main
from ragen_eval.jsonl_store import read_jsonl


def refused_url() -> str:
    """A loopback URL whose port was free a moment ago: connecting to it is refused at once."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"


def test_a_run_whose_every_episode_failed_exits_1_and_says_why(tmp_path, capsys):
    argv = ["--model", "gpt-4o", "--base-url", refused_url(), "--env", "bandit", "--episodes", "3",
            "--max-retries", "0", "--timeout", "5", "--out", str(tmp_path), "--run-name", "down", "--no-progress"]
    assert main(argv) == EXIT_RUN_FAILED
    err = capsys.readouterr().err
    assert "error: every episode (3 of 3) ended in an error" in err and "most common (3):" in err
    assert "connection refused by http://127.0.0.1:" in err  # refused, not "timeout after 5 s"
    records = read_jsonl(tmp_path / "down" / "episodes.jsonl")
    assert len(records) == 3 and all(r["error"] and r["error"] in err for r in records)
    # Resuming does no work, but the run is still all errors, so it still fails.
    assert main(argv) == EXIT_RUN_FAILED
    assert "every episode (3 of 3)" in capsys.readouterr().err


def test_some_errors_are_counted_and_max_error_rate_turns_them_into_a_failure(tmp_path, capsys):
    # Poisoned prompts (chosen by content hash) fail with HTTP 500 on every try.
    argv = ["--model", "random", "--local-server", "--server-arg=--poison-rate=0.3", "--env", "sokoban,frozenlake",
            "--episodes", "8", "--max-retries", "0", "--out", str(tmp_path), "--run-name", "flaky", "--no-progress"]
    assert main(argv) == EXIT_OK
    err = capsys.readouterr().err
    records = read_jsonl(tmp_path / "flaky" / "episodes.jsonl")
    failed = sum(1 for r in records if r.get("error"))
    assert 0 < failed < len(records) == 16
    assert f"warning: {failed} of 16 episodes ({failed / 16:.1%}) ended in an error" in err
    # The verdict is about the run, not this invocation: a resume that plays nothing applies the limit too.
    assert main([*argv, "--max-error-rate", "0"]) == EXIT_RUN_FAILED
    assert f"error: {failed} of 16 episodes" in capsys.readouterr().err
    assert main([*argv, "--max-error-rate", str(failed / 16)]) == EXIT_OK  # at the limit is not above it
    assert main([*argv, "--max-error-rate", "1.5"]) == EXIT_BAD_INPUT
    assert "--max-error-rate is a fraction in [0, 1]" in capsys.readouterr().err


def test_a_clean_run_exits_0_without_an_error_line(tmp_path, capsys):
    assert main(["--model", "oracle", "--env", "bandit", "--episodes", "2", "--out", str(tmp_path),
                 "--no-progress"]) == EXIT_OK
    assert "ended in an error" not in capsys.readouterr().err


def _without(module: str, argv: list[str], cwd) -> subprocess.CompletedProcess:
    """Run ``ragen-eval ARGV`` in a Python that cannot import ``module`` (as in an install without its extra)."""
    code = (f"import sys; sys.modules[{module!r}] = None\n"
            "from ragen_eval.cli import main; sys.exit(main(sys.argv[1:]))")
    return subprocess.run([sys.executable, "-c", code, *argv], capture_output=True, text=True, timeout=120, cwd=cwd,
                          env={**os.environ, "PYTHONUNBUFFERED": "1"})


@pytest.mark.parametrize("module, argv", [
    ("openai", ["--model", "gpt-4o", "--base-url", "http://127.0.0.1:9/v1", "--env", "bandit", "--out", "runs"]),
    ("tqdm", ["--model", "random", "--env", "bandit", "--episodes", "1", "--out", "runs"]),
])
def test_a_missing_extra_is_one_line_before_any_run_directory(tmp_path, module, argv):
    done = _without(module, argv, tmp_path)
    assert done.returncode == EXIT_BAD_INPUT
    assert done.stderr.strip().splitlines() == [
        f"ragen-eval evaluate: error: this needs the {module!r} package, which is not installed; "
        "pip install 'ragen-envs[eval]'"]
    assert not (tmp_path / "runs").exists()


def test_a_missing_extra_in_another_subcommand_is_one_line(tmp_path):
    assert main(["--model", "oracle", "--env", "bandit", "--episodes", "1", "--out", str(tmp_path),
                 "--no-progress"]) == EXIT_OK
    run = tmp_path / "oracle__builtin__test"
    done = _without("matplotlib", ["leaderboard", str(run), "--out", str(tmp_path / "board")], tmp_path)
    assert done.returncode == EXIT_BAD_INPUT, done.stderr
    assert done.stderr.strip().splitlines() == [
        "ragen-eval leaderboard: error: this needs the 'matplotlib' package, which is not installed; "
        "pip install 'ragen-envs[eval]'"]
    assert json.loads((run / "summary.json").read_text())["complete"]
