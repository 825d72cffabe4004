"""The runner end to end with built-in agents: results, concurrency, errors, interruption and resume."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time

import pytest

from ragen_eval.agents.base import Completion
from ragen_eval.agents.builtin import OracleAgent, RandomAgent
from ragen_eval.cli import evaluate
from ragen_eval.config import EvalConfig
from ragen_eval.jsonl_store import read_jsonl
from ragen_eval.summary import summary_of


def _config(**kw) -> EvalConfig:
    return EvalConfig(**{"model": "random", "envs": ["sokoban", "frozenlake", "bandit"], "episodes": 6,
                         "concurrency": 4, **kw})


def _keys(path):
    return [(r["env"], r["seed"]) for r in read_jsonl(path / "episodes.jsonl")]


def test_evaluate_writes_every_episode_once_and_a_consistent_summary(tmp_path):
    config = _config(model="oracle")
    summary, stats = evaluate(config, tmp_path, progress=False)
    records = read_jsonl(tmp_path / "episodes.jsonl")
    assert sorted(_keys(tmp_path)) == sorted(config.work_items())
    assert stats.episodes == 18 and stats.turns == sum(len(r["turns"]) for r in records)
    assert summary["complete"] and summary["episodes_done"] == 18
    assert summary["per_env"]["bandit"]["success_rate"] == 1.0
    assert summary["overall"]["successes"] == sum(r["success"] for r in records)
    assert json.loads((tmp_path / "summary.json").read_text()) == summary == summary_of(tmp_path)
    for record in records:
        assert all(turn["completion"]["finish_reason"] == "stop" for turn in record["turns"])
        assert record["error"] is None


class _Interrupting:
    """Wraps an agent and raises KeyboardInterrupt on the n-th call, like Ctrl-C mid-run."""

    def __init__(self, inner, after: int):
        self.inner, self.after, self.calls, self.name = inner, after, 0, inner.name

    async def act(self, messages, **kw):
        self.calls += 1
        if self.calls == self.after:
            raise KeyboardInterrupt
        return await self.inner.act(messages, **kw)

    async def aclose(self):
        pass


def test_interrupted_run_resumes_to_the_same_summary(tmp_path):
    config = _config()
    reference, _ = evaluate(config, tmp_path / "ref", progress=False)
    with pytest.raises(KeyboardInterrupt):
        evaluate(config, tmp_path / "run", agent=_Interrupting(RandomAgent(), after=20), progress=False)
    partial = _keys(tmp_path / "run")
    assert 0 < len(partial) < 18
    resumed, stats = evaluate(config, tmp_path / "run", progress=False)
    assert stats.episodes == 18 - len(partial)
    keys = _keys(tmp_path / "run")
    assert len(keys) == len(set(keys)) == 18
    assert resumed == reference


class _Flaky:
    """Fails for good on some seeds (an error Completion), raises on others, answers like the oracle otherwise."""

    name = "flaky"

    def __init__(self):
        self.oracle = OracleAgent()

    async def act(self, messages, *, episode=None, **kw):
        if episode.seed % 5 == 0:
            return [Completion(text="", error="HTTP 500 after 6 attempts")]
        if episode.seed % 5 == 1 and episode.turn == 0:
            raise ConnectionError("socket closed")
        return await self.oracle.act(messages, episode=episode, **kw)

    async def aclose(self):
        pass


def test_failed_requests_end_their_episode_not_the_run(tmp_path, capsys):
    config = _config(model="oracle", episodes=10)
    summary, stats = evaluate(config, tmp_path, agent=_Flaky(), progress=False)
    records = read_jsonl(tmp_path / "episodes.jsonl")
    assert len(records) == 30
    failed = [r for r in records if r["error"]]
    assert {r["seed"] % 5 for r in failed} == {0, 1}
    assert all(r["end_reason"] == "error" and not r["success"] for r in failed)
    assert any("socket closed" in r["error"] for r in failed)
    assert summary["overall"]["errors"] == len(failed) == stats.errors
    assert summary["overall"]["failures"]["error"] == len(failed)
    # Resuming with --retry-errors replays exactly the errored episodes.
    _, again = evaluate(config, tmp_path, progress=False, retry_errors=True)
    assert again.episodes == len(failed)
    assert not any(r["error"] for r in read_jsonl(tmp_path / "episodes.jsonl"))


class _Counting:
    name = "counting"

    def __init__(self):
        self.inner, self.now, self.peak = RandomAgent(), 0, 0

    async def act(self, messages, **kw):
        self.now += 1
        self.peak = max(self.peak, self.now)
        await asyncio.sleep(0.005)
        self.now -= 1
        return await self.inner.act(messages, **kw)

    async def aclose(self):
        pass


def test_concurrency_bounds_requests_in_flight(tmp_path):
    agent = _Counting()
    evaluate(_config(concurrency=7, episodes=10), tmp_path, agent=agent, progress=False)
    assert agent.peak == 7


def test_sigkill_mid_run_then_rerun_loses_and_duplicates_nothing(tmp_path):
    args = [sys.executable, "-m", "ragen_eval.cli", "--model", "random", "--env", "sokoban,frozenlake,bandit",
            "--episodes", "150", "--out", str(tmp_path), "--no-progress", "--concurrency", "8"]
    run = tmp_path / "random__builtin__test"
    proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and proc.poll() is None:
        episodes = run / "episodes.jsonl"
        if episodes.exists() and episodes.stat().st_size > 200_000:
            break
        time.sleep(0.005)
    assert proc.poll() is None, "the run finished before it could be killed; raise --episodes"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    before = _keys(run)
    assert 0 < len(before) < 450
    subprocess.run(args, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    keys = _keys(run)
    assert len(keys) == len(set(keys)) == 450
    reference, _ = evaluate(EvalConfig(model="random", episodes=150), tmp_path / "ref", progress=False)
    assert json.loads((run / "summary.json").read_text()) == reference


class _Garbage:
    """Answers with the kinds of junk real endpoints return."""

    name = "garbage"
    TEXTS = (
        bytes(range(256)).decode("latin-1"),  # every byte value, NUL included
        "x" * 100_000 + "<answer>Up</answer>",  # 100 KB
        "<think><think>nested</think><answer>Up || <answer>Left</answer></answer>",  # fake, nested tags
        "<think>\ud800 lone surrogate</think><answer>Dragon</answer>",
        "",
    )

    async def act(self, messages, *, episode=None, **kw):
        text = self.TEXTS[(episode.seed + episode.turn) % len(self.TEXTS)]
        return [Completion(text=text, finish_reason="length" if episode.turn == 2 else "stop",
                           reasoning_text="\x00" if episode.turn == 1 else None)]

    async def aclose(self):
        pass


def test_garbage_output_is_scored_never_crashes(tmp_path):
    summary, _ = evaluate(_config(episodes=10), tmp_path, agent=_Garbage(), progress=False)
    records = read_jsonl(tmp_path / "episodes.jsonl")
    assert len(records) == 30 and not any(r["error"] for r in records)
    turns = [t for r in records for t in r["turns"]]
    assert summary["overall"]["format_error_rate"] == pytest.approx(sum(not t["format_ok"] for t in turns) / len(turns))
    assert summary["overall"]["format_error_rate"] > 0.5
    assert summary["overall"]["failure_flags"]["truncated"] > 0
