"""Leaderboards: every format written, baselines played as their own step, identical bytes on regeneration."""

from __future__ import annotations

import csv
import hashlib
import json
import subprocess
import sys
from pathlib import Path

import pytest

from ragen_eval.cli import evaluate, main, play_baselines
from ragen_eval.config import EvalConfig
from ragen_eval.leaderboard import build_leaderboard
from ragen_eval.summary import summary_of

REPO = Path(__file__).resolve().parents[2]


def _board(runs):
    """The leaderboard of some run directories, each with the summary recomputed from its episodes."""
    return build_leaderboard({path: summary_of(path) for path in runs})


def _digest(folder: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.iterdir()) if p.is_file()}


def test_missing_baselines_are_played_and_ranked(tmp_path, capsys):
    config = EvalConfig(model="random", agent_seed=7, envs=["bandit", "sokoban"], episodes=8)
    evaluate(config, tmp_path / "mine", progress=False)
    baselines = play_baselines([tmp_path / "mine"], tmp_path / "baselines", progress=False)
    board = _board([tmp_path / "mine", *baselines])
    # The given run is a random baseline already; only the oracle is played, on the same levels.
    assert [p.name.split("__")[0] for p in (tmp_path / "baselines").iterdir()] == ["oracle"]
    assert [row["model"] for row in board.rows] == ["oracle", "random"]  # ranked by macro success
    assert board.envs == ["bandit", "sokoban"]
    oracle = board.rows[0]
    assert oracle["per_env"]["bandit"] == 1.0 and oracle["episodes"] == 16
    assert oracle["mcnemar_p_vs_random"] < 0.05 and board.rows[1]["mcnemar_p_vs_random"] == 1.0
    # A second `baselines` step finds the baseline it played and does not play it again.
    played = (baselines[0] / "episodes.jsonl").read_bytes()
    assert main(["baselines", str(tmp_path / "mine"), "--out", str(tmp_path / "baselines"), "--no-progress"]) == 0
    again = _board([tmp_path / "mine", *map(Path, capsys.readouterr().out.split())])
    assert [r["run"] for r in again.rows] == [r["run"] for r in board.rows]
    assert (baselines[0] / "episodes.jsonl").read_bytes() == played
    # The leaderboard itself plays nothing: it ranks exactly the runs it is given.
    assert len(_board([tmp_path / "mine"]).rows) == 1


def test_baselines_of_a_folder_that_is_no_run_fail_before_playing(tmp_path, capsys):
    (tmp_path / "notes").mkdir()
    assert main(["baselines", str(tmp_path / "notes"), "--out", str(tmp_path / "baselines")]) == 2
    assert capsys.readouterr().err.strip() == (f"ragen-eval baselines: error: {tmp_path / 'notes'} is not a "
                                               "ragen-eval run directory (no config.json)")
    assert not (tmp_path / "baselines").exists()


def test_every_format_is_written_and_regeneration_is_byte_identical(tmp_path, capsys):
    for model in ("oracle", "random"):
        evaluate(EvalConfig(model=model, envs=["bandit", "frozenlake"], episodes=5), tmp_path / model, progress=False)
    runs = [str(tmp_path / "oracle"), str(tmp_path / "random")]
    lb_args = ["leaderboard", *runs, "--out", str(tmp_path / "lb")]
    assert main(["baselines", *runs, "--out", str(tmp_path / "baselines"), "--no-progress"]) == 0
    assert main(lb_args) == 0
    first = _digest(tmp_path / "lb")
    assert set(first) == {"leaderboard.md", "leaderboard.csv", "leaderboard.json", "leaderboard.html",
                          "success_per_env.png", "success_vs_reasoning.png"}
    assert main(lb_args) == 0
    assert not (tmp_path / "baselines").exists()  # both baselines were given
    assert _digest(tmp_path / "lb") == first
    rows = list(csv.reader((tmp_path / "lb" / "leaderboard.csv").open()))
    assert rows[0][:3] == ["rank", "model", "backend"] and [r[1] for r in rows[1:]] == ["oracle", "random"]
    html = (tmp_path / "lb" / "leaderboard.html").read_text()
    assert html.count("data:image/png;base64,") == 2 and "<td>oracle</td>" in html
    assert "src=\"http" not in html  # self-contained
    data = json.loads((tmp_path / "lb" / "leaderboard.json").read_text())
    assert data["rows"][0]["per_env"]["bandit"] == 1.0
    assert (tmp_path / "lb" / "success_per_env.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.slow  # plays the embedded model too (loads torch)
def test_generate_script_rebuilds_the_committed_leaderboard_layout(tmp_path):
    pytest.importorskip("torch")  # the script plays the embedded default model with the hf backend
    pytest.importorskip("transformers")
    subprocess.run([sys.executable, str(REPO / "leaderboards" / "generate.py"), "--episodes", "4",
                    "--runs-dir", str(tmp_path / "runs"), "--out", str(tmp_path / "out")],
                   check=True, capture_output=True, cwd=tmp_path)
    assert (tmp_path / "out" / "leaderboard.md").exists()
    assert sorted(p.name for p in (tmp_path / "out" / "runs").iterdir()) == [
        "default__hf__test", "oracle__builtin__test", "oracle__builtin__test__games", "random__builtin__test",
        "random__builtin__test__games"]
    board = (tmp_path / "out" / "leaderboard.md").read_text()
    assert "| default " in board and "| hf " in board  # the embedded model is ranked with the baselines
    summary = json.loads((tmp_path / "out" / "runs" / "oracle__builtin__test" / "summary.json").read_text())
    assert summary["envs"] == ["sokoban", "frozenlake", "bandit"] and summary["episodes_done"] == 12
