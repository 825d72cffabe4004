"""experiments/default_model/curve.py on a real two-stage SFT chain: stage numbers, demonstrations counted
over earlier stages, snapshots evaluated by ragen-eval, the final point taken from evaluate.py's results."""

from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

from ragen_train.demos import DemoConfig  # noqa: E402
from ragen_train.sft import SFTConfig, run_sft  # noqa: E402
from tests.script_modules import load_script  # noqa: E402

pytestmark = pytest.mark.train


@pytest.fixture(scope="module")
def curve():
    return load_script("experiments/default_model/curve.py")


@pytest.fixture(scope="module")
def chain(tmp_path_factory) -> tuple[Path, Path]:
    """Stage 1 (tiny, Bandit) with one snapshot as train.sh keeps it, stage 2 (from stage 1, two games)."""
    root = tmp_path_factory.mktemp("chain")
    first = run_sft(SFTConfig(model="tiny", out=str(root / "stage1"), epochs=1, batch_size=8, lr=3e-3,
                              warmup_steps=1, checkpoint_every=1,
                              demos=DemoConfig(env="bandit", mode="oracle", num_episodes=16, seed=0)))
    step = json.loads((first / "resume" / "progress.json").read_text())["step"]
    shutil.copytree(first / "resume", first / "snapshots" / f"step_{step}")
    second = run_sft(SFTConfig(model=str(first), out=str(root / "stage2"), epochs=1, batch_size=8, lr=3e-3,
                               warmup_steps=1, checkpoint_every=1,
                               demos=[DemoConfig(env="bandit", mode="oracle", num_episodes=8, seed=1),
                                      DemoConfig(env="frozenlake", mode="oracle", num_episodes=8, seed=1)]))
    return first, second


def test_stages_are_numbered_along_the_model_chain(curve, chain) -> None:
    first, second = chain
    assert (curve.stage_number(first), curve.stage_number(second)) == (1, 2)
    assert curve.earlier_stages(second) == {"bandit": 16}


def test_a_stage_on_top_of_the_exported_model_continues_its_provenance(curve, chain, tmp_path) -> None:
    """A stage trained from a copy of ``ragen_eval/default_model/`` (no sft_config.json there) takes the
    stages before it from the copy's provenance.json: numbering, counts and the exported entries."""
    second = chain[1]
    export = load_script("experiments/default_model/export.py")
    shipped = tmp_path / "shipped"
    shipped.mkdir()
    (shipped / "provenance.json").write_text(json.dumps({"stages": export.stage_chain(second)}))
    config = json.loads((second / "sft_config.json").read_text())
    third = tmp_path / "stage3"
    third.mkdir()
    (third / "sft_config.json").write_text(json.dumps({**config, "model": str(shipped)}))
    shutil.copy(second / "sft_metrics.csv", third / "sft_metrics.csv")
    chain_entries = export.stage_chain(third)
    assert [st["demonstrations"] for st in chain_entries] == [{"bandit": 16}, {"bandit": 8, "frozenlake": 8},
                                                                {"bandit": 8, "frozenlake": 8}]
    steps = len((second / "sft_metrics.csv").read_text().splitlines()) - 1
    assert chain_entries[-1]["optimizer_steps"] == steps and chain_entries[-1]["demo_seed"] == 1
    assert curve.stage_number(third) == 3
    assert curve.earlier_stages(third) == {"bandit": 24, "frozenlake": 8}


def test_the_curve_counts_every_stage_and_evaluates_snapshots(curve, chain, tmp_path) -> None:
    first, second = chain
    final = {game: {"episodes": 5, "success_rate": 0.4, "success_ci95": [0.1, 0.8], "format_error_rate": 0.0}
             for game in curve.GAMES}
    results = tmp_path / "results.json"
    results.write_text(json.dumps({"players": {"model": final}}))
    table = tmp_path / "curve.csv"
    assert curve.main(["--run", str(first), "--run", str(second), "--episodes", "2", "--final-results", str(results),
                       "--out", str(tmp_path / "evals"), "--csv", str(table), "--plot", str(tmp_path / "c.png")]) == 0
    rows = list(csv.DictReader(open(table)))
    assert [(r["stage"], r["game"]) for r in rows] == [(s, g) for s in ("1", "2") for g in curve.GAMES]
    by_stage = {(r["stage"], r["game"]): r for r in rows}
    # stage 1's snapshot was really played: two levels per game through ragen-eval
    assert all(by_stage["1", g]["episodes"] == "2" for g in curve.GAMES)
    assert (tmp_path / "evals" / "stage1").is_dir()
    # stage 2's point is the results file's, with stage 1's demonstrations added to its own
    assert {g: by_stage["2", g]["demos_seen"] for g in curve.GAMES} == {"sokoban": "0", "frozenlake": "8",
                                                                        "bandit": "24"}
    assert {by_stage["2", g]["success"] for g in curve.GAMES} == {"0.4"}
    assert (tmp_path / "c.png").stat().st_size > 0


def test_a_directory_that_is_not_an_sft_stage_is_refused(curve, tmp_path, capsys) -> None:
    with pytest.raises(SystemExit) as stop:
        curve.main(["--run", str(tmp_path), "--csv", str(tmp_path / "c.csv"), "--plot", str(tmp_path / "c.png")])
    assert stop.value.code == 2
    assert "not an SFT output directory" in capsys.readouterr().err
    assert not (tmp_path / "c.csv").exists()


def test_previous_points_are_kept_for_the_stages_before_the_first_run(curve, chain, tmp_path) -> None:
    first, second = chain
    previous = tmp_path / "old.csv"
    old = [{"stage": s, "step": 7, "game": g, "demos_seen": 16, "demos_seen_total": 16, "episodes": 9,
            "success": 0.5, "ci_low": 0.25, "ci_high": 0.75, "format_error_rate": 0.0}
           for s in (1, 2) for g in curve.GAMES]
    with open(previous, "w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(old[0]))
        writer.writeheader()
        writer.writerows(old)
    results = tmp_path / "results.json"
    results.write_text(json.dumps({"players": {"model": {
        g: {"episodes": 5, "success_rate": 0.4, "success_ci95": [0.1, 0.8], "format_error_rate": 0.0}
        for g in curve.GAMES}}}))
    table = tmp_path / "curve.csv"
    assert curve.main(["--run", str(second), "--final-results", str(results), "--previous", str(previous),
                       "--csv", str(table), "--plot", str(tmp_path / "c.png")]) == 0
    rows = list(csv.DictReader(open(table)))
    # stage 1 from the old CSV as it was; its stage 2 rows replaced by the run's own point
    assert [(r["stage"], r["step"], r["episodes"]) for r in rows] == [("1", "7", "9")] * 3 + [("2", "2", "5")] * 3
    assert rows[0]["success"] == "0.5" and rows[0]["format_error_rate"] == "0.0"


def test_a_missing_previous_csv_is_refused(curve, chain, tmp_path, capsys) -> None:
    with pytest.raises(SystemExit) as stop:
        curve.main(["--run", str(chain[1]), "--previous", str(tmp_path / "none.csv"), "--csv", str(tmp_path / "c.csv"),
                    "--plot", str(tmp_path / "c.png")])
    assert stop.value.code == 2 and "no such file" in capsys.readouterr().err
    assert not (tmp_path / "c.csv").exists()
