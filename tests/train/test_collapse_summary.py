"""experiments/baselines/collapse_summary.py: the learned-then-lost rule on real run files."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from tests.script_modules import load_script

SCRIPT = Path(__file__).resolve().parents[2] / "experiments" / "baselines" / "collapse_summary.py"


@pytest.fixture(scope="module")
def summary():
    return load_script(SCRIPT)


def _run(tmp_path: Path, name: str, success: list[float], alerts: dict[int, str] | None = None) -> Path:
    run = tmp_path / name
    run.mkdir()
    (run / "config.yaml").write_text(f"preset: starpo\nseed: {len(name)}\n")
    with open(run / "metrics.csv", "w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=["step", "success", "alerts", "eval/success"])
        writer.writeheader()
        for i, s in enumerate(success, start=1):
            writer.writerow({"step": i, "success": s, "alerts": (alerts or {}).get(i, ""),
                             "eval/success": s if i % 10 == 0 else ""})
    return run


def test_learned_then_lost_is_a_collapse_and_never_learning_is_not(summary, tmp_path):
    lost = summary.summarize(_run(tmp_path, "lost", [0.5] * 5 + [0.9] * 10 + [0.0] * 15, {27: "spread"}), 0.8, 0.5)
    assert lost["collapsed"] and lost["first_alert_step"] == 27
    assert lost["best_5_step_success"] == pytest.approx(0.9) and lost["last_10_success"] == 0.0
    assert lost["final_val_success"] == 0.0  # the validation value of step 30
    flat = summary.summarize(_run(tmp_path, "flat", [0.2] * 30), 0.8, 0.5)
    assert not flat["collapsed"] and flat["first_alert_step"] is None  # never reached the peak
    kept = summary.summarize(_run(tmp_path, "kept", [0.5] * 5 + [0.9] * 25), 0.8, 0.5)
    assert not kept["collapsed"]
    # a single good step is not "reached the peak": the 5-step mean is what counts
    spike = summary.summarize(_run(tmp_path, "spike", [0.1] * 10 + [1.0] + [0.1] * 19), 0.8, 0.5)
    assert spike["best_5_step_success"] == pytest.approx(0.28) and not spike["collapsed"]


def test_table_and_plot_from_the_cli(summary, tmp_path, capsys):
    runs = [_run(tmp_path, "a", [0.9] * 20 + [0.0] * 10), _run(tmp_path, "bb", [0.9] * 30)]
    assert summary.main([*map(str, runs), "--plot", str(tmp_path / "curves.png")]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[2].endswith("| yes |") and lines[3].endswith("| no |")
    assert (tmp_path / "curves.png").stat().st_size > 0


def test_bad_inputs_are_named(summary, tmp_path):
    with pytest.raises(FileNotFoundError, match="not a ragen-train run directory"):
        summary.summarize(tmp_path, 0.8, 0.5)
    with pytest.raises(ValueError, match="at least 10"):
        summary.summarize(_run(tmp_path, "short", [0.5] * 4), 0.8, 0.5)
    with pytest.raises(SystemExit):
        summary.main([str(tmp_path), "--peak", "0.3", "--floor", "0.5"])


def test_a_compact_copy_gives_the_same_table_and_names_no_machine_path(summary, tmp_path):
    run = _run(tmp_path, "lost", [0.5] * 5 + [0.9] * 10 + [0.0] * 15, {27: "spread"})
    (run / "config.yaml").write_text("preset: starpo\nseed: 3\nenv: bandit\n"
                                     "model: /home/someone/ragen/runs/sft/bandit\noutput_dir: /tmp/x/runs/collapse\n")
    copy = summary.export(run, tmp_path / "compact")
    assert copy == tmp_path / "compact" / "lost"
    original, again = summary.summarize(run, 0.8, 0.5), summary.summarize(copy, 0.8, 0.5)
    assert {k: v for k, v in again.items() if k != "run"} == {k: v for k, v in original.items() if k != "run"}
    config = (copy / "config.yaml").read_text()
    assert "model: runs/sft/bandit" in config and "output_dir: runs/collapse" in config and "/home" not in config
    with open(copy / "metrics.csv", newline="") as handle:
        assert next(csv.reader(handle)) == list(summary.EXPORT_COLUMNS)  # old flat names came out grouped
