"""Collapse alerts: the reward spread dying out, or the gradient norm spiking.

RAGEN's "Echo Trap": under plain StarPO the within-group reward spread shrinks as the policy locks
into one repetitive pattern, then gradient norms spike and the run collapses. The spread falling
first is the early warning, so both are watched.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field
from typing import Any


@dataclass
class CollapseMonitor:
    """Feed it one step's in-group reward std and grad norm; it returns the alerts that step raises."""

    window: int = 5  # steps averaged for the early level and the current level
    std_ratio: float = 0.1  # alert when the current spread < std_ratio * early spread
    grad_spike: float = 10.0  # alert when a grad norm > grad_spike * median of the earlier ones
    stds: list[float] = field(default_factory=list)
    grad_norms: list[float] = field(default_factory=list)

    def __post_init__(self) -> None:
        if self.window < 1 or self.std_ratio <= 0 or self.grad_spike <= 1:
            raise ValueError(f"need window >= 1, std_ratio > 0, grad_spike > 1; got {self.window}, "
                             f"{self.std_ratio}, {self.grad_spike}")

    @property
    def early_std(self) -> float | None:
        """Mean in-group std over the first ``window`` steps (None until they are seen)."""
        return statistics.fmean(self.stds[:self.window]) if len(self.stds) >= self.window else None

    def update(self, in_group_std: float, grad_norm: float | None) -> list[str]:
        """Record one step; return its alerts (empty when all is well). ``grad_norm`` is None for a
        step without an update (the filter dropped every group)."""
        alerts = []
        earlier = list(self.grad_norms)
        self.stds.append(float(in_group_std))
        if grad_norm is not None:
            self.grad_norms.append(float(grad_norm))
        early = self.early_std
        if early is not None and len(self.stds) >= 2 * self.window and early > 0:
            current = statistics.fmean(self.stds[-self.window:])
            if current < self.std_ratio * early:
                alerts.append(f"reward spread collapsed: in-group std {current:.4g} over the last {self.window} "
                              f"steps < {self.std_ratio} x early level {early:.4g}")
        if grad_norm is not None and len(earlier) >= self.window:
            median = statistics.median(earlier)
            if median > 0 and grad_norm > self.grad_spike * median:
                alerts.append(f"grad norm spike: {grad_norm:.4g} > {self.grad_spike} x median {median:.4g}")
        return alerts

    def state_dict(self) -> dict[str, Any]:
        """History to store in a checkpoint, so a resumed run alerts exactly as an unbroken one."""
        return {"stds": list(self.stds), "grad_norms": list(self.grad_norms)}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore :meth:`state_dict`."""
        self.stds = [float(x) for x in state["stds"]]
        self.grad_norms = [float(x) for x in state["grad_norms"]]
