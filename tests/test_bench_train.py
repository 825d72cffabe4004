"""``benchmarks/bench_train.py``: the interleaved A/B protocol of the ragen-train vs TRL benchmark."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.script_modules import load_script

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "bench_train.py"


@pytest.fixture(scope="module")
def bench():
    """The benchmark script as a module (``benchmarks/`` is not a package)."""
    return load_script(SCRIPT)


@pytest.mark.parametrize(("args", "message"), [
    (["--pairs", "0"], "--pairs must be >= 1"),
    (["--pairs", "-3"], "--pairs must be >= 1"),
    (["--steps", "1"], "--steps must be >= 2"),
    (["--threads", "0"], "--threads must be >= 1"),
    (["--trl-python", "/nonexistent/python"], "trl does not import"),
])
def test_refuses_bad_arguments(bench, capsys, args, message):
    with pytest.raises(SystemExit) as exit_info:
        bench.main(args)
    assert exit_info.value.code == 2
    assert message in capsys.readouterr().err


def test_pairs_alternate_which_side_goes_first(bench):
    assert [bench.side_order(i) for i in range(4)] == [("ours", "trl"), ("trl", "ours")] * 2


def test_summary_is_median_and_range_of_per_pair_ratios(bench):
    pairs = [{"ratio_wall": w, "ratio_cpu": c} for w, c in [(2.0, 1.0), (0.5, 3.0), (1.5, 2.5)]]
    assert bench.summarise(pairs) == {"ratio_wall": {"median": 1.5, "min": 0.5, "max": 2.0},
                                      "ratio_cpu": {"median": 2.5, "min": 1.0, "max": 3.0}}


@pytest.mark.slow
@pytest.mark.train
def test_two_pairs_end_to_end(bench, tmp_path, capsys):
    pytest.importorskip("trl")
    out = tmp_path / "train.json"
    assert bench.main(["--pairs", "2", "--steps", "2", "--groups", "1", "--size", "2", "--new-tokens", "4",
                       "--threads", "1", "--json", str(out)]) == 0
    report = json.loads(out.read_text())
    assert [p["first"] for p in report["pairs"]] == ["ours", "trl"]
    for pair in report["pairs"]:
        # Both sides ran with the thread count they were given, one timed step each (warm-up dropped).
        assert pair["ours"]["threads"] == pair["trl"]["threads"] == 1
        assert pair["ours"]["steps_timed"] == pair["trl"]["steps_timed"] == 1
        assert pair["ratio_wall"] == pytest.approx(pair["trl"]["step_s"] / pair["ours"]["step_s"], rel=0.02)
        assert pair["ratio_cpu"] == pytest.approx(pair["trl"]["step_cpu_s"] / pair["ours"]["step_cpu_s"], rel=0.02)
    walls = [p["ratio_wall"] for p in report["pairs"]]
    assert report["ratio_wall"]["min"] == min(walls) and report["ratio_wall"]["max"] == max(walls)
    assert set(report["versions"]["trl"]) >= {"torch", "transformers", "trl"}
    assert len(report["load_average_before"]) == len(report["load_average_after"]) == 3
    assert "median" in capsys.readouterr().out
