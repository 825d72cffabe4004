"""experiments/baselines/run_baselines.py: the docs' table and curves come from committed compact copies."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from tests.script_modules import REPO, load_script


@pytest.fixture()
def baselines(monkeypatch, tmp_path):
    module = load_script("experiments/baselines/run_baselines.py")
    monkeypatch.setattr(module, "DOCS", tmp_path / "docs")
    monkeypatch.setattr(module, "COMPACT", tmp_path / "docs" / "starpo")
    return module


def _eval(out: Path, name: str, success: float) -> dict:
    return {"command": f"ragen-eval evaluate --model {out}/bandit/{name} --out {out}/bandit/eval", "episodes": 128,
            "success": success, "reward": success, "format_error_rate": 0.0}


def _fake_run(out: Path, preset: str, seconds: float, alert_step: int | None) -> None:
    run = out / "bandit" / "rl" / preset
    run.mkdir(parents=True)
    (run / "config.yaml").write_text(f"preset: {preset}\nmodel: {out}/bandit/format-sft\n")
    with open(run / "metrics.csv", "w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=["step", "rollout/success_rate", "alerts", "time/rollout_s",
                                                    "time/update_s", "losses/unexported"])
        writer.writeheader()
        for step in range(1, 5):
            writer.writerow({"step": step, "rollout/success_rate": step / 4, "time/rollout_s": seconds,
                             "time/update_s": 1.0, "alerts": "spread fell" if step == alert_step else "",
                             "losses/unexported": 7})


def test_docs_come_from_the_compact_copy_and_name_no_machine_path(baselines, tmp_path):
    out = tmp_path / "machine" / "runs" / "baselines"
    _fake_run(out, "starpo", 3.0, alert_step=3)
    _fake_run(out, "starpo-s", 1.0, alert_step=None)
    results = {"bandit": {"spec": {"env": "bandit"}, "models": {
        name: {"path": str(out / "bandit" / name), "t0.5": _eval(out, name, s), "t1.0": _eval(out, name, s / 2)}
        for name, s in (("format-sft", 0.5), ("+starpo", 0.25), ("+starpo-s", 1.0), ("oracle-sft", 1.0))}}}
    baselines.export_compact(results, out)
    compact = tmp_path / "docs" / "starpo"
    committed = (compact / "results.json").read_text()
    assert str(tmp_path) not in committed and "--model runs/baselines/bandit/+starpo" in committed
    assert "machine" not in (compact / "bandit" / "starpo" / "config.yaml").read_text()
    with open(compact / "bandit" / "starpo" / "metrics.csv", newline="") as handle:
        assert "losses/unexported" not in next(csv.reader(handle))

    baselines.write_docs(json.loads(committed), compact)
    table = (tmp_path / "docs" / "results.md").read_text()
    assert "| bandit | +starpo | 128 | 0.250 | 0.125 | 0.000 | 0.000 |" in table
    assert "- bandit starpo: 3; first: spread fell" in table and "- bandit starpo-s: none" in table
    assert "- bandit starpo: 4.0 s over 4 steps" in table and "- bandit starpo-s: 2.0 s over 4 steps" in table
    assert (tmp_path / "docs" / "bandit_curves.png").stat().st_size > 0

    (tmp_path / "docs" / "results.md").unlink()
    assert baselines.main(["--from-docs"]) == 0
    assert (tmp_path / "docs" / "results.md").read_text() == table


def test_from_docs_without_a_compact_copy_is_refused(baselines, capsys):
    with pytest.raises(SystemExit) as exit_info:
        baselines.main(["--from-docs"])
    assert exit_info.value.code != 0 and "results.json does not exist" in capsys.readouterr().err


def test_the_committed_table_is_the_committed_compact_copy(monkeypatch, tmp_path):
    module = load_script("experiments/baselines/run_baselines.py")
    monkeypatch.setattr(module, "DOCS", tmp_path)
    assert module.main(["--from-docs"]) == 0
    assert (tmp_path / "results.md").read_text() == (REPO / "experiments" / "baselines" / "results.md").read_text()
