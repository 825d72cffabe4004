"""Reading a run's judge verdicts (``judge.jsonl``): which are current, and merging them.

The read side of :mod:`ragen_eval.judging`: summaries, leaderboards and ``merge`` use it, and none
of them can start a judge. A verdict applies only to the episode record it was made for, which
its ``episode_digest`` names.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ragen_eval.jsonl_store import read_jsonl, rewrite_jsonl
from ragen_eval.run_dir import ConfigMismatchError, EpisodeKey, episode_key, load_run

JUDGE_FILE = "judge.jsonl"


def episode_digest(record: Mapping[str, Any]) -> str:
    """A short digest of an episode record; a judgement applies only to the record it was made for."""
    text = json.dumps(record, sort_keys=True, ensure_ascii=True, allow_nan=False)
    return hashlib.sha256(text.encode("ascii")).hexdigest()[:16]


def read_judgements(run_path: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """Every complete line of a run's ``judge.jsonl`` (none when the run was never judged)."""
    return read_jsonl(Path(run_path) / JUDGE_FILE)


def current_judgements(records: Sequence[Mapping[str, Any]],
                       entries: Sequence[Mapping[str, Any]]) -> dict[EpisodeKey, dict[str, Any]]:
    """The judgement of each record, keyed by :func:`episode_key`: only lines whose digest matches the record."""
    digests = {episode_key(dict(r)): episode_digest(r) for r in records}
    out: dict[EpisodeKey, dict[str, Any]] = {}
    for entry in entries:
        key = episode_key(dict(entry))
        if key not in out and digests.get(key) == entry.get("episode_digest"):
            out[key] = dict(entry)
    return out


def load_judgements(run_path: str | os.PathLike[str],
                    records: Sequence[Mapping[str, Any]]) -> dict[EpisodeKey, dict[str, Any]] | None:
    """:func:`current_judgements` of a run directory, or None when it has no ``judge.jsonl``."""
    if not (Path(run_path) / JUDGE_FILE).exists():
        return None
    return current_judgements(records, read_judgements(run_path))


def check_judge(entries: Sequence[Mapping[str, Any]], identity: Mapping[str, Any], path: Path) -> None:
    """Refuse to mix judges in one run: raise :class:`ConfigMismatchError` if an entry names another."""
    for entry in entries:
        if entry.get("judge") != identity:
            raise ConfigMismatchError(
                f"{path} holds verdicts of another judge ({entry.get('judge')}); this one is {dict(identity)}. "
                "Move that file away to judge the run again with a different judge.")


def merge_judgements(shard_dirs: Sequence[str | os.PathLike[str]], out: str | os.PathLike[str]) -> int:
    """Copy the shards' current verdicts into the merged run ``out``; return how many episodes had one.

    All shards that were judged must have been judged by the same judge.
    """
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
