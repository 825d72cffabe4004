"""The lm-eval style results table printed at the end of a run and by ``ragen-eval show``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

#: (header, summary key, format) of the per-env columns.
COLUMNS: tuple[tuple[str, str, str], ...] = (
    ("n", "episodes", "{:d}"),
    ("success", "success_rate", "{:.3f}"),
    ("95% CI", "success_ci95", "[{:.3f}, {:.3f}]"),
    ("reward", "mean_reward", "{:.3f}"),
    ("efficiency", "efficiency", "{:.3f}"),
    ("format err", "format_error_rate", "{:.3f}"),
    ("think words/turn", "think_words_per_turn", "{:.1f}"),
    ("actions/turn", "actions_per_turn", "{:.2f}"),
    ("errors", "errors", "{:d}"),
)
#: Columns shown only when the run has them (providers that report reasoning tokens).
OPTIONAL_COLUMNS: tuple[tuple[str, str, str], ...] = (
    ("provider reasoning tok/turn", "provider_reasoning_tokens_per_turn", "{:.1f}"),
)


#: Thought-state consistency metrics (``ragen_eval.consistency.aggregate``): (key, format).
CONSISTENCY_COLUMNS: tuple[tuple[str, str], ...] = (
    ("claims_per_turn", "{:.2f}"),
    ("claim_accuracy", "{:.3f}"),
    ("hallucination_rate", "{:.3f}"),
    ("turns_with_claims", "{:.3f}"),
    ("plan_answer_agreement", "{:.3f}"),
)
#: Rule/judge agreement (``judge_agreement``, from ``ragen-eval ... --judge-model``): (header, key, format).
JUDGE_COLUMNS: tuple[tuple[str, str, str], ...] = (
    ("judge_agreement", "verdict_agreement", "{:.3f}"),
    ("judge_kappa", "cohen_kappa", "{:.3f}"),
    ("judge_claim_overlap", "claim_overlap", "{:.3f}"),
    ("judge_claim_accuracy", "judge_claim_accuracy", "{:.3f}"),
)


def fmt(value: Any, pattern: str) -> str:
    """Format a metric, ``-`` when it is missing (e.g. efficiency with no success)."""
    if value is None:
        return "-"
    if isinstance(value, (list, tuple)):
        return pattern.format(*value)
    return pattern.format(value)


def markdown_table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """A GitHub-flavoured Markdown table, padded so that it also reads well as plain text."""
    widths = [max(len(str(h)), *(len(str(r[i])) for r in rows)) for i, h in enumerate(header)]

    def line(cells: Sequence[str]) -> str:
        return "| " + " | ".join(str(c).ljust(w) for c, w in zip(cells, widths)) + " |"

    sep = "|" + "|".join("-" * (w + 2) for w in widths) + "|"
    return "\n".join([line(header), sep, *(line(r) for r in rows)])


def comparison_table(result: dict[str, dict[str, Any]]) -> str:
    """The table of a paired comparison (:func:`ragen_eval.metrics.paired_comparison`): one row per
    env and one for all levels, McNemar on success, the paired bootstrap's interval and the sign-flip p on reward."""
    rows = [[name, str(r["pairs"]), f"{r['success_a']:.3f}", f"{r['success_b']:.3f}",
             f"{r['mcnemar']['a_only']}/{r['mcnemar']['b_only']}", f"{r['mcnemar']['p_value']:.4g}",
             f"{r['reward_bootstrap']['mean_diff']:+.3f} [{r['reward_bootstrap']['ci_low']:+.3f}, "
             f"{r['reward_bootstrap']['ci_high']:+.3f}]", f"{r['reward_sign_flip']['p_value']:.4g}"]
            for name, r in result.items()]
    return markdown_table(["env", "pairs", "success A", "success B", "A only/B only", "McNemar p",
                           "reward A-B [95% CI]", "sign-flip p"], rows)


def results_table(summary: dict[str, Any]) -> str:
    """Per-env rows plus an ``overall`` row, the consistency table, then the failure breakdown, as Markdown."""
    columns = [*COLUMNS, *(c for c in OPTIONAL_COLUMNS if summary["overall"].get(c[1]) is not None)]
    header = ["env", *(c[0] for c in columns)]
    groups = [*summary["per_env"].items(), ("overall", summary["overall"])]
    rows = [[name, *(fmt(metrics.get(key), pattern) for _, key, pattern in columns)] for name, metrics in groups]
    where = f"levels={summary['levels']}" if summary.get("levels") else f"split={summary['split']}"
    title = (f"{summary['model']} ({summary['backend']}), {where}, "
             f"{summary['episodes_done']}/{summary['episodes_expected']} episodes")
    parts = [title, markdown_table(header, rows)]
    consistency = consistency_table(summary)
    if consistency:
        parts += [consistency_title(summary), consistency]
    failure_rows = [[name, ", ".join(f"{k}: {v}" for k, v in metrics["failures"].items()) or "-"]
                    for name, metrics in groups]
    parts += ["Failures (primary cause, episodes):", markdown_table(["env", "failures"], failure_rows)]
    return "\n\n".join(parts)


def consistency_title(summary: dict[str, Any]) -> str:
    """The line above the consistency table: rule-based, and which judge when there is one."""
    judge = summary.get("judge")
    if not judge:
        return "Thought-state consistency (rule-based):"
    notes = [] if judge["complete"] else [f"{judge['episodes_judged']}/{judge['episodes_to_judge']} episodes judged"]
    failed = (summary["overall"].get("judge_agreement") or {}).get("judge_errors")
    if failed:
        notes.append(f"{failed} turns without verdicts")
    return (f"Thought-state consistency (rule-based; judge {judge['model']} ({judge['backend']})"
            + "".join(f", {n}" for n in notes) + "):")


def consistency_table(summary: dict[str, Any]) -> str | None:
    """One column per consistency metric (and per judge-agreement figure when judged); None without scores."""
    if not summary["overall"].get("consistency"):
        return None
    judged = "judge_agreement" in summary["overall"]
    header = ["env", *(k for k, _ in CONSISTENCY_COLUMNS), *(h for h, _, _ in JUDGE_COLUMNS if judged)]
    rows = []
    for name, metrics in [*summary["per_env"].items(), ("overall", summary["overall"])]:
        block, agreement = metrics.get("consistency") or {}, metrics.get("judge_agreement") or {}
        rows.append([name, *(fmt(block.get(k), pattern) for k, pattern in CONSISTENCY_COLUMNS),
                     *(fmt(agreement.get(k), pattern) for _, k, pattern in JUDGE_COLUMNS if judged)])
    return markdown_table(header, rows)
