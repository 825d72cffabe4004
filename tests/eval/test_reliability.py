"""The whole ``ragen-eval`` command against ``ragen-eval serve`` with injected faults, over loopback HTTP.

No part of the client is mocked: each test runs the real CLI in a child process, which talks through
the ``openai`` client to a real server process. The served built-in agents answer as a pure function
of the request, so a run through faults, or one killed and resumed, must score exactly like a clean
uninterrupted run.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

pytest.importorskip("ragen_envs.text")

LISTENING_PREFIX = "ragen-eval serve: listening on "
ENVS = "sokoban,frozenlake,bandit"
CHILD_ENV = {**os.environ, "PYTHONUNBUFFERED": "1"}


@contextmanager
def served(*args: str) -> Iterator[str]:
    """``ragen-eval serve ARGS --port 0`` in a child process; yields its base URL."""
    proc = subprocess.Popen([sys.executable, "-m", "ragen_eval.cli", "serve", "--port", "0", *args],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=CHILD_ENV)
    try:
        line = proc.stdout.readline()
        assert line.startswith(LISTENING_PREFIX), f"serve did not start: {line!r}"
        yield line[len(LISTENING_PREFIX):].strip()
    finally:
        proc.terminate()
        proc.wait(timeout=20)
        proc.stdout.close()


def evaluate_command(model: str, url: str, out: Path, name: str, episodes: int, *extra: str) -> list[str]:
    return [sys.executable, "-m", "ragen_eval.cli", "--model", model, "--base-url", url, "--env", ENVS,
            "--episodes", str(episodes), "--out", str(out), "--run-name", name, "--no-progress", "--json", *extra]


def evaluate(model: str, url: str, out: Path, name: str, episodes: int, *extra: str) -> dict:
    done = subprocess.run(evaluate_command(model, url, out, name, episodes, *extra), capture_output=True, text=True,
                          timeout=300, env=CHILD_ENV)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads((out / name / "summary.json").read_text())


def episodes_of(run: Path) -> list[dict]:
    return [json.loads(line) for line in (run / "episodes.jsonl").read_text().splitlines() if line.strip()]


def by_level(records: list[dict]) -> dict[tuple[str, int], dict]:
    return {(r["env"], r["seed"]): r for r in records}


def outcome(record: dict) -> tuple:
    """What a run measured about one episode: everything but timing and usage bookkeeping."""
    return (record["success"], record["total_reward"], record["end_reason"], record.get("error"),
            [(t["response"], t["actions_executed"], t["reward"]) for t in record["turns"]])


@pytest.mark.slow
def test_a_run_through_every_kind_of_fault_scores_like_a_clean_run(tmp_path):
    faults = ["--failure-rate", "0.08", "--rate-limit-rate", "0.05", "--retry-after", "0.05", "--stall-rate",
              "0.03", "--malformed-rate", "0.05", "--empty-choices-rate", "0.05", "--drop-rate", "0.05",
              "--fault-seed", "1"]
    client = ["--timeout", "1", "--max-retries", "30", "--concurrency", "16"]
    with served("--agent", "oracle") as clean_url, served("--agent", "oracle", *faults) as faulty_url:
        clean = evaluate("oracle", clean_url, tmp_path, "clean", 8, *client)
        faulty = evaluate("oracle", faulty_url, tmp_path, "faulty", 8, *client)
    assert faulty["complete"] and faulty["episodes_done"] == 24
    assert faulty == clean
    clean_turns = [t for r in episodes_of(tmp_path / "clean") for t in r["turns"]]
    assert all(t["format_ok"] for t in clean_turns)  # the served oracle really played ...
    assert sum(r["success"] for r in episodes_of(tmp_path / "clean")) >= 12  # ... and won most levels
    clean_records, faulty_records = by_level(episodes_of(tmp_path / "clean")), by_level(episodes_of(tmp_path / "faulty"))
    assert clean_records.keys() == faulty_records.keys()
    for key, record in faulty_records.items():
        assert record.get("error") is None
        assert outcome(record) == outcome(clean_records[key])


@pytest.mark.slow
def test_a_request_that_keeps_failing_ends_its_episode_not_the_run(tmp_path):
    client = ["--timeout", "5", "--max-retries", "2", "--concurrency", "16"]
    with served("--agent", "random") as clean_url, served("--agent", "random", "--poison-rate", "0.2") as bad_url:
        clean = evaluate("random", clean_url, tmp_path, "clean", 10, *client)
        poisoned = evaluate("random", bad_url, tmp_path, "poisoned", 10, *client)
    assert poisoned["complete"] and poisoned["episodes_done"] == clean["episodes_done"] == 30
    records, reference = by_level(episodes_of(tmp_path / "poisoned")), by_level(episodes_of(tmp_path / "clean"))
    failed = [r for r in records.values() if r.get("error")]
    assert 0 < len(failed) < len(records)
    assert all(t["format_ok"] for r in reference.values() for t in r["turns"])  # random play, but well-formed
    for record in failed:
        assert record["end_reason"] == "error" and "HTTP 500" in record["error"] and "3 attempts" in record["error"]
    for key, record in records.items():
        if not record.get("error"):  # untouched episodes played exactly as in the clean run
            assert outcome(record) == outcome(reference[key])


@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGINT], ids=["SIGKILL", "SIGINT"])
def test_killed_run_resumes_without_losing_or_duplicating_episodes(tmp_path, sig):
    episodes = 12
    client = ["--concurrency", "4", "--timeout", "10"]
    with served("--agent", "random", "--latency", "0.05") as url:
        reference = evaluate("random", url, tmp_path, "uninterrupted", episodes, *client)
        run = tmp_path / "killed"
        # the child starts with SIGINT's default action even where this process inherited it ignored
        # (a background job of a non-interactive shell, as CI may run us): else Python never raises
        # KeyboardInterrupt and the run plays on to the end
        proc = subprocess.Popen(evaluate_command("random", url, tmp_path, "killed", episodes, *client),
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=CHILD_ENV,
                                preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            log = run / "episodes.jsonl"
            if log.exists() and log.read_text().count("\n") >= 8:
                break
            time.sleep(0.02)
        proc.send_signal(sig)
        proc.wait(timeout=30)
        kept = len(episodes_of(run))
        assert 8 <= kept < 3 * episodes, "the kill must land mid-run"
        resumed = evaluate("random", url, tmp_path, "killed", episodes, *client)
    records = episodes_of(run)
    keys = [(r["env"], r["seed"]) for r in records]
    assert len(keys) == len(set(keys)) == 3 * episodes
    assert resumed == reference
    reference_records = by_level(episodes_of(tmp_path / "uninterrupted"))
    assert {k: outcome(r) for k, r in by_level(records).items()} == {k: outcome(r) for k, r in
                                                                    reference_records.items()}


def test_garbage_model_output_is_scored_and_never_crashes_the_run(tmp_path):
    with served("--agent", "oracle", "--garbage-rate", "0.5", "--fault-seed", "4") as url:
        summary = evaluate("oracle", url, tmp_path, "garbage", 8, "--max-tokens", "100000", "--concurrency", "8")
    records = episodes_of(tmp_path / "garbage")
    assert summary["complete"] and len(records) == 24
    assert all(r.get("error") is None for r in records)
    turns = [t for r in records for t in r["turns"]]
    broken = [t for t in turns if not t["format_ok"]]
    assert broken and len(broken) < len(turns)
    # the huge garbage replies are stored capped, with their full length recorded beside them
    huge = [t for t in broken if t.get("capped", {}).get("response", 0) >= 100_000]
    assert huge and all(len(t["response"]) < 100_000 for t in huge)


def test_reasoning_in_a_separate_field_is_scored_and_its_tokens_recorded(tmp_path):
    with served("--agent", "oracle") as plain_url, served("--agent", "oracle", "--reasoning-field") as url:
        plain = evaluate("oracle", plain_url, tmp_path, "plain", 4)
        split = evaluate("oracle", url, tmp_path, "split", 4)
    assert split["overall"]["success_rate"] == plain["overall"]["success_rate"]
    assert plain["overall"]["provider_reasoning_tokens_per_turn"] is None
    # "optimal play from the state shown": 6 tokens of reasoning on every turn.
    assert split["overall"]["provider_reasoning_tokens_per_turn"] == pytest.approx(6.0)
    for record in episodes_of(tmp_path / "split"):
        for turn in record["turns"]:
            assert turn["format_ok"] and turn["think"] == "optimal play from the state shown"
            assert turn["completion"]["reasoning_tokens"] == 6
