"""experiments/default_model/diagnose.py and outcomes.py on real ragen-eval runs. diagnose: the oracle is
optimal move by move, a random player scores what chance predicts, and the lake's move values agree with
value iteration. outcomes: per-level CSVs give the same paired tests as `ragen-eval compare`, and one success rate over
another's comes with the interval binomial sampling predicts."""

from __future__ import annotations

import csv
import json

import numpy as np
import pytest

from ragen_envs.frozen_lake import FrozenLakeConfig, generate, value_iteration
from ragen_eval.cli import main as ragen_eval
from tests.script_modules import load_script


@pytest.fixture(scope="module")
def diagnose():
    return load_script("experiments/default_model/diagnose.py")


@pytest.fixture(scope="module")
def outcomes():
    return load_script("experiments/default_model/outcomes.py")


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    out = tmp_path_factory.mktemp("runs")
    for model in ("oracle", "random"):
        assert ragen_eval(["--model", model, "--env", "simple_sokoban,frozenlake", "--episodes", "40",
                           "--out", str(out), "--run-name", model, "--no-progress"]) == 0
    return out


def test_the_oracle_plays_only_optimal_moves(diagnose, runs, capsys):
    assert diagnose.main([str(runs / "oracle"), "--out", str(runs / "oracle.json")]) == 0
    result = json.loads((runs / "oracle.json").read_text())
    assert json.loads(capsys.readouterr().out) == result
    assert result["sokoban"] and all(row["optimal"] == 1.0 for row in result["sokoban"])
    assert all(0.0 < row["random_optimal"] < 1.0 for row in result["sokoban"])
    lake = result["frozenlake"]
    assert lake["first_move_optimal"] == 1.0
    assert lake["mean_goal_chance_of_first_move"] == pytest.approx(lake["best_goal_chance"])
    assert lake["random_goal_chance"] < lake["best_goal_chance"]


def test_a_random_player_scores_about_what_chance_predicts(diagnose, runs, capsys):
    assert diagnose.main([str(runs / "random")]) == 0
    result = json.loads(capsys.readouterr().out)
    moves = sum(row["moves"] for row in result["sokoban"])
    optimal = sum(row["moves"] * row["optimal"] for row in result["sokoban"])
    expected = sum(row["moves"] * row["random_optimal"] for row in result["sokoban"])
    # a binomial count: within 4 standard deviations of its expectation
    assert abs(optimal - expected) < 4 * np.sqrt(expected * (1 - expected / moves))
    assert result["sokoban"][0]["optimal"] < 0.6


def test_the_best_move_value_is_value_iterations_success_chance(diagnose):
    for seed in range(20):
        level = generate(FrozenLakeConfig(), seed)
        steps = 1 + seed % 10
        table = value_iteration(level, is_slippery=True, success_rate=1 / 3, horizon=steps)
        for row in range(level.height):
            for col in range(level.width):
                if level.rows[row][col] in "FS":
                    q = diagnose.lake_action_values(level.rows, (row, col), steps, 1 / 3)
                    assert q.max() == pytest.approx(table.success_prob[steps, row, col])


def test_a_directory_without_episodes_is_refused(diagnose, tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_info:
        diagnose.main([str(tmp_path)])
    assert exit_info.value.code != 0 and "no episodes.jsonl" in capsys.readouterr().err


def test_csv_comparison_equals_the_cli_comparison(outcomes, runs, tmp_path, capsys) -> None:
    for model in ("oracle", "random"):
        assert outcomes.main(["export", str(runs / model), "--out", str(tmp_path / f"{model}.csv")]) == 0
    rows = list(csv.DictReader(open(tmp_path / "oracle.csv")))
    assert len(rows) == 80 and {r["env"] for r in rows} == {"simple_sokoban", "frozenlake"}
    capsys.readouterr()
    assert outcomes.main(["compare", str(tmp_path / "random.csv"), str(tmp_path / "oracle.csv"), "--json"]) == 0
    from_csv = json.loads(capsys.readouterr().out)
    assert ragen_eval(["compare", str(runs / "random"), str(runs / "oracle"), "--json"]) == 0
    from_runs = json.loads(capsys.readouterr().out)
    assert from_csv == from_runs
    # the oracle solves every Sokoban level, so every discordant Sokoban pair is the oracle's
    assert from_csv["simple_sokoban"]["success_b"] == 1.0
    assert from_csv["simple_sokoban"]["mcnemar"]["a_only"] == 0
    # and the printed tables are the same table, below each command's own A/B lines
    assert outcomes.main(["compare", str(tmp_path / "random.csv"), str(tmp_path / "oracle.csv")]) == 0
    table_from_csv = capsys.readouterr().out.split("\n\n", 1)[1]
    assert ragen_eval(["compare", str(runs / "random"), str(runs / "oracle")]) == 0
    table_from_runs = capsys.readouterr().out.split("\n\n", 1)[1]
    assert table_from_csv == table_from_runs and "| simple_sokoban |" in table_from_csv


def test_outcomes_refuses_a_directory_without_episodes(outcomes, tmp_path, capsys) -> None:
    with pytest.raises(SystemExit) as stop:
        outcomes.main(["export", str(tmp_path), "--out", str(tmp_path / "x.csv")])
    assert stop.value.code == 2 and "not a ragen-eval run directory" in capsys.readouterr().err
    assert not (tmp_path / "x.csv").exists()


def _write_outcomes(path, successes, seeds=None) -> None:
    rows = [f"frozenlake,{seed},{int(won)},{float(won)}" for seed, won in zip(seeds or range(len(successes)), successes)]
    path.write_text("\n".join(["env,seed,success,total_reward", *rows]) + "\n")


def test_success_ratio_matches_the_binomial_interval(outcomes) -> None:
    # the reference wins every level, so the ratio is the model's rate and its interval the binomial one
    n, rate = 2000, 0.9
    model = [{"env": "frozenlake", "seed": s, "success": s % 10 != 0} for s in range(n)]
    reference = [{"env": "frozenlake", "seed": s, "success": True} for s in range(n)]
    r = outcomes.success_ratio(model, reference)["frozenlake"]
    assert r["pairs"] == n and r["ratio"] == pytest.approx(rate)
    half = 1.96 * np.sqrt(rate * (1 - rate) / n)
    assert r["ratio_ci95"][0] == pytest.approx(rate - half, abs=0.003)
    assert r["ratio_ci95"][1] == pytest.approx(rate + half, abs=0.003)


def test_success_ratio_pairs_levels_by_seed_and_ignores_unshared_ones(outcomes, tmp_path, capsys) -> None:
    _write_outcomes(tmp_path / "a.csv", [1, 0, 1, 1, 0, 1], seeds=[5, 4, 3, 2, 1, 99])
    _write_outcomes(tmp_path / "ref.csv", [1, 1, 1, 1, 1], seeds=[1, 2, 3, 4, 5])
    assert outcomes.main(["ratio", str(tmp_path / "a.csv"), str(tmp_path / "ref.csv")]) == 0
    # seed 99 has no partner: 3 wins of 5 shared levels against 5 of 5
    assert "| frozenlake | 5 | 0.600 | 1.000 | 0.600 [" in capsys.readouterr().out


def test_success_ratio_refuses_a_reference_that_never_wins(outcomes, tmp_path, capsys) -> None:
    _write_outcomes(tmp_path / "a.csv", [1, 0])
    _write_outcomes(tmp_path / "ref.csv", [0, 0])
    with pytest.raises(SystemExit) as stop:
        outcomes.main(["ratio", str(tmp_path / "a.csv"), str(tmp_path / "ref.csv")])
    assert stop.value.code == 2 and "never succeeds on frozenlake" in capsys.readouterr().err
