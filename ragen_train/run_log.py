"""Per-step metrics of a training run: their names, ``metrics.jsonl``, ``metrics.csv`` and ``metrics.png``.

Names come in groups: ``rollout/`` (the step's training episodes, as ``ragen-eval`` summarises a
run, :data:`ragen_eval.metrics.HEADLINE_KEYS`, plus the reward spread, the filter's share and the
reply signals of :mod:`ragen_train.signals`),
``losses/`` (the update), ``time/`` (timings and throughput), ``eval/`` (validation runs, the same
keys as ``rollout/``); ``step`` and ``alerts`` stand alone. Runs written before the groups existed
used flat names; :func:`upgrade_row` renames those wherever a metrics file is read.
"""

from __future__ import annotations

import csv
import json
import math
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ragen_eval.jsonl_store import read_jsonl

#: The per-step metrics of a run directory, one JSON row a line.
METRICS_FILE = "metrics.jsonl"
#: Panels of metrics.png: (title, metric keys drawn in it).
PLOT_PANELS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("success", ("rollout/success_rate", "eval/success_rate")),
    ("reward", ("rollout/mean_reward", "rollout/reward_std", "rollout/in_group_std", "rollout/reasoning_reward")),
    ("kept fraction", ("rollout/kept_fraction",)),
    ("entropy", ("losses/entropy",)),
    ("reply information", ("rollout/reply_entropy", "rollout/reply_cond_entropy", "rollout/reply_mi")),
    ("grad norm", ("losses/grad_norm_actor", "losses/grad_norm_critic")),
    ("clip fraction", ("losses/clip_fraction",)),
    ("approx KL", ("losses/approx_kl", "losses/kl_ref")),
    ("value loss", ("losses/value_loss",)),
    ("lengths", ("rollout/think_words_per_turn", "rollout/completion_tokens_per_turn")),
    ("format errors", ("rollout/format_error_rate",)),
    ("thought-state consistency", ("rollout/claim_accuracy", "rollout/hallucination_rate",
                                   "rollout/plan_answer_agreement")),
)

#: Flat names of runs written before metric groups, and the name each has now. Where more than the
#: group changes, the old number was the trainer's own count of the same thing (the one difference:
#: ``response_tokens`` left out the empty turns played after a sequence overflowed, which
#: ``completion_tokens_per_turn`` counts as 0 tokens), so an old run's curves go on under the new names.
LEGACY_NAMES: dict[str, str] = {
    "success": "rollout/success_rate",
    "reward_mean": "rollout/mean_reward",
    "think_words": "rollout/think_words_per_turn",
    "response_tokens": "rollout/completion_tokens_per_turn",
    "turns": "rollout/mean_turns",
    **{name: f"rollout/{name}" for name in (
        "reward_std", "in_group_std", "format_error_rate", "overflowed", "claim_accuracy", "hallucination_rate",
        "plan_answer_agreement", "kept_fraction", "hard_states_rescued")},
    **{name: f"losses/{name}" for name in (
        "policy_loss", "value_loss", "entropy", "clip_fraction", "clip_fraction_high", "approx_kl", "kl_ref",
        "grad_norm_actor", "grad_norm_critic", "optimizer_steps")},
    **{name: f"time/{name}" for name in (
        "rollout_s", "update_s", "step_cpu_s", "rollout_tokens_per_s", "update_tokens_per_s", "weight_sync_s")},
    "eval/success": "eval/success_rate",
    "eval/reward_mean": "eval/mean_reward",
}


def metric_group(group: str, values: Mapping[str, Any]) -> dict[str, Any]:
    """``values`` with every key put in ``group`` (``rollout``, ``losses``, ``time``, ``eval``)."""
    return {f"{group}/{key}": value for key, value in values.items()}


def upgrade_row(row: Mapping[str, Any]) -> dict[str, Any]:
    """A metrics row (from ``metrics.jsonl`` or ``metrics.csv``) with :data:`LEGACY_NAMES` renamed;
    a row that already uses groups comes back equal."""
    return {LEGACY_NAMES.get(key, key): value for key, value in row.items()}


class MetricsLog:
    """Appends one row per step to JSONL and CSV; on resume from step s, drops the rows after s (they are redone).

    A half-written last line (the process died mid-write) is dropped. Steps up to s that have no row
    are listed in :attr:`missing_steps` and reported on stderr: the run goes on, but its curves
    have a gap there.
    """

    def __init__(self, run_dir: str | Path, start_step: int = 0) -> None:
        self.run_dir = Path(run_dir)
        self.jsonl = self.run_dir / METRICS_FILE
        self.csv = self.run_dir / "metrics.csv"
        by_step = {r["step"]: r for r in read_metrics(self.jsonl) if r["step"] <= start_step}  # last row wins
        self.rows = [by_step[s] for s in sorted(by_step)]
        self.missing_steps = [s for s in range(1, start_step + 1) if s not in by_step]
        if self.missing_steps:
            print(f"warning: {self.jsonl} has no rows for steps {_spans(self.missing_steps)} of the {start_step} "
                  "already trained; those steps stay missing from the metrics", file=sys.stderr, flush=True)
        self._rewrite()

    def log(self, row: dict[str, Any]) -> None:
        """Append one step's metrics (must hold ``step``)."""
        if "step" not in row:
            raise ValueError("a metrics row needs a 'step'")
        self.rows.append(row)
        with self.jsonl.open("a") as f:
            f.write(json.dumps(row) + "\n")
        self._write_csv()

    def _rewrite(self) -> None:
        self.jsonl.write_text("".join(json.dumps(r) + "\n" for r in self.rows))
        self._write_csv()

    def _write_csv(self) -> None:
        keys: list[str] = []
        for row in self.rows:
            keys.extend(k for k in row if k not in keys)
        with self.csv.open("w", newline="") as f:
            writer = csv.DictWriter(f, fieldnames=keys)
            writer.writeheader()
            writer.writerows(self.rows)


def read_metrics(path: str | Path) -> list[dict[str, Any]]:
    """Rows of a ``metrics.jsonl`` (empty if it does not exist), old flat names renamed (:func:`upgrade_row`).

    The file is read as every append-only JSONL file is (:func:`ragen_eval.jsonl_store.read_jsonl`): a torn
    last line is an interrupted write and is left out; any other line that is not a JSON object is a
    ``ValueError`` worded as ``ragen-eval`` words it, and so is a row without an integer ``step``.
    """
    rows = read_jsonl(path)
    for number, row in enumerate(rows, 1):
        if not isinstance(row.get("step"), int):
            raise ValueError(f"{path}, row {number}: a metrics row must have an integer 'step'")
    return [upgrade_row(row) for row in rows]


def _spans(steps: Sequence[int]) -> str:
    """``[1, 2, 3, 7]`` -> ``"1-3, 7"``."""
    spans: list[list[int]] = []
    for s in steps:
        if spans and s == spans[-1][1] + 1:
            spans[-1][1] = s
        else:
            spans.append([s, s])
    return ", ".join(str(a) if a == b else f"{a}-{b}" for a, b in spans)


def plot_metrics(rows: Sequence[dict[str, Any]], out: str | Path, title: str = "") -> Path:
    """Draw the :data:`PLOT_PANELS` of ``rows`` against step into a PNG."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    cols = 5
    panels = len(PLOT_PANELS)
    fig, axes = plt.subplots(math.ceil(panels / cols), cols, figsize=(4 * cols, 3 * math.ceil(panels / cols)))
    for ax, (name, keys) in zip(axes.flat, PLOT_PANELS):
        for key in keys:
            points = [(r["step"], r[key]) for r in rows if r.get(key) is not None]
            if points:
                ax.plot(*zip(*points), marker="." if len(points) < 30 else None, label=key)
        ax.set_title(name)
        ax.set_xlabel("step")
        if len(keys) > 1 and ax.get_lines():
            ax.legend(fontsize=7)
    for ax in list(axes.flat)[panels:]:
        ax.axis("off")
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    out = Path(out)
    fig.savefig(out, dpi=80)
    plt.close(fig)
    return out
