"""What one invocation of the runner or the judge did: counts and timings for the command line.

Neither is stored in a run directory, whose ``summary.json`` depends only on its episodes.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class JudgeStats:
    """What one judging pass did (for the command line; not stored)."""

    episodes: int = 0
    turns: int = 0
    errors: int = 0
    wall_seconds: float = 0.0
    first_error: str | None = None


@dataclass
class RunStats:
    """Throughput of one invocation (not stored in summary.json, which depends only on episodes)."""

    episodes: int = 0
    turns: int = 0
    errors: int = 0
    wall_seconds: float = 0.0
    cpu_seconds: float = 0.0
    judge: JudgeStats | None = None  # the judging pass that followed, if any

    @property
    def turns_per_second(self) -> float:
        """Turns finished per wall-clock second."""
        return self.turns / self.wall_seconds if self.wall_seconds > 0 else 0.0
