"""experiments/lake_data_scale/export.py: the curve's rows are real runs' success counts, with the data seen."""

from __future__ import annotations

import csv
import json
from pathlib import Path

from ragen_eval.cli import main as ragen_eval

from tests.script_modules import load_script

SCRIPT = Path(__file__).resolve().parents[2] / "experiments" / "lake_data_scale" / "export.py"


def test_export_reads_every_evaluation_and_counts_demonstrations(tmp_path, capsys):
    evals = tmp_path / "run" / "eval"
    # Built-in players stand in for a kept SFT model: the export reads only the run directories.
    for model, name in (("random", "random-val"), ("oracle", "oracle-val"), ("random", "step_2000-val"),
                        ("oracle", "step_4000-val"), ("oracle", "step_4000-test"), ("random", "more_step_4000-val")):
        assert ragen_eval(["--model", model, "--env", "frozenlake", "--split", name.rpartition("-")[2], "--episodes",
                           "20", "--out", str(evals), "--run-name", name, "--no-progress"]) == 0
    capsys.readouterr()
    (tmp_path / "run" / "sft").mkdir()  # the first stage's config: the second stage's data count starts after it
    (tmp_path / "run" / "sft" / "sft_config.json").write_text(json.dumps({"demos": [{"num_episodes": 64000}],
                                                                         "epochs": 1}))
    out = tmp_path / "docs"
    assert load_script(SCRIPT).main([str(tmp_path / "run"), "--out", str(out)]) == 0

    with open(out / "curve.csv", newline="") as handle:
        rows = {(r["model"], r["stage"], r["step"], r["split"]): r for r in csv.DictReader(handle)}
    assert set(rows) == {("random", "", "", "val"), ("oracle", "", "", "val"), ("sft", "1", "2000", "val"),
                         ("sft", "1", "4000", "val"), ("sft", "1", "4000", "test"), ("sft", "2", "4000", "val")}
    for (model, stage, step, split), row in rows.items():
        prefix = "more_" if stage == "2" else ""
        name = f"{prefix}step_{step}-{split}" if model == "sft" else f"{model}-{split}"
        records = [json.loads(line) for line in (evals / name / "episodes.jsonl").read_text().splitlines()]
        assert int(row["episodes"]) == len(records) == 20
        assert float(row["success"]) == round(sum(r["success"] for r in records) / len(records), 4)
        assert float(row["ci95_low"]) <= float(row["success"]) <= float(row["ci95_high"])
    assert rows[("sft", "1", "4000", "val")]["demonstrations"] == "64000"  # 4,000 steps of batch 16, one epoch
    assert rows[("sft", "2", "4000", "val")]["demonstrations"] == "128000"  # after the first stage's 64,000
    # The oracle plans every turn: its first moves are optimal far more often than a random move's would be.
    oracle = rows[("oracle", "", "", "val")]
    assert float(oracle["first_move_optimal"]) > float(oracle["random_first_move_optimal"]) + 0.3
    assert (out / "curve.png").stat().st_size > 0
