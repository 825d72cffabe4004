"""Summaries of runs: identity, completeness and metrics, built from episode records alone.

The runner plays and this module summarises; ``show``, ``merge``, the leaderboard and the runner
all build a run's ``summary.json`` here, so it is a pure function of ``episodes.jsonl`` (and of
the judge's current verdicts in ``judge.jsonl``, when the run was judged).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from ragen_eval.config import EvalConfig
from ragen_eval.judgements import load_judgements
from ragen_eval.metrics import summarize
from ragen_eval.run_dir import EpisodeKey, RunDir, episode_key, load_run


def build_summary(config: EvalConfig, records: list[dict[str, Any]],
                  judgements: Mapping[EpisodeKey, Mapping[str, Any]] | None = None) -> dict[str, Any]:
    """The summary of a run: identity, completeness and metrics (a pure function of the episodes
    and, when the run was judged, of the judge's current verdicts; see :mod:`ragen_eval.judgements`)."""
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
