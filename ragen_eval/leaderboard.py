"""Leaderboards: one row per run, written as Markdown, CSV, JSON, a self-contained HTML page and plots.

A leaderboard only reads run directories and their summaries; it never plays, judges or
summarises. The random and oracle rows it ranks beside a model come from ``ragen-eval baselines``
(:func:`ragen_eval.cli.play_baselines`), a separate step run first. Every figure is recomputed from
the runs' ``episodes.jsonl`` (the summaries it is given are :func:`ragen_eval.summary.summary_of`'s,
not the stored ``summary.json``), and the output carries no timestamp, so regenerating an unchanged
leaderboard changes no file.
"""

from __future__ import annotations

import base64
import csv
import html
import io
import json
import os
import textwrap
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ragen_eval.metrics import episodes_by_level
from ragen_eval.results_table import CONSISTENCY_COLUMNS, JUDGE_COLUMNS, fmt, markdown_table
from ragen_eval.run_dir import level_set_key, load_run
from ragen_eval.stats import mcnemar_test


#: Widest line of the headline table (leaderboard.md, and what ``ragen-eval leaderboard`` prints).
HEADLINE_WIDTH = 120


@dataclass
class Leaderboard:
    """Rows (one per run, best first) and the env columns they share."""

    rows: list[dict[str, Any]]
    envs: list[str]
    consistency_keys: list[str] = field(default_factory=list)
    judged: bool = False  # some run was judged: add the rule/judge agreement columns

    @classmethod
    def from_rows(cls, rows: list[dict[str, Any]], envs: list[str]) -> Leaderboard:
        """The leaderboard of ranked rows (as ``leaderboard.json`` stores them), with the consistency and
        judge columns that some row fills."""
        keys = [k for k, _ in CONSISTENCY_COLUMNS if any(k in r["consistency"] for r in rows)]
        return cls(rows=rows, envs=envs, consistency_keys=keys,
                   judged=any(r["judge_agreement"] is not None for r in rows))


def load_leaderboard(path: str | os.PathLike[str]) -> Leaderboard:
    """A leaderboard from its ``leaderboard.json``: rewrites the tables and plots without the run directories."""
    data = json.loads(Path(path).read_text())
    return Leaderboard.from_rows(data["rows"], data["envs"])


def build_leaderboard(summaries: Mapping[str | os.PathLike[str], Mapping[str, Any]]) -> Leaderboard:
    """Rank run directories (read-only), given each one's summary.

    ``summaries`` maps each run directory to its summary as :func:`ragen_eval.summary.summary_of`
    recomputes it, e.g. ``build_leaderboard({p: summary_of(p) for p in run_dirs})``.
    """
    if not summaries:
        raise ValueError("leaderboard needs at least one run directory")
    if not any(summary["episodes_done"] for summary in summaries.values()):
        raise ValueError("none of the runs has a finished episode, so there is nothing to rank: "
                         + ", ".join(str(p) for p in summaries))
    loaded = [(Path(p), *load_run(p), summary) for p, summary in summaries.items()]
    envs = list(dict.fromkeys(env for _, c, _, _ in loaded for env in c.envs))
    # Every random run on a level set pools into its baseline: `ragen-eval baselines` plays one directory per env.
    randoms: dict[str, dict[tuple[str, int], bool]] = {}
    for _, config, records, _ in loaded:
        if config.model == "random" and config.resolved_backend() == "builtin":
            baseline = randoms.setdefault(level_set_key(config), {})
            for r in records:
                baseline.setdefault((r["env"], int(r["seed"])), bool(r["success"]))
    rows = []
    for path, config, records, summary in loaded:
        overall = summary["overall"]
        row: dict[str, Any] = {
            "model": config.model, "backend": config.resolved_backend(), "run": str(path),
            "split": config.split, "episodes": summary["episodes_done"], "complete": summary["complete"],
            "success": overall["success_rate"], "success_ci95": overall["success_ci95"],
            "macro_success": overall["macro_success_rate"],
            "mean_reward": overall["mean_reward"], "efficiency": overall["efficiency"],
            "format_error_rate": overall["format_error_rate"],
            "think_words_per_turn": overall["think_words_per_turn"],
            "think_tokens_per_turn": overall["think_tokens_per_turn"],
            "think_tokens_per_optimal_step": overall["think_tokens_per_optimal_step"],
            "provider_reasoning_tokens_per_turn": overall["provider_reasoning_tokens_per_turn"],
            "errors": overall["errors"],
            "per_env": {e: m["success_rate"] for e, m in summary["per_env"].items()},
            "per_env_ci95": {e: m["success_ci95"] for e, m in summary["per_env"].items()},
            "consistency": overall.get("consistency") or {},
            "judge": summary.get("judge"),
            "judge_agreement": overall.get("judge_agreement"),
            "mcnemar_p_vs_random": _p_vs(records, randoms.get(level_set_key(config))),
        }
        rows.append(row)
    # A run without a finished episode (killed before its first) is listed last, with no figures.
    rows.sort(key=lambda r: (r["macro_success"] is None, -(r["macro_success"] or 0.0), r["model"], r["run"]))
    return Leaderboard.from_rows(rows, envs)


def _p_vs(records: list[dict[str, Any]], baseline: dict[tuple[str, int], bool] | None) -> float | None:
    """McNemar's p of ``records`` against random's successes on the levels both played; None without a
    baseline, or when ``records`` hold several episodes of a level (ragen-train's saved rollouts), which are no
    independent pairs."""
    if baseline is None:
        return None
    try:
        by_level = episodes_by_level(records, "")
    except ValueError:
        return None
    pairs = [(bool(r["success"]), baseline[key]) for key, r in by_level.items() if key in baseline]
    if not pairs:
        return None
    return mcnemar_test([a for a, _ in pairs], [b for _, b in pairs]).p_value


def _table(board: Leaderboard) -> tuple[list[str], list[list[str]]]:
    header = ["rank", "model", "backend", "split", "episodes", "success (macro)", "success (pooled) [95% CI]",
             *(f"{e}" for e in board.envs), "reward", "efficiency", "format err", "think words/turn",
             "think tokens/optimal step", *board.consistency_keys,
             *(["judge", *(h for h, _, _ in JUDGE_COLUMNS)] if board.judged else []), "p vs random", "errors"]
    patterns = dict(CONSISTENCY_COLUMNS)
    rows = []
    for rank, r in enumerate(board.rows, 1):
        rows.append([
            str(rank), r["model"], r["backend"], r["split"], str(r["episodes"]) + ("" if r["complete"] else "*"),
            fmt(r["macro_success"], "{:.3f}"),
            f"{fmt(r['success'], '{:.3f}')} {fmt(r['success_ci95'], '[{:.3f}, {:.3f}]')}" if r["episodes"] else "-",
            *(fmt(r["per_env"].get(e), "{:.3f}") for e in board.envs),
            fmt(r["mean_reward"], "{:.3f}"), fmt(r["efficiency"], "{:.3f}"), fmt(r["format_error_rate"], "{:.3f}"),
            fmt(r["think_words_per_turn"], "{:.1f}"), fmt(r["think_tokens_per_optimal_step"], "{:.1f}"),
            *(fmt(r["consistency"].get(k), patterns[k]) for k in board.consistency_keys),
            *(_judge_cells(r) if board.judged else []),
            fmt(r["mcnemar_p_vs_random"], "{:.2g}"), str(r["errors"]),
        ])
    return header, rows


def headline_table(board: Leaderboard, width: int = HEADLINE_WIDTH) -> str:
    """The tables to read in a terminal: model, success per game with its 95% interval, format errors,
    think words per turn and claim accuracy, in lines of at most ``width`` characters. Model names are
    shortened until the games fit; games that still do not fit beside each other go into further tables
    of the same columns, each listing the runs that played at least one of its games."""
    tables, rest = [], list(board.envs)
    while rest:
        for games in range(len(rest), 0, -1):
            table = next((t for label_width in (32, 24, 16, 12)
                          if max(map(len, (t := _headline(board, rest[:games], label_width)).splitlines())) <= width),
                         None)
            if table is not None:
                break
        else:
            raise ValueError(f"no headline table of this leaderboard fits {width} columns")
        tables.append(table)
        rest = rest[games:]
    return "\n\n".join(tables)


def _headline(board: Leaderboard, envs: list[str], label_width: int) -> str:
    header = ["model", *envs, "format err", "think words", "consistency"]
    rows = []
    for r in board.rows:
        if not any(e in r["per_env"] for e in envs):
            continue  # a run of other games (their own table lists it)
        label = f"{r['model']} ({r['backend']})" + ("" if r["complete"] else "*")
        if len(label) > label_width:
            label = "…" + label[1 - label_width:]  # the end of a path or name tells runs apart
        ci = r["per_env_ci95"]
        rows.append([label, *(f"{fmt(r['per_env'].get(e), '{:.2f}')} {fmt(ci.get(e), '[{:.2f},{:.2f}]')}"
                              if r["per_env"].get(e) is not None else "-" for e in envs),
                     fmt(r["format_error_rate"], "{:.3f}"), fmt(r["think_words_per_turn"], "{:.1f}"),
                     fmt(r["consistency"].get("claim_accuracy"), "{:.3f}")])
    return markdown_table(header, rows)


def _judge_cells(row: dict[str, Any]) -> list[str]:
    agreement = row["judge_agreement"] or {}
    judge = row["judge"]["model"] if row["judge"] and row["judge_agreement"] is not None else "-"
    return [judge or "-", *(fmt(agreement.get(k), pattern) for _, k, pattern in JUDGE_COLUMNS)]


_HEADLINE_NOTES = (
    "Ranked by success averaged over the games. Each game column is the success rate with its Wilson 95% "
    "interval; *format err* is the share of turns whose reply broke the answer format; *think words* the mean "
    "words of thought (<think> or the provider's reasoning) per turn; *consistency* the share of the thoughts' "
    "checkable claims that hold (claim_accuracy of docs/consistency.md; - where thoughts make no claims). An "
    "asterisk marks an unfinished run. leaderboard.csv and leaderboard.html hold every column; leaderboard.json "
    "every figure."
)
_NOTES = (
    "Per-env columns are success rates. *success (macro)* averages the envs; *pooled* counts every "
    "episode, with a Wilson 95% interval. *efficiency* is certificate optimum / actions taken, on "
    "successes. *p vs random* is an exact McNemar test against the random baseline on the same levels. "
    "An asterisk after *episodes* marks an unfinished run. The consistency columns come from the rule-based "
    "checks of docs/consistency.md (claims per turn, then ratios); *judge_agreement* is the share of claims "
    "found by both the rules and the run's LLM judge on which their verdicts agree, *judge_kappa* the same "
    "corrected for chance."
)


def write_leaderboard(board: Leaderboard, out_dir: str | os.PathLike[str]) -> dict[str, Path]:
    """Write ``leaderboard.{md,csv,json,html}``, ``success_per_env.png`` and ``success_vs_reasoning.png``."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    header, rows = _table(board)
    paths = {"markdown": out / "leaderboard.md", "csv": out / "leaderboard.csv", "json": out / "leaderboard.json",
             "html": out / "leaderboard.html", "success_plot": out / "success_per_env.png",
             "reasoning_plot": out / "success_vs_reasoning.png"}
    plots = {"success_plot": _success_plot(board), "reasoning_plot": _reasoning_plot(board)}
    for key, png in plots.items():
        paths[key].write_bytes(png)
    paths["markdown"].write_text(
        "# ragen-eval leaderboard\n\n" + headline_table(board) + "\n\n"
        + textwrap.fill(_HEADLINE_NOTES, HEADLINE_WIDTH - 20, break_on_hyphens=False) + "\n\n"
        "![success per game, with 95% intervals](success_per_env.png)\n\n"
        "![success vs reasoning](success_vs_reasoning.png)\n")
    with paths["csv"].open("w", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(header)
        writer.writerows(rows)
    paths["json"].write_text(json.dumps({"envs": board.envs, "rows": board.rows}, indent=2) + "\n")
    paths["html"].write_text(_html(header, rows, plots))
    return paths


def _html(header: list[str], rows: list[list[str]], plots: dict[str, bytes]) -> str:
    head = "".join(f"<th>{html.escape(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in row) + "</tr>" for row in rows)
    images = "".join(f'<img alt="{k}" src="data:image/png;base64,{base64.b64encode(v).decode()}">'
                     for k, v in plots.items())
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>ragen-eval leaderboard</title>
<style>
body {{ font-family: system-ui, sans-serif; margin: 2rem; }}
table {{ border-collapse: collapse; font-size: 0.9rem; }}
th, td {{ border: 1px solid #ccc; padding: 0.3rem 0.6rem; text-align: right; }}
th {{ background: #f0f0f0; }} td:nth-child(2), td:nth-child(3) {{ text-align: left; }}
img {{ max-width: 48%; margin: 1rem 1% 0 0; }}
</style></head><body>
<h1>ragen-eval leaderboard</h1>
<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>
<p>{html.escape(_NOTES).replace("*", "")}</p>
{images}
</body></html>
"""


def _figure_png(fig) -> bytes:
    buffer = io.BytesIO()
    # No Software/date metadata: regenerating identical data gives identical bytes.
    fig.savefig(buffer, format="png", dpi=110, bbox_inches="tight", metadata={"Software": None})
    import matplotlib.pyplot as plt

    plt.close(fig)
    return buffer.getvalue()


def _success_plot(board: Leaderboard) -> bytes:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = [row for row in board.rows if row["success"] is not None]  # runs without episodes have no bars
    fig, ax = plt.subplots(figsize=(max(6, 1.6 * len(board.envs) * max(1, len(rows)) / 2), 4))
    width = 0.8 / max(1, len(rows))
    x = np.arange(len(board.envs))
    for i, row in enumerate(rows):
        rates = [row["per_env"].get(e) for e in board.envs]
        # A game the run did not play, or played no episode of, gets no bar and no interval.
        cis = [row["per_env_ci95"].get(e) if rate is not None else None for e, rate in zip(board.envs, rates)]
        heights = [r if r is not None else 0.0 for r in rates]
        # Nested lists, not an array: matplotlib trips over a (2, 1) array when there is one env.
        err = [[h - c[0] if c else 0.0 for h, c in zip(heights, cis)],
               [c[1] - h if c else 0.0 for h, c in zip(heights, cis)]]
        ax.bar(x + i * width - 0.4 + width / 2, heights, width, yerr=err, capsize=3,
               label=f"{row['model']} ({row['backend']})")
    ax.set_xticks(x, board.envs)
    ax.set_ylim(0, 1.05)
    ax.set_ylabel("success rate (95% Wilson CI)")
    ax.set_title("Success per environment")
    ax.legend(fontsize=8)
    return _figure_png(fig)


def _reasoning_plot(board: Leaderboard) -> bytes:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4))
    for row in (row for row in board.rows if row["success"] is not None):  # a run without episodes has no point
        x = row["think_words_per_turn"] or 0.0
        low, high = row["success_ci95"]
        ax.errorbar([x], [row["success"]], yerr=[[row["success"] - low], [high - row["success"]]], fmt="o", capsize=3)
        ax.annotate(f"{row['model']} ({row['backend']})", (x, row["success"]), textcoords="offset points",
                    xytext=(5, 5), fontsize=8)
    ax.set_xlabel("think words per turn")
    ax.set_ylabel("success rate (pooled, 95% CI)")
    ax.set_ylim(-0.05, 1.05)
    ax.set_title("Success vs reasoning length")
    return _figure_png(fig)
