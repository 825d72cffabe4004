"""The async runner: play every pending (env, seed) of a run through an agent, append each episode.

The runner only plays. :mod:`ragen_eval.judging` judges a played run, :mod:`ragen_eval.summary`
summarises it, and :func:`ragen_eval.cli.evaluate` chains the three. Besides a model's own run, the
runner says which random and oracle runs a leaderboard still lacks (:func:`baseline_configs`, played
by ``ragen-eval baselines``); the leaderboard itself only reads run directories.

``concurrency`` workers pull episodes from one queue; each plays its episode turn by turn, so an
HTTP backend sees up to ``concurrency`` requests in flight and a batching backend (vLLM) sees
that many prompts per turn. A request that fails for good (``Completion.error``) ends only its
episode, which is recorded with the error; the run goes on.
"""

from __future__ import annotations

import asyncio
import os
import sys
import time
import traceback
from typing import Any

from ragen_envs.text import TextEpisode

from ragen_eval.agents import make_agent
from ragen_eval.agents.base import Agent, Completion
from ragen_eval.config import BUILTIN_MODELS, EvalConfig
from ragen_eval.local_server import local_server
from ragen_eval.run_dir import RunDir, config_digest, level_set_key, load_run
from ragen_eval.run_stats import RunStats


def _usage(completion: Completion) -> dict[str, Any]:
    return {
        "finish_reason": completion.finish_reason,
        "prompt_tokens": completion.prompt_tokens,
        "completion_tokens": completion.completion_tokens,
        "reasoning_tokens": completion.reasoning_tokens,
    }


def _failed_start(env: str, seed: int, error: str) -> dict[str, Any]:
    """The record of an episode whose level could not even be built."""
    return {"env": env, "seed": seed, "turns": [], "success": False, "total_reward": 0.0, "num_turns": 0,
            "num_actions": 0, "end_reason": "error", "error": error}


def _describe(err: BaseException) -> str:
    return f"{type(err).__name__}: {err}"


async def play_episode(agent: Agent, env: str, seed: int, config: EvalConfig) -> dict[str, Any]:
    """Play one episode to the end; return its record (with ``error`` set if it was cut short)."""
    try:
        # Level generation (e.g. the Sokoban solver) can take a while; keep the event loop free.
        game, env_config = config.game_of(env)
        episode = await asyncio.to_thread(TextEpisode, game, seed, config=config.protocol or None,
                                          env_config=env_config or None)
    except Exception as err:  # a broken level must not end a multi-hour run; it is recorded instead
        return _failed_start(env, seed, f"could not start the episode: {_describe(err)}")
    usages: list[dict[str, Any]] = []
    error: str | None = None
    while not episode.done:
        try:
            completions = await agent.act(episode.messages, n=1, sampling=config.sampling, episode=episode)
        except Exception as err:  # an agent bug: record it with the episode, keep the run going
            error = f"agent raised {_describe(err)}"
            traceback.print_exc(file=sys.stderr)
            break
        if not completions:
            error = "agent returned no completion"
            break
        completion = completions[0]
        if completion.error:
            error = completion.error
            break
        episode.step(completion.text or "", finish_reason=completion.finish_reason,
                     reasoning=completion.reasoning_text)
        usages.append(_usage(completion))
    record = episode.record()
    if game != env:  # a level set: keyed by its own name, and each record says which file and level it played
        record["env"] = env
        record["level_source"] = getattr(episode.game, "level_source", None)
    for turn, usage in zip(record["turns"], usages):
        turn["completion"] = usage
    record["error"] = error
    if error is not None:
        record["end_reason"] = "error"
    return record


async def run_pending(agent: Agent, run: RunDir, *, progress: bool = True) -> RunStats:
    """Play every episode the run directory still lacks, appending each as it finishes."""
    config = run.config
    pending = run.pending()
    stats = RunStats()
    queue: asyncio.Queue[tuple[str, int]] = asyncio.Queue()
    for item in pending:
        queue.put_nowait(item)
    bar = _progress_bar(config, total=len(config.work_items()), initial=len(run.done), enabled=progress)
    successes = sum(1 for r in run.done.values() if r.get("success"))
    start_wall, start_cpu = time.perf_counter(), time.process_time()

    async def worker() -> None:
        nonlocal successes
        while True:
            try:
                env, seed = queue.get_nowait()
            except asyncio.QueueEmpty:
                return
            record = await play_episode(agent, env, seed, config)
            run.append(record)
            stats.episodes += 1
            stats.turns += len(record["turns"])
            stats.errors += bool(record.get("error"))
            successes += bool(record.get("success"))
            if bar is not None:
                bar.update(1)
                elapsed = time.perf_counter() - start_wall
                bar.set_postfix(success=f"{successes / len(run.done):.3f}", errors=stats.errors,
                                turns_s=f"{stats.turns / elapsed:.1f}" if elapsed > 0 else "-", refresh=False)

    tasks = [asyncio.ensure_future(worker()) for _ in range(min(config.concurrency, len(pending)))]
    try:
        await asyncio.gather(*tasks)
    except BaseException:
        # Stop the other workers before the run directory closes, so nothing is appended after it.
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        raise
    finally:
        stats.wall_seconds = time.perf_counter() - start_wall
        stats.cpu_seconds = time.process_time() - start_cpu
        if bar is not None:
            bar.close()
    return stats


def _progress_bar(config: EvalConfig, total: int, initial: int, enabled: bool):
    if not enabled:
        return None
    from tqdm.auto import tqdm

    return tqdm(total=total, initial=initial, desc=f"{config.model} [{','.join(config.envs)}]", unit="ep",
                dynamic_ncols=True, file=sys.stderr)


async def play_run(run: RunDir, *, agent: Agent | None = None, progress: bool = True) -> RunStats:
    """Play what the open run still lacks, through ``agent`` or the agent its config describes.

    ``agent`` overrides the configured one (tests, benchmarks, or one built by :func:`configured_agent`
    before the run directory was made); the caller closes it. With ``config.local_server`` the model is
    served by a child ``ragen-eval serve`` for the duration. Judging and summarising are separate
    steps (:mod:`ragen_eval.judging`, :mod:`ragen_eval.summary`); :func:`ragen_eval.cli.evaluate` runs all three.
    """
    config = run.config
    if agent is not None:
        return await run_pending(agent, run, progress=progress)
    if config.local_server:
        with local_server(config.model, config.server_args) as url:
            return await _run_and_close(configured_agent(config, [url]), run, progress)
    return await _run_and_close(configured_agent(config), run, progress)


async def _run_and_close(agent: Agent, run: RunDir, progress: bool) -> RunStats:
    try:
        return await run_pending(agent, run, progress=progress)
    finally:
        await agent.aclose()


def configured_agent(config: EvalConfig, base_urls: list[str] | None = None) -> Agent:
    """The agent ``config`` describes, reaching the model at ``base_urls`` (default: the config's). A local
    checkpoint (hf, vllm) is loaded here, so a model that cannot load fails in this call."""
    api_key = os.environ.get(config.api_key_env) if config.api_key_env else None
    return make_agent(config.resolved_backend(), config.model,
                      base_urls=config.base_urls if base_urls is None else base_urls, api_key=api_key,
                      concurrency=config.concurrency, timeout=config.timeout, max_retries=config.max_retries,
                      requests_per_second=config.requests_per_second, seed=config.agent_seed,
                      model_args=config.model_args)


def baseline_configs(run_dirs: list[str | os.PathLike[str]]) -> list[tuple[str, EvalConfig]]:
    """The random and oracle runs the level sets of ``run_dirs`` lack, as (run directory name, config) pairs.

    Runs are grouped by :func:`~ragen_eval.run_dir.level_set_key`; a group that already holds a
    built-in baseline covering its envs and episodes gets none. The name,
    ``<model>__builtin__<split>__<level-set key>__<episodes>ep-<config digest>``, differs for every
    config (:func:`~ragen_eval.run_dir.config_digest`), so baselines for other envs or episode counts on
    the same levels get their own directories and a rerun of the same config resumes its own.
    """
    groups: dict[str, list[EvalConfig]] = {}
    for path in run_dirs:
        config, _ = load_run(path)
        groups.setdefault(level_set_key(config), []).append(config)
    wanted = []
    for key, members in groups.items():
        envs = list(dict.fromkeys(env for c in members for env in c.envs))
        episodes = max(c.episodes for c in members)
        for model in BUILTIN_MODELS:
            if any(c.model == model and c.resolved_backend() == "builtin" and set(envs) <= set(c.envs)
                   and c.episodes >= episodes for c in members):
                continue
            base = members[0]
            config = EvalConfig(model=model, envs=envs, episodes=episodes, split=base.split,
                                seed_start=base.seed_start, protocol=base.protocol, env_configs=base.env_configs,
                                levels=base.levels, levels_limit=base.levels_limit)
            wanted.append((f"{config.run_name()}__{key}__{episodes}ep-{config_digest(config)}", config))
    return wanted
