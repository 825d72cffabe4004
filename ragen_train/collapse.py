"""Collapse alerts: a watched signal dying out, or a gradient norm spiking.

RAGEN's "Echo Trap": under plain StarPO the within-group reward spread shrinks as the policy locks
into one repetitive pattern, then gradient norms spike and the run collapses. The spread falling
first is the early warning. The reply signals of :mod:`ragen_train.signals` can fall earlier still:
the replies' entropy given the prompt (entropy collapse) and their mutual information with the
prompt (template collapse). The monitor reads each step's metrics row and watches any of them.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

#: What an alert calls each signal it can watch.
SIGNAL_NAMES: dict[str, str] = {
    "rollout/in_group_std": "reward spread",
    "rollout/reply_entropy": "reply entropy",
    "rollout/reply_cond_entropy": "reply entropy given the prompt",
    "rollout/reply_mi": "prompt-reply mutual information",
    "losses/grad_norm_actor": "actor grad norm",
    "losses/grad_norm_critic": "critic grad norm",
}


@dataclass
class CollapseMonitor:
    """Feed it each step's metrics row; it returns the alerts that step raises.

    ``drops`` maps a metric to a ratio: alert when the metric's mean over the last ``window``
    recorded values falls below ratio x its mean over the first ``window`` (judged once ``2 x
    window`` values are in, and only when that early level is positive). ``spikes`` maps a metric
    to a factor: alert when a value exceeds factor x the median of the earlier ones (once
    ``window`` earlier values exist). A metric missing from a row, or None there (no update that
    step, a signal not computed that step), is not recorded for that step.
    """

    window: int = 5
    drops: dict[str, float] = field(default_factory=lambda: {"rollout/in_group_std": 0.1})
    spikes: dict[str, float] = field(default_factory=lambda: {"losses/grad_norm_actor": 10.0})
    history: dict[str, list[float]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.window < 1:
            raise ValueError(f"need window >= 1, got {self.window}")
        if any(ratio <= 0 for ratio in self.drops.values()):
            raise ValueError(f"every drop ratio must be > 0, got {self.drops}")
        if any(factor <= 1 for factor in self.spikes.values()):
            raise ValueError(f"every spike factor must be > 1, got {self.spikes}")

    def early_level(self, metric: str) -> float | None:
        """Mean of ``metric``'s first ``window`` recorded values (None until they are seen)."""
        values = self.history.get(metric, [])
        return statistics.fmean(values[:self.window]) if len(values) >= self.window else None

    def update(self, row: Mapping[str, Any]) -> list[str]:
        """Record one step's watched metrics; return its alerts (empty when all is well)."""
        alerts = []
        for metric in {**self.drops, **self.spikes}:
            value = row.get(metric)
            if value is None:
                continue
            values = self.history.setdefault(metric, [])
            earlier = list(values)
            values.append(float(value))
            name = SIGNAL_NAMES.get(metric, metric)
            ratio = self.drops.get(metric)
            early = self.early_level(metric)
            if ratio is not None and early is not None and early > 0 and len(values) >= 2 * self.window:
                current = statistics.fmean(values[-self.window:])
                if current < ratio * early:
                    alerts.append(f"{name} collapsed: {metric} {current:.4g} over the last {self.window} steps "
                                  f"< {ratio} x early level {early:.4g}")
            factor = self.spikes.get(metric)
            if factor is not None and len(earlier) >= self.window:
                median = statistics.median(earlier)
                if median > 0 and value > factor * median:
                    alerts.append(f"grad norm spike: {metric} {value:.4g} > {factor} x median {median:.4g}")
        return alerts

    def state_dict(self) -> dict[str, Any]:
        """History to store in a checkpoint, so a resumed run alerts exactly as an unbroken one."""
        return {"history": {metric: list(values) for metric, values in self.history.items()}}

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Restore :meth:`state_dict`; also reads checkpoints written before the monitor watched
        more than the reward spread and the actor's grad norm (``stds`` and ``grad_norms``)."""
        if "history" in state:
            history = state["history"]
        else:
            history = {"rollout/in_group_std": state["stds"], "losses/grad_norm_actor": state["grad_norms"]}
        self.history = {metric: [float(x) for x in values] for metric, values in history.items()}
