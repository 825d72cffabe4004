"""Metrics of an evaluation run, computed from episode records alone (docs/interfaces.md schema).

:func:`episode_metrics` turns one record into flat numbers and a failure category; :func:`aggregate`
pools them over a group of episodes, and :func:`ragen_eval.summary.summarize` does that per env
and overall, beside thought-state consistency. Because they read only the records, a summary can
always be recomputed from ``episodes.jsonl`` (``ragen-eval show``), and a resumed run's summary
equals an uninterrupted one's.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ragen_envs.certificate import Certificate

from ragen_eval.stats import mcnemar_test, paired_bootstrap, sign_flip_test, wilson_interval

#: Failure categories, in the order used to pick one primary cause for a failed episode: first
#: what cut the episode short, then what ended the game, then what wasted the budget.
FAILURE_CATEGORIES: tuple[str, ...] = (
    "error",  # the request failed for good (network, server), see the record's "error"
    "truncated",  # a response hit the token limit (finish_reason "length")
    "deadlock",  # Sokoban: a push made the level unsolvable
    "hole_after_slip",  # FrozenLake: fell in a hole on a move that slipped
    "hole_by_choice",  # FrozenLake: fell in a hole on a move that went where it was meant to
    "format_error",  # at least one answer broke the format (and executed nothing)
    "invalid_or_noop",  # at least one move was invalid or changed nothing (e.g. into a wall)
    "out_of_budget",  # ran out of turns or actions with none of the above
    "wrong_choice",  # the game ended without success for another reason (Bandit: a worse arm)
)

# Pieces a GPT-2 style byte-level BPE splits text into before merging; a portable, model-free
# stand-in for "tokens" that tracks real token counts of English prose closely from below.
_PRETOKEN = re.compile(r"'(?:s|t|re|ve|m|ll|d)| ?[^\W\d_]+| ?\d+| ?[^\s\w]+|\s+(?!\S)", re.UNICODE)


def count_words(text: str | None) -> int:
    """Whitespace-separated words."""
    return len(text.split()) if text else 0


def count_pretokens(text: str | None) -> int:
    """Approximate tokens: GPT-2 pre-tokenizer pieces (words, numbers, punctuation runs)."""
    if not text:
        return 0
    return sum(1 for piece in _PRETOKEN.findall(text) if piece.strip())


def optimal_steps(certificate: Mapping[str, Any] | None) -> int | None:
    """The fewest actions that solve the level: the ``optimal_steps`` of a record's certificate (the
    dict form of :class:`ragen_envs.certificate.Certificate`); None without a certificate or when the
    game does not know it. A certificate without the typed fields raises a ValueError naming them."""
    return Certificate.from_dict(certificate).optimal_steps if certificate else None


def _think_text(turn: dict[str, Any]) -> str:
    # Provider-side reasoning (reasoning_content) is think text too; the parser already copies it
    # into ``think`` when the reply has no <think> block, so it must not be counted twice.
    reasoning, think = turn.get("reasoning") or "", turn.get("think") or ""
    if not reasoning or reasoning.strip() == think.strip():
        return think
    return f"{reasoning}\n{think}" if think else reasoning


def _completion(turn: dict[str, Any]) -> dict[str, Any]:
    return turn.get("completion") or {}


def _fell_in_hole(record: dict[str, Any]) -> tuple[bool, bool]:
    """(fell in a hole, the fatal move slipped) for FrozenLake-style records."""
    turns = record.get("turns") or []
    if not turns:
        return (False, False)
    state = turns[-1].get("state_after") or {}
    holes = {tuple(h) for h in state.get("holes", [])}
    player = state.get("player")
    if not holes or player is None or tuple(player) not in holes:
        return (False, False)
    infos = turns[-1].get("infos") or []
    return (True, bool(infos and infos[-1].get("slipped")))


def failure_category(record: dict[str, Any]) -> str | None:
    """The primary cause of a failed episode (one of :data:`FAILURE_CATEGORIES`), None on success."""
    if record.get("success"):
        return None
    flags = failure_flags(record)
    for category in FAILURE_CATEGORIES:
        if flags.get(category):
            return category
    return "wrong_choice"


def failure_flags(record: dict[str, Any]) -> dict[str, bool]:
    """Every failure mode seen in the episode (several may hold at once)."""
    turns = record.get("turns") or []
    infos = [info for turn in turns for info in (turn.get("infos") or [])]
    fell, slipped = _fell_in_hole(record)
    end_reason = record.get("end_reason")
    return {
        "error": bool(record.get("error")),
        "truncated": any(t.get("finish_reason") == "length" or _completion(t).get("finish_reason") == "length"
                         for t in turns),
        "deadlock": any(info.get("deadlock") for info in infos),
        "hole_after_slip": fell and slipped,
        "hole_by_choice": fell and not slipped,
        "format_error": any(not t.get("format_ok", True) for t in turns),
        "invalid_or_noop": any(
            not info.get("action_is_valid", True) or not info.get("action_is_effective", True) for info in infos
        ),
        # "truncated" here is Gymnasium's step limit, i.e. a budget too.
        "out_of_budget": end_reason in ("max_turns", "max_actions", "truncated"),
    }


def episode_metrics(record: dict[str, Any]) -> dict[str, Any]:
    """Flat per-episode numbers that :func:`aggregate` pools."""
    turns = record.get("turns") or []
    n_turns = len(turns)
    actions_taken = sum(len(t.get("actions_executed") or []) for t in turns)
    success = bool(record.get("success"))
    optimum = optimal_steps(record.get("certificate"))
    think_words = sum(count_words(_think_text(t)) for t in turns)
    think_tokens = sum(count_pretokens(_think_text(t)) for t in turns)
    reasoning_tokens = [_completion(t).get("reasoning_tokens") for t in turns]
    completion_tokens = [_completion(t).get("completion_tokens") for t in turns]
    return {
        "success": success,
        "reward": float(record.get("total_reward", 0.0)),
        "turns": n_turns,
        "actions": actions_taken,
        "actions_per_turn": (sum(len(t.get("actions_parsed") or []) for t in turns) / n_turns) if n_turns else 0.0,
        "format_error_turns": sum(1 for t in turns if not t.get("format_ok", True)),
        "optimal_steps": optimum,
        "efficiency": (min(1.0, optimum / actions_taken) if success and optimum is not None and actions_taken > 0
                       else None),
        "think_words": think_words,
        "think_tokens": think_tokens,
        "think_tokens_per_optimal_step": (think_tokens / optimum) if optimum else None,
        "provider_reasoning_tokens": (sum(r for r in reasoning_tokens if r is not None)
                                      if any(r is not None for r in reasoning_tokens) else None),
        "completion_tokens": (sum(c for c in completion_tokens if c is not None)
                              if any(c is not None for c in completion_tokens) else None),
        "failure": failure_category(record),
        "flags": failure_flags(record),
        "error": bool(record.get("error")),
    }


def _mean(values: Iterable[float | None]) -> float | None:
    present = [float(v) for v in values if v is not None]
    return sum(present) / len(present) if present else None


def aggregate(per_episode: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Aggregate :func:`episode_metrics` outputs of one group of episodes."""
    n = len(per_episode)
    k = sum(1 for m in per_episode if m["success"])
    low, high = wilson_interval(k, n)
    turns = sum(m["turns"] for m in per_episode)
    failures = Counter(m["failure"] for m in per_episode if m["failure"] is not None)
    flag_counts = Counter(name for m in per_episode for name, on in m["flags"].items() if on)
    return {
        "episodes": n,
        "successes": k,
        "success_rate": (k / n) if n else None,
        "success_ci95": [low, high],
        "success_stderr": math.sqrt((k / n) * (1 - k / n) / n) if n else None,
        "mean_reward": _mean(m["reward"] for m in per_episode),
        "efficiency": _mean(m["efficiency"] for m in per_episode),
        "format_error_rate": (sum(m["format_error_turns"] for m in per_episode) / turns) if turns else None,
        "mean_turns": _mean(m["turns"] for m in per_episode),
        "mean_actions": _mean(m["actions"] for m in per_episode),
        "actions_per_turn": (sum(m["actions_per_turn"] * m["turns"] for m in per_episode) / turns) if turns else None,
        "think_words_per_turn": (sum(m["think_words"] for m in per_episode) / turns) if turns else None,
        "think_tokens_per_turn": (sum(m["think_tokens"] for m in per_episode) / turns) if turns else None,
        "think_tokens_per_optimal_step": _mean(m["think_tokens_per_optimal_step"] for m in per_episode),
        "provider_reasoning_tokens_per_turn": _per_turn(per_episode, "provider_reasoning_tokens"),
        "completion_tokens_per_turn": _per_turn(per_episode, "completion_tokens"),
        "errors": sum(1 for m in per_episode if m["error"]),
        "failures": {c: failures[c] for c in FAILURE_CATEGORIES if failures[c]},
        "failure_flags": {c: flag_counts[c] / n for c in FAILURE_CATEGORIES if n and flag_counts[c]},
    }


#: The scalar numbers of an :func:`aggregate` group that a curve can follow. ``ragen-train`` logs
#: exactly these for its rollouts (``rollout/<key>``) and its validation runs (``eval/<key>``), so a
#: training curve and a leaderboard number with the same name are the same number.
HEADLINE_KEYS: tuple[str, ...] = (
    "episodes", "success_rate", "success_stderr", "mean_reward", "efficiency", "format_error_rate", "mean_turns",
    "mean_actions", "actions_per_turn", "think_words_per_turn", "think_tokens_per_turn",
    "think_tokens_per_optimal_step", "completion_tokens_per_turn",
)
#: Thought-state consistency ratios (``ragen_eval.consistency``) logged beside :data:`HEADLINE_KEYS`.
CONSISTENCY_KEYS: tuple[str, ...] = ("claim_accuracy", "hallucination_rate", "plan_answer_agreement")


def headline_metrics(group: Mapping[str, Any]) -> dict[str, Any]:
    """The :data:`HEADLINE_KEYS` of one :func:`ragen_eval.summary.summarize` group (``summary["overall"]`` or a per-env
    entry), then its :data:`CONSISTENCY_KEYS` when it was scored for consistency: one flat dict."""
    out = {key: group.get(key) for key in HEADLINE_KEYS}
    consistency = group.get("consistency")
    if consistency is not None:
        out.update({key: consistency.get(key) for key in CONSISTENCY_KEYS})
    return out


def _per_turn(per_episode: Sequence[dict[str, Any]], key: str) -> float | None:
    reported = [m for m in per_episode if m[key] is not None]
    turns = sum(m["turns"] for m in reported)
    return sum(m[key] for m in reported) / turns if turns else None


def paired_comparison(records_a: Sequence[dict[str, Any]], records_b: Sequence[dict[str, Any]],
                      seed: int = 0) -> dict[str, Any]:
    """Paired tests of run A against run B on the (env, seed) levels both played, one episode a level.

    Success gets the exact McNemar test; reward the paired bootstrap's interval and the sign-flip test's
    p-value; per env and overall. A run holding several episodes of one level (ragen-train's saved
    rollouts, a group of samples per level) is a ValueError: its samples are not independent pairs.
    """
    a_by_key = episodes_by_level(records_a, "A")
    b_by_key = episodes_by_level(records_b, "B")
    shared = [key for key in a_by_key if key in b_by_key]
    if not shared:
        raise ValueError("the two runs share no (env, seed) levels; pairs need the same split and envs")
    groups: dict[str, list[tuple[str, int]]] = {}
    for key in shared:
        groups.setdefault(key[0], []).append(key)
    groups["overall"] = shared
    out: dict[str, Any] = {}
    for name, keys in groups.items():
        sa = [bool(a_by_key[k].get("success")) for k in keys]
        sb = [bool(b_by_key[k].get("success")) for k in keys]
        ra = [float(a_by_key[k].get("total_reward", 0.0)) for k in keys]
        rb = [float(b_by_key[k].get("total_reward", 0.0)) for k in keys]
        out[name] = {
            "pairs": len(keys),
            "success_a": sum(sa) / len(keys),
            "success_b": sum(sb) / len(keys),
            "mcnemar": mcnemar_test(sa, sb).to_dict(),
            "reward_bootstrap": paired_bootstrap(ra, rb, n_resamples=5000, seed=seed).to_dict(),
            "reward_sign_flip": sign_flip_test(ra, rb, n_resamples=5000, seed=seed).to_dict(),
        }
    return out


def episodes_by_level(records: Sequence[dict[str, Any]], run: str) -> dict[tuple[str, int], dict[str, Any]]:
    """``records`` by their level ``(env, seed)``; a ValueError when one level has several episodes (samples),
    which are no independent pairs."""
    by_key: dict[tuple[str, int], dict[str, Any]] = {}
    for record in records:
        key = (record["env"], int(record["seed"]))
        if key in by_key:
            raise ValueError(f"run {run} holds several episodes of level {key[0]}:{key[1]} (samples of one level, "
                             "as ragen-train saves its rollouts); paired tests take one episode a level")
        by_key[key] = record
    return by_key
