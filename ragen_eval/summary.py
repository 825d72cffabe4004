"""Summaries of runs: identity, completeness and metrics, built from episode records alone.

The runner plays and this module summarises; ``evaluate``, ``judge``, ``show``, ``merge`` and
the leaderboard all build a run's summary here, so it is a pure function of ``episodes.jsonl`` (and of
the judge's current verdicts in ``judge.jsonl``, when the run was judged).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ragen_eval.config import EvalConfig
from ragen_eval.consistency.judge import judge_metrics
from ragen_eval.consistency.scoring import aggregate as combine, score_episode
from ragen_eval.metrics import aggregate, episode_metrics
from ragen_eval.run_dir import EpisodeKey, RunDir, episode_key, load_judgements, load_run


def _consistency_functions() -> tuple[Callable, Callable] | None:
    """``ragen_eval.consistency``'s (score_episode, aggregate); tests of hand-built records without
    game states replace this to leave consistency out."""
    return score_episode, combine


def summarize(records: Sequence[dict[str, Any]], envs: Sequence[str] | None = None,
              judgements: Mapping[EpisodeKey, Mapping[str, Any]] | None = None) -> dict[str, Any]:
    """Per-env and overall metrics of a list of episode records.

    ``overall`` pools every episode (so envs with more episodes weigh more); ``macro_success_rate``
    is the plain mean of the per-env success rates. ``judgements`` (``judge.jsonl`` lines keyed by
    :func:`~ragen_eval.run_dir.episode_key`, see :func:`ragen_eval.run_dir.load_judgements`) add ``judge_agreement`` per env and overall.
    """
    envs = list(envs) if envs is not None else list(dict.fromkeys(r["env"] for r in records))
    consistency = _consistency_functions()
    per_env_metrics: dict[str, list[dict[str, Any]]] = {env: [] for env in envs}
    per_env_consistency: dict[str, list[dict[str, Any]]] = {env: [] for env in envs}
    # Paired (rule-scored turn, judged turn) lists per env.
    per_env_judged: dict[str, tuple[list[Any], list[Any]]] = {env: ([], []) for env in envs}
    for record in records:
        env = record["env"]
        if env not in per_env_metrics:
            raise ValueError(f"record for env {env!r} is not among the run's envs {envs}")
        per_env_metrics[env].append(episode_metrics(record))
        if consistency is None or not record.get("turns"):  # an episode that never started has no thoughts
            continue
        score = consistency[0](record)
        per_env_consistency[env].append(score)
        judged = (judgements or {}).get(episode_key(record))
        if judged is not None:
            per_env_judged[env][0].extend(score["turns"])
            per_env_judged[env][1].extend(judged["turns"])
    summary: dict[str, Any] = {"per_env": {}, "overall": {}}
    for env in envs:
        summary["per_env"][env] = aggregate(per_env_metrics[env])
        if consistency is not None:
            summary["per_env"][env]["consistency"] = consistency[1](per_env_consistency[env])
        if consistency is not None and judgements is not None:
            summary["per_env"][env]["judge_agreement"] = judge_metrics(*per_env_judged[env])
    everything = [m for env in envs for m in per_env_metrics[env]]
    summary["overall"] = aggregate(everything)
    rates = [summary["per_env"][e]["success_rate"] for e in envs if summary["per_env"][e]["episodes"]]
    summary["overall"]["macro_success_rate"] = sum(rates) / len(rates) if rates else None
    if consistency is not None:
        summary["overall"]["consistency"] = consistency[1]([c for env in envs for c in per_env_consistency[env]])
    if consistency is not None and judgements is not None:
        summary["overall"]["judge_agreement"] = judge_metrics(
            [t for env in envs for t in per_env_judged[env][0]], [t for env in envs for t in per_env_judged[env][1]])
    return summary


def build_summary(config: EvalConfig, records: list[dict[str, Any]],
                  judgements: Mapping[EpisodeKey, Mapping[str, Any]] | None = None) -> dict[str, Any]:
    """The summary of a run: identity, completeness and metrics (a pure function of the episodes
    and, when the run was judged, of the judge's current verdicts; see :func:`ragen_eval.run_dir.load_judgements`)."""
    expected = len(config.work_items()) * config.samples
    summary = {
        "model": config.model,
        "backend": config.resolved_backend(),
        "split": config.split,
        "envs": config.envs,
        "episodes_per_env": config.episodes,
        "shard": list(config.shard) if config.shard else None,
        "episodes_done": len(records),
        "episodes_expected": expected,
        "complete": len(records) == expected,
        **({"levels": config.levels, "levels_sha256": config.levels_sha256} if config.levels is not None else {}),
        **summarize(records, config.envs, judgements),
    }
    if judgements is not None:
        summary["judge"] = _judge_coverage(records, judgements)
    return summary


def _judge_coverage(records: list[dict[str, Any]],
                    judgements: Mapping[EpisodeKey, Mapping[str, Any]]) -> dict[str, Any]:
    identities = [j["judge"] for j in judgements.values()]
    playable = [r for r in records if r.get("turns")]
    return {**(identities[0] if identities else {"model": None, "backend": None}),
            "episodes_judged": len(judgements), "episodes_to_judge": len(playable),
            "complete": all(episode_key(r) in judgements for r in playable)}


def summary_of(path: str | os.PathLike[str]) -> dict[str, Any]:
    """Recompute a run directory's summary from its ``episodes.jsonl`` and ``judge.jsonl`` (read-only)."""
    config, records = load_run(path)
    return build_summary(config, records, load_judgements(path, records))


def write_summary(run: RunDir) -> dict[str, Any]:
    """Compute the summary of an open run from its episodes (and judge verdicts) and write ``summary.json``."""
    records = run.records()
    summary = build_summary(run.config, records, load_judgements(run.path, records))
    run.write_summary(summary)
    return summary
