"""A progress line on stderr for long work inside ``ragen_envs`` (certifying level files, exporting levels).

``ragen_envs`` needs numpy and gymnasium only, so this is not tqdm: one line
``certifying 000.txt: 37/200 levels, 4.1 levels/s, ETA 0:40``. Work that ends within ``delay``
seconds prints nothing; longer work is reported from then on every ``interval`` seconds by a
background thread, so a slow item (one hard level) never means silence, and once more at the end.
On a terminal the line is rewritten in place; elsewhere (a log file, a pipe) each report is a line.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable
from typing import TextIO

#: Seconds of work before the first report (shorter work prints nothing).
DELAY_S = 1.0


def format_duration(seconds: float) -> str:
    """``h:mm:ss`` (or ``m:ss`` under an hour) of a non-negative duration, rounded to the second."""
    total = int(round(seconds))
    hours, rest = divmod(total, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


class Progress:
    """Counts ``done`` of ``total`` items of some work and reports them on ``stream`` (default: stderr)
    with their rate and the time left.

    ``delay``: seconds of work before the first report (default :data:`DELAY_S`); ``interval``:
    seconds between reports (default 1 on a terminal, 10 elsewhere); ``clock`` (seconds) is
    replaceable for tests. Use as a context manager, or call :meth:`close` once the work ends.
    """

    def __init__(self, what: str, total: int, unit: str = "levels", *, stream: TextIO | None = None,
                 delay: float | None = None, interval: float | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.what, self.total, self.unit = what, total, unit
        self.done = 0
        self._stream = stream if stream is not None else sys.stderr
        self._tty = bool(getattr(self._stream, "isatty", lambda: False)())
        self._interval = interval if interval is not None else (1.0 if self._tty else 10.0)
        self._clock = clock
        self._start = clock()
        self._shown = False
        self._lock = threading.Lock()
        self._closed = threading.Event()
        self._reporter = threading.Thread(target=self._report, args=(DELAY_S if delay is None else delay,),
                                          name=f"progress: {what}", daemon=True)
        self._reporter.start()

    def line(self) -> str:
        """The current report: ``what: done/total unit, rate unit/s, ETA m:ss`` (rate and ETA once known)."""
        text = f"{self.what}: {self.done:,}/{self.total:,} {self.unit}"
        elapsed = self._clock() - self._start
        if self.done and elapsed > 0:
            rate = self.done / elapsed
            text += f", {rate:,.1f} {self.unit}/s, ETA {format_duration((self.total - self.done) / rate)}"
        return text

    def advance(self, n: int = 1) -> None:
        """Count ``n`` more items done."""
        with self._lock:
            self.done += n

    def close(self) -> None:
        """End the reports; work that was reported gets a last line: items done, time taken, mean rate."""
        if self._closed.is_set():
            return
        self._closed.set()
        self._reporter.join()
        if self._shown:
            elapsed = self._clock() - self._start
            text = f"{self.what}: {self.done:,}/{self.total:,} {self.unit} in {format_duration(elapsed)}"
            if self.done and elapsed > 0:
                text += f", {self.done / elapsed:,.1f} {self.unit}/s"
            self._show(text, final=True)

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _report(self, delay: float) -> None:
        wait = delay
        while not self._closed.wait(wait):
            self._show(self.line())
            wait = self._interval

    def _show(self, text: str, final: bool = False) -> None:
        with self._lock:
            self._shown = True
            if self._tty:
                # \r and clear-to-end-of-line rewrite the one line; the last report ends it.
                self._stream.write("\r" + text + "\033[K" + ("\n" if final else ""))
            else:
                self._stream.write(text + "\n")
            self._stream.flush()
