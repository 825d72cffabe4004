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
from ragen_eval.leaderboard import HEADLINE_WIDTH, build_leaderboard, headline_table, load_leaderboard
from ragen_eval.run_dir import RunDir, load_run
from ragen_eval.stats import mcnemar_test
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


def test_random_runs_of_other_envs_on_the_same_levels_pool_into_one_baseline(tmp_path):
    """`ragen-eval baselines` plays one random run per env; the last one given once stood for every env, so the
    others' runs had no p-value."""
    runs = [tmp_path / "oracle-bandit", tmp_path / "random-bandit", tmp_path / "random-frozenlake"]
    for run in runs:
        model, env = run.name.split("-")
        evaluate(EvalConfig(model=model, envs=[env], episodes=16), run, progress=False)
    for order in (runs, runs[::-1]):
        p = {(r["model"], tuple(r["per_env"])): r["mcnemar_p_vs_random"] for r in _board(order).rows}
        oracle, random = [r["success"] for r in load_run(runs[0])[1]], [r["success"] for r in load_run(runs[1])[1]]
        assert p[("oracle", ("bandit",))] == mcnemar_test(oracle, random).p_value < 0.01
        assert p[("random", ("bandit",))] == p[("random", ("frozenlake",))] == 1.0


def _baselines(capsys, runs, out) -> list[Path]:
    """Run ``ragen-eval baselines`` and return the baseline run directories it prints."""
    capsys.readouterr()
    assert main(["baselines", *map(str, runs), "--out", str(out), "--no-progress"]) == 0
    return [Path(line) for line in capsys.readouterr().out.split()]


def test_baselines_of_other_envs_or_episodes_on_the_same_levels_get_their_own_runs(tmp_path, capsys):
    # Three runs on one level set (same split and seeds) that differ in episodes or envs, each
    # followed by its own `baselines` step into one --out.
    wanted = {"few": (["bandit"], 4), "more": (["bandit"], 8), "wider": (["bandit", "frozenlake"], 4)}
    played = {}
    for name, (envs, episodes) in wanted.items():
        evaluate(EvalConfig(model="random", envs=envs, episodes=episodes), tmp_path / name, progress=False)
        [played[name]] = _baselines(capsys, [tmp_path / name], tmp_path / "baselines")
    assert len(set(played.values())) == 3 and all(p.parent == tmp_path / "baselines" for p in played.values())
    assert played["few"].name.startswith("oracle__builtin__test__") and "__4ep-" in played["few"].name
    # Each is exactly the oracle run of its own config, as played on its own.
    for name, (envs, episodes) in wanted.items():
        alone = tmp_path / "alone" / name
        evaluate(EvalConfig(model="oracle", envs=envs, episodes=episodes), alone, progress=False)
        assert load_run(played[name]) == load_run(alone)
    # Asking again reuses the run of the same config; the others are left as they were.
    files = {name: (path / "episodes.jsonl").read_bytes() for name, path in played.items()}
    assert _baselines(capsys, [tmp_path / "few"], tmp_path / "baselines") == [played["few"]]
    assert {name: (path / "episodes.jsonl").read_bytes() for name, path in played.items()} == files
    # An interrupted baseline run (three episodes and a torn line) resumes without replaying those three.
    lines = files["more"].splitlines(keepends=True)
    (played["more"] / "episodes.jsonl").write_bytes(b"".join(lines[:3]) + lines[3][:40])
    assert _baselines(capsys, [tmp_path / "more"], tmp_path / "baselines") == [played["more"]]
    resumed = (played["more"] / "episodes.jsonl").read_bytes()
    assert resumed.startswith(b"".join(lines[:3])) and len(resumed.splitlines()) == 8
    assert load_run(played["more"]) == load_run(tmp_path / "alone" / "more")


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


def test_a_run_killed_before_its_first_episode_is_listed_last_without_figures(tmp_path, capsys):
    # Before, the reasoning plot subtracted from its missing success rate: a traceback and an empty --out.
    evaluate(EvalConfig(model="oracle", envs=["bandit"], episodes=3), tmp_path / "oracle", progress=False)
    with RunDir(tmp_path / "empty", EvalConfig(model="random", envs=["bandit"], episodes=3)):
        pass  # what a run killed before its first episode leaves: config.json and no episodes
    capsys.readouterr()
    assert main(["leaderboard", str(tmp_path / "empty"), str(tmp_path / "oracle"), "--out", str(tmp_path / "lb")]) == 0
    out, err = capsys.readouterr()
    assert err.splitlines()[0] == (f"ragen-eval leaderboard: warning: {tmp_path / 'empty'} has no finished episode; "
                                   "it is listed last, without figures, and left out of the plots")
    rows = list(csv.reader((tmp_path / "lb" / "leaderboard.csv").open()))
    assert [(r[1], r[4], r[6]) for r in rows[1:]] == [("oracle", "3", "1.000 [0.439, 1.000]"), ("random", "0*", "-")]
    assert "| random (builtin)* | -" in out  # the headline lists it too
    for plot in ("success_per_env.png", "success_vs_reasoning.png"):
        assert (tmp_path / "lb" / plot).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # Runs with no episode at all measure nothing: refused before --out is made.
    assert main(["leaderboard", str(tmp_path / "empty"), "--out", str(tmp_path / "lb2")]) == 2
    assert "none of the runs has a finished episode, so there is nothing to rank" in capsys.readouterr().err
    assert not (tmp_path / "lb2").exists()


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
    assert "| default (hf) " in board  # the embedded model is ranked with the baselines
    summary = json.loads((tmp_path / "out" / "runs" / "oracle__builtin__test" / "summary.json").read_text())
    assert summary["envs"] == ["sokoban", "frozenlake", "bandit"] and summary["episodes_done"] == 12


def _table_lines(markdown: str) -> list[str]:
    return [line for line in markdown.splitlines() if line.startswith("|")]


def _headline_tables(markdown: str) -> list[list[str]]:
    """The Markdown tables before the legend, each as its lines."""
    tables, current = [], []
    for line in markdown.splitlines():
        if line.startswith("|"):
            current.append(line)
        elif current:
            tables.append(current)
            current = []
    return tables + ([current] if current else [])


def test_the_committed_headline_fits_120_columns_and_matches_the_full_table():
    committed = REPO / "leaderboards"
    text = (committed / "leaderboard.md").read_text()
    tables = _headline_tables(text)
    data = json.loads((committed / "leaderboard.json").read_text())
    full = list(csv.DictReader((committed / "leaderboard.csv").open()))
    assert len(full) == len(data["rows"])
    shown = []
    for lines in tables:
        assert max(map(len, lines)) <= HEADLINE_WIDTH == 120
        envs = [c.strip() for c in lines[0].strip("|").split("|")][1:-3]
        shown += envs
        played = [(row, csv_row) for row, csv_row in zip(data["rows"], full)
                  if any(row["per_env"].get(env) is not None for env in envs)]
        assert len(lines) == 2 + len(played)
        for line, (row, csv_row) in zip(lines[2:], played):
            cells = [c.strip() for c in line.strip("|").split("|")]
            assert cells[0] == f"{row['model']} ({row['backend']})"
            for env, cell in zip(envs, cells[1:]):
                if row["per_env"].get(env) is None:
                    assert cell == "-" and csv_row[env] == "-"
                    continue
                low, high = row["per_env_ci95"][env]
                assert cell == f"{row['per_env'][env]:.2f} [{low:.2f},{high:.2f}]"
                assert float(csv_row[env]) == pytest.approx(row["per_env"][env], abs=5e-4)
            assert cells[len(envs) + 1] == csv_row["format err"]
    assert shown == data["envs"]  # every game in some table, in order
    # the committed files are what the script writes from the committed figures
    assert headline_table(load_leaderboard(committed / "leaderboard.json")) == "\n\n".join("\n".join(t) for t in tables)


def test_a_wide_leaderboard_shortens_names_then_splits_its_games_over_tables(tmp_path):
    board = load_leaderboard(REPO / "leaderboards" / "leaderboard.json")
    board.rows = [r for r in board.rows if r["per_env"].get("sokoban") is not None]
    board.envs = ["sokoban", "frozenlake", "bandit"]
    board.rows[0]["model"] = "organisation/a-very-long-model-name-that-goes-on-" + "x" * 40
    table = headline_table(board)
    assert max(map(len, table.splitlines())) <= 120 and len(_headline_tables(table)) == 1
    assert _headline_tables(table)[0][2].startswith("| …") and "x (builtin)" in table
    envs = ["sokoban", "frozenlake", "bandit", "simple_sokoban", "large_frozenlake", "bandit_hard"]
    for row in board.rows:
        for env in envs[3:]:
            row["per_env"][env], row["per_env_ci95"][env] = 0.5, [0.4, 0.6]
    board.envs = envs
    tables = _headline_tables(headline_table(board))
    assert len(tables) == 2 and all(max(map(len, t)) <= 120 for t in tables)
    headers = [[c.strip() for c in t[0].strip("|").split("|")][1:-3] for t in tables]
    assert headers[0] + headers[1] == envs


def test_rewrite_rebuilds_the_tables_from_leaderboard_json_alone(tmp_path):
    out = tmp_path / "lb"
    out.mkdir()
    (out / "leaderboard.json").write_bytes((REPO / "leaderboards" / "leaderboard.json").read_bytes())
    subprocess.run([sys.executable, str(REPO / "leaderboards" / "generate.py"), "--rewrite", "--out", str(out)],
                   check=True, capture_output=True, cwd=tmp_path)
    for name in ("leaderboard.md", "leaderboard.csv", "leaderboard.json"):
        assert (out / name).read_text() == (REPO / "leaderboards" / name).read_text(), name
    assert not (tmp_path / "runs").exists()  # played nothing
