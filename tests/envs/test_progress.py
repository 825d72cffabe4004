"""The stderr progress line of long ragen_envs work: rate and time left from the clock, silence for
short work, reports during a slow item."""

from __future__ import annotations

import io
import time

from ragen_envs.progress import Progress, format_duration


class _Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_the_line_gives_done_rate_and_time_left_from_the_clock():
    clock, out = _Clock(), io.StringIO()
    with Progress("certifying set.txt", 10, "levels", stream=out, delay=3600, clock=clock) as bar:
        assert bar.line() == "certifying set.txt: 0/10 levels"
        clock.now += 4.0
        bar.advance(2)
        # 2 levels in 4 s: 0.5 levels/s, so the 8 left take 16 s.
        assert bar.line() == "certifying set.txt: 2/10 levels, 0.5 levels/s, ETA 0:16"
        clock.now += 1.0
        bar.advance(8)
    assert out.getvalue() == ""  # it ended before the delay: nothing was reported
    assert format_duration(16) == "0:16" and format_duration(59.6) == "1:00" and format_duration(3725) == "1:02:05"


def test_a_slow_first_item_is_reported_while_it_runs_and_the_end_once():
    out = io.StringIO()
    with Progress("exporting boxoban", 3, "levels", stream=out, delay=0.0, interval=0.05) as bar:
        time.sleep(0.3)  # the first item is slow: reports come anyway
        assert out.getvalue().startswith("exporting boxoban: 0/3 levels\n")
        bar.advance(3)
    lines = out.getvalue().splitlines()
    assert len(lines) >= 3 and lines[-1].startswith("exporting boxoban: 3/3 levels in 0:00, ")
    assert lines[-1].endswith(" levels/s")
