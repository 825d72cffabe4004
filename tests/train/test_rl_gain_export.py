"""experiments/rl_gain/export.py: paired outcomes from two real test runs, McNemar recomputed from the CSV."""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path

import pytest

from ragen_eval.cli import main as ragen_eval

from tests.script_modules import load_script

SCRIPT = Path(__file__).resolve().parents[2] / "experiments" / "rl_gain" / "export.py"


@pytest.fixture(scope="module")
def export():
    return load_script(SCRIPT)


def _exact_mcnemar(b: int, c: int) -> float:
    """Two-sided exact binomial test of b successes in b + c trials at 1/2, written out here."""
    n, k = b + c, min(b, c)
    tail = sum(math.comb(n, i) for i in range(k + 1)) / 2 ** n
    return min(1.0, 2 * tail)


def test_export_pairs_two_real_runs_and_recomputes_the_test(export, tmp_path, capsys):
    runs = tmp_path / "runs"
    for model, name in (("random", "frozenlake_det-sft-test"), ("oracle", "frozenlake_det-rl-test")):
        assert ragen_eval(["--model", model, "--env", "frozenlake_det", "--episodes", "24", "--out", str(runs),
                           "--run-name", name, "--no-progress"]) == 0
    train = runs / "frozenlake_det-starpo-s"
    train.mkdir()
    (train / "config.yaml").write_text(f"preset: starpo-s\nmodel: {runs.resolve()}/frozenlake_det-sft\n")
    (train / "metrics.csv").write_text("step,rollout/success_rate,eval/success_rate\n1,0.25,\n2,0.5,0.5\n")
    out = tmp_path / "docs"
    assert export.main([str(runs), "--out", str(out)]) == 0

    with open(out / "frozenlake_det.csv", newline="") as handle:
        pairs = list(csv.DictReader(handle))
    before = {json.loads(line)["seed"]: json.loads(line)["success"]
              for line in (runs / "frozenlake_det-sft-test" / "episodes.jsonl").read_text().splitlines()}
    assert len(pairs) == 24 and {int(p["seed"]) for p in pairs} == set(before)
    assert all((p["sft_success"] == "1") == before[int(p["seed"])] for p in pairs)
    assert all(p["rl_success"] == "1" for p in pairs)  # the oracle wins every deterministic lake

    [row] = json.loads((out / "results.json").read_text())
    b = sum(p["sft_success"] == "1" and p["rl_success"] == "0" for p in pairs)
    c = sum(p["sft_success"] == "0" and p["rl_success"] == "1" for p in pairs)
    assert (row["sft_only"], row["rl_only"]) == (b, c) and c > 0
    assert row["mcnemar_p"] == pytest.approx(_exact_mcnemar(b, c))
    assert row["rl_success"] == 1.0
    # the compact copy of the training run names no machine folder
    assert "model: runs/frozenlake_det-sft\n" in (out / "frozenlake_det-starpo-s" / "config.yaml").read_text()
    assert "| frozenlake_det | 24 |" in capsys.readouterr().out

    # the table is recomputed from the committed CSVs alone
    (out / "results.json").unlink()
    assert export.main(["--out", str(out)]) == 0
    assert json.loads((out / "results.json").read_text()) == [row]


def test_a_folder_without_runs_is_refused(export, tmp_path):
    with pytest.raises(SystemExit) as stop:
        export.main([str(tmp_path), "--out", str(tmp_path / "docs")])
    assert stop.value.code == 2


def test_the_study_protocol_is_a_valid_protocol_config():
    from ragen_envs.text import TextEpisode
    from ragen_envs.text.config import ProtocolConfig

    path = SCRIPT.parent / "short_protocol.json"
    config = ProtocolConfig(**json.loads(path.read_text()))
    assert not config.think
    turn = TextEpisode("frozenlake_det", 7, config).messages[-1]["content"]
    assert [len(row) for row in turn.splitlines()[-4:]] == [4] * 4  # the turn ends with the 4x4 grid
    assert "<think>" not in turn
