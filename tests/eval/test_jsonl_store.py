"""The one JSONL store: torn tails repaired, keyed resume, exclusive lock across real processes."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from ragen_eval.jsonl_store import ExclusiveLock, JsonlStore, LockBusyError, read_jsonl

# JSON values as a model's replies make them: any text (lone surrogates included), numbers, nesting.
_scalars = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text()
_values = st.recursive(_scalars, lambda inner: st.lists(inner, max_size=3)
                       | st.dictionaries(st.text(max_size=5), inner, max_size=3), max_leaves=8)
_bodies = st.lists(st.dictionaries(st.text(max_size=8).filter(lambda k: k != "k"), _values, max_size=4), max_size=6)


def _key(record: dict) -> int:
    return record["k"]


def _expected_bytes(records: list[dict]) -> bytes:
    """The file a clean run writes, computed here independently of the store."""
    return "".join(json.dumps(r, ensure_ascii=True) + "\n" for r in records).encode("ascii")


def _write(path: Path, records: list[dict]) -> None:
    with JsonlStore(path, _key) as store:
        for record in records:
            store.append(record)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(bodies=_bodies, cut=st.floats(min_value=0.0, max_value=1.0, exclude_max=True), newline=st.booleans())
def test_a_torn_copy_of_the_next_record_is_cut_and_the_rest_kept(tmp_path_factory, bodies, cut, newline):
    path = tmp_path_factory.mktemp("store") / "records.jsonl"
    records = [{"k": i, **body} for i, body in enumerate(bodies)]
    _write(path, records[:-1])
    if records:  # what a writer killed mid-line leaves: a prefix of the last record's line
        line = json.dumps(records[-1], ensure_ascii=True).encode("ascii")
        torn = line[: int(cut * len(line))]
        assume(torn.strip())
        with path.open("ab") as fh:
            fh.write(torn + (b"\n" if newline else b""))
    assert read_jsonl(path) == records[:-1]  # reading alone leaves the tail out
    with JsonlStore(path, _key) as store:
        assert list(store.done.values()) == records[:-1]
        assert path.read_bytes() == _expected_bytes(records[:-1])
        if records:
            store.append(records[-1])  # produced again, on a fresh line
    assert path.read_bytes() == _expected_bytes(records)
    assert read_jsonl(path) == records


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(tail=st.binary(min_size=1, max_size=40), newline=st.booleans())
def test_a_tail_of_random_bytes_is_dropped_and_reported(tmp_path_factory, capsys, tail, newline):
    assume(b"\n" not in tail and tail.strip())
    try:
        parsed = json.loads(tail)
    except ValueError:
        parsed = None
    assume(not (newline and isinstance(parsed, dict)))  # a whole JSON object on its own line is a record
    path = tmp_path_factory.mktemp("store") / "records.jsonl"
    records = [{"k": 0, "text": "first"}, {"k": 1, "text": "second"}]
    _write(path, records)
    with path.open("ab") as fh:
        fh.write(tail + (b"\n" if newline else b""))
    capsys.readouterr()
    with JsonlStore(path, _key) as store:
        assert store.done == {0: records[0], 1: records[1]}
    assert path.read_bytes() == _expected_bytes(records)
    assert f"dropped a torn last line ({len(tail) + newline} bytes) of {path}" in capsys.readouterr().err


def test_a_bad_line_before_the_last_is_corruption_not_a_torn_tail(tmp_path):
    path = tmp_path / "records.jsonl"
    path.write_bytes(b'{"k": 0}\nnot json\n{"k": 2}\n')
    with pytest.raises(ValueError, match=r"records\.jsonl, line 2: not a JSON record"):
        JsonlStore(path, _key).open()
    assert path.read_bytes() == b'{"k": 0}\nnot json\n{"k": 2}\n'  # nothing was cut


def test_resume_skips_done_keys_and_refuses_a_second_copy(tmp_path):
    path = tmp_path / "records.jsonl"
    _write(path, [{"k": 0, "ok": True}, {"k": 1, "ok": False}, {"k": 2, "ok": True}])
    with JsonlStore(path, _key) as store:
        assert sorted(store.done) == [0, 1, 2]
        assert [k for k in range(5) if k not in store.done] == [3, 4]  # what a rerun still has to do
        with pytest.raises(ValueError, match="already recorded"):
            store.append({"k": 1, "ok": True})
    # A record the owner no longer wants (e.g. an error to retry) is dropped from the file on open.
    store = JsonlStore(path, _key)
    store.open(keep=lambda r: r["ok"])
    store.append({"k": 1, "ok": True})
    store.close()
    assert [r["k"] for r in read_jsonl(path)] == [0, 2, 1]


_HOLDER = textwrap.dedent("""
    import sys, time
    from ragen_eval.jsonl_store import ExclusiveLock
    lock = ExclusiveLock(sys.argv[1], "busy")
    lock.acquire()
    print("locked", flush=True)
    time.sleep(60)
""")

_WRITER = textwrap.dedent("""
    import sys
    from ragen_eval.jsonl_store import ExclusiveLock, JsonlStore
    with ExclusiveLock(sys.argv[1] + ".lock", "busy"), JsonlStore(sys.argv[1], lambda r: r["k"]) as store:
        print(len(store.done), flush=True)
        for k in range(100_000):
            if k not in store.done:
                store.append({"k": k, "pad": "x" * 5000})
""")


def _spawn(script: str, arg: Path) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", script, str(arg)], stdout=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])})


def test_a_second_process_is_locked_out_until_the_holder_dies(tmp_path):
    lock_path = tmp_path / "run" / ".lock"
    holder = _spawn(_HOLDER, lock_path)
    try:
        assert holder.stdout.readline().strip() == "locked"
        with pytest.raises(LockBusyError, match="^run is busy$"):
            ExclusiveLock(lock_path, "run is busy").acquire()
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait()
    with ExclusiveLock(lock_path, "run is busy"):  # the OS released the dead holder's lock
        pass


def test_a_writer_killed_mid_stream_resumes_to_every_key_once(tmp_path):
    path = tmp_path / "records.jsonl"
    writer = _spawn(_WRITER, path)
    assert writer.stdout.readline().strip() == "0"
    deadline = time.monotonic() + 30
    while (not path.exists() or path.stat().st_size < 200_000) and time.monotonic() < deadline:
        time.sleep(0.01)
    writer.send_signal(signal.SIGKILL)
    writer.wait()
    kept = read_jsonl(path)
    assert [r["k"] for r in kept] == list(range(len(kept))) and len(kept) >= 30
    with JsonlStore(path, _key) as store:  # the resumed run: what the killed one finished counts as done
        assert sorted(store.done) == list(range(len(kept)))
        for k in range(len(kept), len(kept) + 5):
            store.append({"k": k, "pad": "y"})
    assert [r["k"] for r in read_jsonl(path)] == list(range(len(kept) + 5))
    assert path.read_bytes().endswith(b'"pad": "y"}\n')
