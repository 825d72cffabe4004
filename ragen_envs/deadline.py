"""Cooperative deadlines: level generation and solving stop once their caller's time is spent.

A thread cannot be stopped from outside, so a server that must bound the work of one request gives it
a budget instead: ``with time_limit(10.0): TextEpisode(...)``. The long loops of the package (Sokoban
generation, its reverse search and solver, FrozenLake generation) call :func:`check_deadline` as they
go, which raises :class:`DeadlineExceeded` once the budget is spent; the work unwinds and its memory is
freed. Outside a ``time_limit`` block :func:`check_deadline` does nothing. The deadline is held in a
context variable, so every thread (every request of a threading server) has its own.
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

_deadline: ContextVar[tuple[float, float] | None] = ContextVar("ragen_envs_deadline", default=None)


class DeadlineExceeded(TimeoutError):
    """The work ran past the budget of the enclosing :func:`time_limit`; ``seconds`` is that budget."""

    def __init__(self, seconds: float) -> None:
        super().__init__(f"the work took more than its budget of {seconds:g}s and was stopped")
        self.seconds = seconds


@contextmanager
def time_limit(seconds: float) -> Iterator[None]:
    """Run the block under a budget of ``seconds``; nested blocks keep the earlier of the two deadlines."""
    if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or not math.isfinite(seconds) \
            or seconds <= 0:
        raise ValueError(f"time_limit needs a positive, finite number of seconds, got {seconds!r}")
    now = time.monotonic()
    outer = _deadline.get()
    limit = (now + seconds, float(seconds))
    token = _deadline.set(limit if outer is None or limit[0] < outer[0] else outer)
    try:
        yield
    finally:
        _deadline.reset(token)


def check_deadline() -> None:
    """Raise :class:`DeadlineExceeded` when the enclosing :func:`time_limit`'s budget is spent."""
    limit = _deadline.get()
    if limit is not None and time.monotonic() > limit[0]:
        raise DeadlineExceeded(limit[1])
