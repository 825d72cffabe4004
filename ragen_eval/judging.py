"""Judge mode for runs: an LLM judge lists the claims in every thought of a run, with verdicts.

The judge is any harness agent (:func:`judge_run_dir` builds it from a :class:`JudgeConfig` with
``make_agent``); it reads each turn's true state and thought through
:func:`ragen_eval.consistency.judge.judge_turn`. Its answers go to the run directory's
``judge.jsonl``, one line per episode, kept by the same :class:`ragen_eval.jsonl_store.JsonlStore`
as ``episodes.jsonl``, so rerunning judges only what is missing and a torn last line is simply
judged again. Each line names its judge and carries a
digest of the episode record it judged: lines about an episode replayed since (``--retry-errors``)
are stale and are judged anew, and a run judged by one model refuses verdicts from another.
Reading the verdicts (summaries, leaderboards, merges) is :mod:`ragen_eval.run_dir`, which
starts no judge.
"""

from __future__ import annotations

import asyncio
import os
import sys
import time
from collections import Counter
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ragen_eval.agents import make_agent
from ragen_eval.agents.base import Agent, SamplingParams
from ragen_eval.config import check_request_limits
from ragen_eval.consistency.judge import JUDGE_SAMPLING, judge_turn
from ragen_eval.jsonl_store import JsonlStore
from ragen_eval.redaction import check_base_url, redact_mapping
from ragen_eval.run_dir import JUDGE_FILE, EpisodeKey, RunDir, check_judge, episode_digest, episode_key
from ragen_eval.run_stats import JudgeStats

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
    """Keyword arguments for a local judge backend (vllm, hf); stored with secrets as ``***``."""
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
        check_request_limits(self.timeout, self.requests_per_second)
        for url in self.base_urls:
            check_base_url(url)

    def resolved_backend(self) -> str:
        """The judge's backend once the default (openai) is applied."""
        return self.backend or "openai"

    def identity(self) -> dict[str, Any]:
        """What decides the verdicts (not where they come from): stored with every judged episode, its model
        arguments with secrets as ``***`` (:func:`ragen_eval.redaction.redact_mapping`)."""
        return {"model": self.model, "backend": self.resolved_backend(), "model_args": redact_mapping(self.model_args),
                "sampling": asdict(self.sampling)}


class JudgeFile:
    """A run's open ``judge.jsonl`` for one judge; use inside the :class:`RunDir` that holds the run's lock."""

    def __init__(self, run: RunDir, judge: JudgeConfig, *, retry_errors: bool = False):
        self.run = run
        self.identity = judge.identity()
        self.retry_errors = retry_errors
        self._store = JsonlStore(run.path / JUDGE_FILE, episode_key)

    @property
    def path(self) -> Path:
        """Path of ``judge.jsonl``."""
        return self._store.path

    @property
    def done(self) -> dict[EpisodeKey, dict[str, Any]]:
        """This judge's current verdicts by :func:`~ragen_eval.run_dir.episode_key`."""
        return self._store.done  # type: ignore[return-value]

    def __enter__(self) -> JudgeFile:
        digests = {episode_key(r): episode_digest(r) for r in self.run.records()}

        def keep(entry: dict[str, Any]) -> bool:
            check_judge([entry], self.identity, self.path)
            # A verdict about an episode replayed since no longer applies to it.
            current = digests.get(episode_key(entry)) == entry.get("episode_digest")
            return current and not (self.retry_errors and any(t.get("error") for t in entry["turns"]))

        self._store.open(keep)
        return self

    def __exit__(self, *exc: object) -> None:
        self._store.close()

    def pending(self) -> list[dict[str, Any]]:
        """Finished episodes with at least one turn that this judge has not judged yet."""
        return [r for r in self.run.records() if r.get("turns") and episode_key(r) not in self.done]

    def append(self, entry: dict[str, Any]) -> None:
        """Write one episode's judgement as a single flushed line."""
        self._store.append(entry)


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
    # A saved rollout's ``sample`` is part of its key: the members of a group share env and seed.
    sample = {"sample": record["sample"]} if record.get("sample") is not None else {}
    return {"env": record["env"], "seed": record["seed"], **sample, "episode_digest": episode_digest(record),
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


def failed_verdicts(judgements: Mapping[EpisodeKey, Mapping[str, Any]]) -> tuple[Counter[str], int]:
    """The errors of the judged turns that got no verdict, counted by message, and how many turns asked the
    judge at all (a turn without a thought sends no request: it has neither an error nor a reply)."""
    asked = [t for entry in judgements.values() for t in entry["turns"] if t.get("error") or t.get("raw")]
    return Counter(str(t["error"]) for t in asked if t.get("error")), len(asked)


async def judge_run_dir(run: RunDir, judge: JudgeConfig, *, agent: Agent | None = None, retry_errors: bool = False,
                        progress: bool = True) -> JudgeStats:
    """Build the judge agent (unless ``agent`` is given) through the same factory as ``--model``,
    judge what is pending in ``run``, release the agent."""
    owned = agent is None
    if agent is None:
        api_key = os.environ.get(judge.api_key_env) if judge.api_key_env else None
        agent = make_agent(judge.resolved_backend(), judge.model, base_urls=judge.base_urls, api_key=api_key,
                           concurrency=judge.concurrency, timeout=judge.timeout, max_retries=judge.max_retries,
                           requests_per_second=judge.requests_per_second, model_args=judge.model_args)
    try:
        return await judge_pending(agent, run, judge, retry_errors=retry_errors, progress=progress)
    finally:
        if owned:
            await agent.aclose()
