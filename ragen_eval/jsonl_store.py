"""The one append-only JSONL store: exclusive lock, torn-tail repair, keyed ``done``, flushed appends.

Run directories (``episodes.jsonl``), judge files (``judge.jsonl``) and ``ragen-train`` run
directories all keep their records this way:

- :class:`ExclusiveLock`: a non-blocking ``flock`` on a lock file; the OS drops it when the holder
  dies, even by SIGKILL, so a stale lock never needs clearing by hand.
- A record is one JSON line, written in a single call and flushed, so a killed writer leaves at
  most one torn last line: bytes without a newline, or a line that does not parse. Reading drops
  it; opening a :class:`JsonlStore` cuts it off the file (and says so on stderr), so the record is
  simply produced again.
- Every record has a key; :attr:`JsonlStore.done` maps the keys already stored to their records,
  which is how a rerun skips finished work and how a second append of one key is refused.
"""

from __future__ import annotations

import fcntl
import json
import os
import sys
from collections.abc import Callable, Hashable, Iterable
from pathlib import Path
from typing import IO, Any


class LockBusyError(RuntimeError):
    """Another process holds the lock."""


class ExclusiveLock:
    """An exclusive, non-blocking ``flock`` on ``path``, held from :meth:`acquire` to :meth:`release`."""

    def __init__(self, path: str | os.PathLike[str], busy_message: str):
        self.path = Path(path)
        self.busy_message = busy_message
        self._handle: IO[str] | None = None

    def acquire(self) -> None:
        """Take the lock (creating the lock file's folder); raise :class:`LockBusyError` if it is held."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        handle = self.path.open("w")
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.close()
            raise LockBusyError(self.busy_message) from None
        self._handle = handle

    def release(self) -> None:
        """Drop the lock if held (safe to call twice)."""
        if self._handle is not None:
            fcntl.flock(self._handle, fcntl.LOCK_UN)
            self._handle.close()
            self._handle = None

    def __enter__(self) -> ExclusiveLock:
        self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


def jsonl_line(record: dict[str, Any]) -> bytes:
    """One JSON line as ASCII bytes, newline included, ready to append in a single write."""
    # ensure_ascii keeps the file valid UTF-8 even when a model emits lone surrogates.
    return (json.dumps(record, ensure_ascii=True, allow_nan=False) + "\n").encode("ascii")


def _parse(line: bytes) -> Any:
    try:
        return json.loads(line)
    except (json.JSONDecodeError, UnicodeDecodeError):
        return None


def _scan(data: bytes, path: Path) -> tuple[list[dict[str, Any]], int]:
    """The records of a JSONL file's bytes and the length of its intact prefix (where a torn tail starts).

    Only the last line may be torn; a line before it that is not a JSON object is corruption, and an error.
    """
    lines = data.split(b"\n")
    last = max((i for i, line in enumerate(lines) if line.strip()), default=-1)
    records: list[dict[str, Any]] = []
    offset = 0
    for i, line in enumerate(lines):
        complete = i < len(lines) - 1  # followed by a newline
        if line.strip():
            record = _parse(line) if complete else None
            if not isinstance(record, dict):
                if i == last:
                    return records, offset
                raise ValueError(f"{path}, line {i + 1}: not a JSON record; only a torn last line is repaired")
            records.append(record)
        if complete:
            offset += len(line) + 1
    return records, offset


def read_jsonl(path: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """Every intact record of a JSONL file (none if it does not exist); a torn last line is left out."""
    path = Path(path)
    if not path.exists():
        return []
    return _scan(path.read_bytes(), path)[0]


def rewrite_jsonl(path: str | os.PathLike[str], records: Iterable[dict[str, Any]]) -> None:
    """Replace a JSONL file with ``records`` atomically (write a temporary file, fsync, rename)."""
    path = Path(path)
    tmp = path.with_name(path.name + ".tmp")
    with tmp.open("wb") as fh:
        for record in records:
            fh.write(jsonl_line(record))
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)


class JsonlStore:
    """An open append-only JSONL file of keyed records; open it while holding its directory's lock.

    :meth:`open` cuts a torn tail, keeps the stored records that ``keep`` accepts (the first of
    each key), rewrites the file when it dropped any, and opens it for appending.
    """

    def __init__(self, path: str | os.PathLike[str], key: Callable[[dict[str, Any]], Hashable]):
        self.path = Path(path)
        self.key = key
        self.done: dict[Hashable, dict[str, Any]] = {}
        self._fh: IO[bytes] | None = None

    def open(self, keep: Callable[[dict[str, Any]], bool] = lambda record: True) -> None:
        """Repair, load and filter the stored records; get ready to append."""
        data = self.path.read_bytes() if self.path.exists() else b""
        records, intact = _scan(data, self.path)
        if intact != len(data):
            with self.path.open("rb+") as fh:
                fh.truncate(intact)
            print(f"note: dropped a torn last line ({len(data) - intact} bytes) of {self.path}; its record "
                  "is produced again", file=sys.stderr)
        self.done = {}
        for record in records:
            if keep(record):
                self.done.setdefault(self.key(record), record)
        if len(self.done) != len(records):
            rewrite_jsonl(self.path, self.done.values())
        self._fh = self.path.open("ab")

    def append(self, record: dict[str, Any]) -> None:
        """Write one record as a single flushed line; a key already stored is a ``ValueError``."""
        if self._fh is None:
            raise RuntimeError(f"{self.path} is not open")
        key = self.key(record)
        if key in self.done:
            raise ValueError(f"{key} is already recorded in {self.path}")
        self._fh.write(jsonl_line(record))
        self._fh.flush()
        self.done[key] = record

    def close(self) -> None:
        """Close the file (safe to call twice)."""
        if self._fh is not None:
            self._fh.close()
            self._fh = None

    def __enter__(self) -> JsonlStore:
        self.open()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
