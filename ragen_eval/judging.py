"""Judge mode for runs: an LLM judge lists the claims in every thought of a run, with verdicts.

The judge is any harness agent (built by ``make_agent`` from a :class:`JudgeConfig`); it reads
each turn's true state and thought through :func:`ragen_eval.consistency.judge.judge_turn`. Its
answers go to the run directory's ``judge.jsonl``, one line per episode, written and flushed in a
single call like ``episodes.jsonl``, so rerunning judges only what is missing and a half-written
last line is simply judged again. Each line names its judge and carries a digest of the episode
record it judged: lines about an episode replayed since (``--retry-errors``) are stale and are
judged anew, and a run judged by one model refuses verdicts from another.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import IO, Any

from ragen_eval.agents.base import Agent, SamplingParams
from ragen_eval.consistency.judge import JUDGE_SAMPLING, agreement, judge_turn
from ragen_eval.run_dir import (ConfigMismatchError, RunDir, cut_partial_tail, episode_key, jsonl_line,
                                read_episodes, rewrite_jsonl)

JUDGE_FILE = "judge.jsonl"
#: Backends that can judge; the built-in agents answer game moves, never claim JSON.
JUDGE_BACKENDS: tuple[str, ...] = ("openai", "vllm", "hf")


@dataclass
class JudgeConfig:
    """Which model judges the thoughts of a run, and how it is reached."""

    model: str
    """Served model name (openai) or checkpoint path (vllm, hf)."""
    backend: str | None = None
    """openai | vllm | hf; None means openai (a base URL is then required)."""
    base_urls: list[str] = field(default_factory=list)
    """OpenAI-compatible endpoints of the judge."""
    model_args: dict[str, Any] = field(default_factory=dict)
    """Keyword arguments for a local judge backend (vllm, hf)."""
    api_key_env: str = "OPENAI_API_KEY"
    """Environment variable holding the judge endpoint's API key; the key is never stored."""
    sampling: SamplingParams = JUDGE_SAMPLING
    """Greedy and room for a long claim list, so a judge's verdicts are reproducible."""
    concurrency: int = 32
    """Episodes judged at once (each sends one request per turn with a thought)."""
    timeout: float = 60.0
    """Per-request timeout in seconds (openai)."""
    max_retries: int = 5
    """Retries per request before the turn is recorded with an error."""
    requests_per_second: float | None = None
    """Optional client-side rate limit (openai)."""

    def __post_init__(self) -> None:
        if isinstance(self.sampling, dict):
            self.sampling = SamplingParams(**self.sampling)
        if not self.model:
            raise ValueError("--judge-model is empty")
        backend = self.resolved_backend()
        if backend not in JUDGE_BACKENDS:
            raise ValueError(f"--judge-backend {backend!r} cannot judge: a judge must answer claim JSON, which only "
                             f"a model does; choose one of {', '.join(JUDGE_BACKENDS)}")
        if backend == "openai" and not self.base_urls:
            raise ValueError("the openai judge backend needs --judge-base-url")
        if self.model_args and backend == "openai":
            raise ValueError("--judge-model-args is for the vllm and hf judge backends, not openai")
        if self.concurrency < 1:
            raise ValueError(f"judge concurrency must be >= 1, got {self.concurrency}")

    def resolved_backend(self) -> str:
        """The judge's backend once the default (openai) is applied."""
        return self.backend or "openai"

    def identity(self) -> dict[str, Any]:
        """What decides the verdicts (not where they come from): stored with every judged episode."""
        return {"model": self.model, "backend": self.resolved_backend(), "model_args": dict(self.model_args),
                "sampling": asdict(self.sampling)}

    def make_agent(self) -> Agent:
        """The judge agent, through the same factory as ``--model``."""
        from ragen_eval.agents import make_agent

        api_key = os.environ.get(self.api_key_env) if self.api_key_env else None
        return make_agent(self.resolved_backend(), self.model, base_urls=self.base_urls, api_key=api_key,
                          concurrency=self.concurrency, timeout=self.timeout, max_retries=self.max_retries,
                          requests_per_second=self.requests_per_second, model_args=self.model_args)


def episode_digest(record: Mapping[str, Any]) -> str:
    """A short digest of an episode record; a judgement applies only to the record it was made for."""
    text = json.dumps(record, sort_keys=True, ensure_ascii=True, allow_nan=False)
    return hashlib.sha256(text.encode("ascii")).hexdigest()[:16]


def read_judgements(run_path: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """Every complete line of a run's ``judge.jsonl`` (none when the run was never judged)."""
    return read_episodes(Path(run_path) / JUDGE_FILE)


def current_judgements(records: Sequence[Mapping[str, Any]],
                       entries: Sequence[Mapping[str, Any]]) -> dict[tuple[str, int], dict[str, Any]]:
    """The judgement of each record, keyed by ``(env, seed)``: only lines whose digest matches the record."""
    digests = {episode_key(dict(r)): episode_digest(r) for r in records}
    out: dict[tuple[str, int], dict[str, Any]] = {}
    for entry in entries:
        key = episode_key(dict(entry))
        if key not in out and digests.get(key) == entry.get("episode_digest"):
            out[key] = dict(entry)
    return out


def load_judgements(run_path: str | os.PathLike[str],
                    records: Sequence[Mapping[str, Any]]) -> dict[tuple[str, int], dict[str, Any]] | None:
    """:func:`current_judgements` of a run directory, or None when it has no ``judge.jsonl``."""
    if not (Path(run_path) / JUDGE_FILE).exists():
        return None
    return current_judgements(records, read_judgements(run_path))


def judge_metrics(rule_turns: Sequence[Mapping[str, Any]], judge_turns: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Rule/judge agreement over paired turns, plus the judge's own claim counts.

    Turns whose judgement failed (``error`` set) are left out of the pairing, since an empty
    claim list there says nothing about the thought; ``judge_errors`` counts them.
    """
    if len(rule_turns) != len(judge_turns):
        raise ValueError(f"{len(rule_turns)} rule-scored turns but {len(judge_turns)} judged turns")
    kept = [(r, j) for r, j in zip(rule_turns, judge_turns) if not j.get("error")]
    stats = agreement([r for r, _ in kept], [j for _, j in kept])
    verdicts = [c["verdict"] for _, j in kept for c in j["claims"] if c.get("verdict") is not None]
    return {**stats, "judge_errors": len(judge_turns) - len(kept),
            "judge_claims_per_turn": len(verdicts) / len(kept) if kept else None,
            "judge_claim_accuracy": sum(verdicts) / len(verdicts) if verdicts else None}


def check_judge(entries: Sequence[Mapping[str, Any]], identity: Mapping[str, Any], path: Path) -> None:
    """Refuse to mix judges in one run: raise :class:`ConfigMismatchError` if an entry names another."""
    for entry in entries:
        if entry.get("judge") != identity:
            raise ConfigMismatchError(
                f"{path} holds verdicts of another judge ({entry.get('judge')}); this one is {dict(identity)}. "
                "Move that file away to judge the run again with a different judge.")


class JudgeFile:
    """A run's open ``judge.jsonl`` for one judge; use inside the :class:`RunDir` that holds the run's lock."""

    def __init__(self, run: RunDir, judge: JudgeConfig, *, retry_errors: bool = False):
        self.run = run
        self.identity = judge.identity()
        self.retry_errors = retry_errors
        self.done: dict[tuple[str, int], dict[str, Any]] = {}
        self._fh: IO[bytes] | None = None

    @property
    def path(self) -> Path:
        """Path of ``judge.jsonl``."""
        return self.run.path / JUDGE_FILE

    def __enter__(self) -> JudgeFile:
        cut_partial_tail(self.path)
        entries = read_judgements(self.run.path)
        check_judge(entries, self.identity, self.path)
        current = current_judgements(self.run.records(), entries)
        self.done = {key: entry for key, entry in current.items()
                     if not (self.retry_errors and any(t.get("error") for t in entry["turns"]))}
        if len(self.done) != len(entries):
            rewrite_jsonl(self.path, self.done.values())
        self._fh = self.path.open("ab")
        return self

    def __exit__(self, *exc: object) -> None:
        if self._fh is not None:
            self._fh.close()
            self._fh = None

    def pending(self) -> list[dict[str, Any]]:
        """Finished episodes with at least one turn that this judge has not judged yet."""
        return [r for r in self.run.records() if r.get("turns") and episode_key(r) not in self.done]

    def append(self, entry: dict[str, Any]) -> None:
        """Write one episode's judgement as a single flushed line."""
        if self._fh is None:
            raise RuntimeError("JudgeFile is not open")
        key = episode_key(entry)
        if key in self.done:
            raise ValueError(f"episode {key} is already judged in {self.path}")
        self._fh.write(jsonl_line(entry))
        self._fh.flush()
        self.done[key] = entry


@dataclass
class JudgeStats:
    """What one judging pass did (for the command line; not stored)."""

    episodes: int = 0
    turns: int = 0
    errors: int = 0
    wall_seconds: float = 0.0
    first_error: str | None = None


async def _judge_one(agent: Agent, turn: Mapping[str, Any], coordinate_base: int,
                     sampling: SamplingParams) -> dict[str, Any]:
    state = turn.get("state_before") or {}
    try:
        return await judge_turn(agent, turn, game=str(state.get("game")), coordinate_base=coordinate_base,
                                sampling=sampling)
    except Exception as err:  # a judge bug must cost one turn's verdicts, not the run
        return {"claims": [], "dropped": 0, "raw": "", "error": f"judge raised {type(err).__name__}: {err}"}


async def judge_episode(agent: Agent, record: Mapping[str, Any], judge: JudgeConfig) -> dict[str, Any]:
    """The ``judge.jsonl`` line for one episode: every turn judged (turns without a thought cost no request)."""
    base = int((record.get("protocol") or {}).get("coordinate_base", 0))
    turns = await asyncio.gather(*(_judge_one(agent, t, base, judge.sampling) for t in record["turns"]))
    return {"env": record["env"], "seed": record["seed"], "episode_digest": episode_digest(record),
            "judge": judge.identity(), "turns": list(turns)}


async def judge_pending(agent: Agent, run: RunDir, judge: JudgeConfig, *, retry_errors: bool = False,
                        progress: bool = True) -> JudgeStats:
    """Judge every episode of ``run`` that ``judge.jsonl`` lacks, appending each as it is judged."""
    stats = JudgeStats()
    start = time.perf_counter()
    with JudgeFile(run, judge, retry_errors=retry_errors) as store:
        queue: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        for record in store.pending():
            queue.put_nowait(record)
        bar = None
        if progress and queue.qsize():
            from tqdm.auto import tqdm

            bar = tqdm(total=queue.qsize(), desc=f"judge {judge.model}", unit="ep", dynamic_ncols=True,
                       file=sys.stderr)

        async def worker() -> None:
            while True:
                try:
                    record = queue.get_nowait()
                except asyncio.QueueEmpty:
                    return
                entry = await judge_episode(agent, record, judge)
                store.append(entry)
                stats.episodes += 1
                stats.turns += len(entry["turns"])
                errors = [t["error"] for t in entry["turns"] if t.get("error")]
                stats.errors += len(errors)
                stats.first_error = stats.first_error or (errors[0] if errors else None)
                if bar is not None:
                    bar.update(1)

        tasks = [asyncio.ensure_future(worker()) for _ in range(min(judge.concurrency, queue.qsize()))]
        try:
            await asyncio.gather(*tasks)
        except BaseException:
            for task in tasks:  # nothing may be appended once the file is closed
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            raise
        finally:
            stats.wall_seconds = time.perf_counter() - start
            if bar is not None:
                bar.close()
    return stats


async def judge_run_dir(run: RunDir, judge: JudgeConfig, *, agent: Agent | None = None, retry_errors: bool = False,
                        progress: bool = True) -> JudgeStats:
    """Build the judge agent (unless ``agent`` is given), judge what is pending, release the agent."""
    owned = agent is None
    judge_agent = judge.make_agent() if owned else agent
    try:
        return await judge_pending(judge_agent, run, judge, retry_errors=retry_errors, progress=progress)
    finally:
        if owned:
            await judge_agent.aclose()


def merge_judgements(shard_dirs: Sequence[str | os.PathLike[str]], out: str | os.PathLike[str]) -> int:
    """Copy the shards' current verdicts into the merged run ``out``; return how many episodes had one.

    All shards that were judged must have been judged by the same judge.
    """
    from ragen_eval.run_dir import load_run

    _, records = load_run(out)
    entries = [e for d in shard_dirs for e in read_judgements(d)]
    if not entries:
        return 0
    judges = {json.dumps(e.get("judge"), sort_keys=True) for e in entries}
    if len(judges) > 1:
        raise ConfigMismatchError(f"the shards were judged by different judges: {sorted(judges)}")
    current = current_judgements(records, entries)
    rewrite_jsonl(Path(out) / JUDGE_FILE, current.values())
    return len(current)
