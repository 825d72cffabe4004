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


#: Headline thought-state consistency metrics (``ragen_eval.consistency.aggregate``), when present.
CONSISTENCY_COLUMNS: tuple[str, ...] = ("claim_accuracy", "hallucination_rate", "plan_answer_agreement")


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


def results_table(summary: dict[str, Any]) -> str:
    """Per-env rows plus an ``overall`` row, then the failure breakdown, as Markdown."""
    columns = [*COLUMNS, *(c for c in OPTIONAL_COLUMNS if summary["overall"].get(c[1]) is not None)]
    consistency_keys = _consistency_keys(summary)
    header = ["env", *(c[0] for c in columns), *consistency_keys]
    rows = []
    groups = [*summary["per_env"].items(), ("overall", summary["overall"])]
    for name, metrics in groups:
        row = [name, *(fmt(metrics.get(key), pattern) for _, key, pattern in columns)]
        row += [fmt((metrics.get("consistency") or {}).get(k), "{:.3f}") for k in consistency_keys]
        rows.append(row)
    title = (f"{summary['model']} ({summary['backend']}), split={summary['split']}, "
             f"{summary['episodes_done']}/{summary['episodes_expected']} episodes")
    failure_rows = [[name, ", ".join(f"{k}: {v}" for k, v in metrics["failures"].items()) or "-"]
                    for name, metrics in groups]
    return "\n\n".join([title, markdown_table(header, rows), "Failures (primary cause, episodes):",
                        markdown_table(["env", "failures"], failure_rows)])


def _consistency_keys(summary: dict[str, Any]) -> list[str]:
    block = summary["overall"].get("consistency") or {}
    return [k for k in CONSISTENCY_COLUMNS if k in block]
