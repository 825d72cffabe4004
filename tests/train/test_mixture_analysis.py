"""experiments/mixture_rl/analyze.py: the plan's val rules (which checkpoints qualify, the pick) and its test call on
hand-made per-level outcomes written as its compact data, with the McNemar p checked against scipy's exact binomial
test on the discordant levels; the states before the val and test looks are complete; and the export from a small
runs folder of real files (metrics.csv, episodes.jsonl on training-split levels) through the command line."""

from __future__ import annotations

import csv
import json

import numpy as np
import pytest
from scipy import stats

from ragen_envs.splits import LevelSplitter
from ragen_eval.stats import wilson_interval
from tests.script_modules import load_script
from tests.train.study_cli import empty_study_summary

analyze = load_script("experiments/mixture_rl/analyze.py")
GAMES = analyze.GAMES
LEVELS = 100
BASE = 50  # the start model wins the first BASE levels of every game
COLUMNS = ["seed", "level_key", "success", "turns", "format_error_turns"]


def _write(root, name: str, outcomes, first_seed: int = 1000, keys: int = 90, errors: int = 0) -> None:
    """DIR/<name>.csv: level i (seed first_seed + i, one of ``keys`` level keys) won where outcomes[i]; every episode
    plays 4 turns, the first ``errors`` episodes break the format on one of them."""
    root.mkdir(parents=True, exist_ok=True)
    with open(root / f"{name}.csv", "w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(COLUMNS)
        writer.writerows([first_seed + i, f"{i % keys:04x}", int(s), 4, int(i < errors)]
                         for i, s in enumerate(outcomes))


def _model(gained: int, lost: int) -> np.ndarray:
    """Outcomes that differ from the start model's on ``gained`` levels it lost and ``lost`` levels it won."""
    model = np.arange(LEVELS) < BASE
    model[:lost] = False
    model[BASE:BASE + gained] = True
    return model


def _val(root, changes: dict[int, dict[str, tuple[int, int]]], models=analyze.VAL) -> None:
    """The val evaluations of ``models``: checkpoint S on game g gains and loses changes[S][g] levels (none
    elsewhere); the start model breaks the format on 8 episodes of each game, checkpoints on 2."""
    for name in models:
        model, game, _ = name.split("-")
        if model == "start":
            _write(root, name, _model(0, 0), errors=8)
        else:
            _write(root, name, _model(*changes.get(int(model[4:]), {}).get(game, (0, 0))), errors=2)


def _test(root, pick: int, changes: dict[str, tuple[int, int]], games=GAMES) -> None:
    """The test evaluations: the pick gains and loses changes[g] levels on game g against the start model, on
    levels other than val's (70 level keys)."""
    for game in games:
        _write(root, f"start-{game}-test", _model(0, 0), first_seed=5000, keys=70)
        _write(root, f"step{pick}-{game}-test", _model(*changes.get(game, (0, 0))), first_seed=5000, keys=70)


def _mcnemar_p(gained: int, lost: int) -> float:
    return float(stats.binomtest(gained, gained + lost, 0.5).pvalue) if gained + lost else 1.0


def _check_comparison(result: dict, gained: int, lost: int) -> None:
    """One model's figures against the start model's, computed here."""
    wins = BASE + gained - lost
    assert (result["levels"], result["wins"], result["model_only"], result["start_only"]) == (LEVELS, wins, gained,
                                                                                              lost)
    assert result["success"] == pytest.approx(wins / LEVELS)
    assert result["wilson95"] == pytest.approx(list(wilson_interval(wins, LEVELS)))
    assert result["difference"] == pytest.approx((gained - lost) / LEVELS, abs=1e-12)
    assert result["mcnemar_p"] == pytest.approx(_mcnemar_p(gained, lost), rel=1e-9)


def _summary(root):
    return analyze.analyse(*analyze.load(root))


def test_a_significant_loss_on_another_game_disqualifies_the_larger_gain(tmp_path):
    changes = {50: {"sokoban": (20, 2)},  # higher, nothing lower: qualifies
               100: {"sokoban": (40, 0), "frozenlake": (0, 12)},  # larger mean gain, but the lake is lower
               150: {"sokoban": (3, 1)},  # nothing significant
               200: {"frozenlake": (8, 0), "sokoban": (0, 5)}}  # 0/5 (p = 0.0625) is a loss not significant
    _val(tmp_path, changes)
    summary = _summary(tmp_path)
    val = summary["val"]
    for step in analyze.CHECKPOINTS:
        for game in GAMES:
            _check_comparison(val["checkpoints"][str(step)]["games"][game], *changes[step].get(game, (0, 0)))
        assert val["checkpoints"][str(step)]["mean_difference"] == pytest.approx(
            sum(g - lo for g, lo in changes[step].values()) / LEVELS / 3, abs=1e-12)
    calls = {step: {g: val["checkpoints"][str(step)]["games"][g]["call"] for g in GAMES} for step in (100, 200)}
    assert calls[100] == {"sokoban": "higher", "frozenlake": "lower", "bandit": "neither"}
    assert calls[200] == {"sokoban": "neither", "frozenlake": "higher", "bandit": "neither"}
    assert [val["checkpoints"][str(s)]["qualifies"] for s in analyze.CHECKPOINTS] == [True, False, False, True]
    assert val["qualifying"] == [50, 200]
    assert val["pick"] == 50 and val["checkpoints"]["100"]["mean_difference"] > val["checkpoints"]["50"][
        "mean_difference"]
    assert summary["state"] == "in progress: val picked step 50, 0 of 6 test evaluations"
    assert "verdict" not in summary
    start = val["start"]["frozenlake"]
    assert (start["levels"], start["wins"], start["distinct_levels"]) == (LEVELS, BASE, 90)
    assert start["format_error_rate"] == pytest.approx(8 / (4 * LEVELS))
    assert val["checkpoints"]["150"]["games"]["bandit"]["format_error_rate"] == pytest.approx(2 / (4 * LEVELS))


def test_the_pick_is_the_largest_averaged_difference_and_a_tie_goes_to_the_earlier_step(tmp_path):
    changes = {50: {"sokoban": (8, 0)}, 100: {"sokoban": (9, 0)},
               # the same average as step 100's, made up of two games; in floats it comes out larger
               150: {"frozenlake": (6, 0), "bandit": (3, 0)}, 200: {"sokoban": (2, 1)}}
    floats = {step: sum((BASE + gained - lost) / LEVELS - BASE / LEVELS for gained, lost in changes[step].values())
              for step in (100, 150)}
    assert floats[150] > floats[100]
    _val(tmp_path / "tie", changes)
    val = _summary(tmp_path / "tie")["val"]
    assert val["qualifying"] == [50, 100, 150]
    assert val["checkpoints"]["150"]["games"]["bandit"]["call"] == "neither"  # 3/0: p = 0.25
    assert val["checkpoints"]["100"]["mean_difference"] == pytest.approx(0.03)
    assert val["checkpoints"]["150"]["mean_difference"] == pytest.approx(0.03)
    assert val["pick"] == 100
    # a later step with the larger average is picked over earlier ones
    changes[200] = {"sokoban": (12, 0), "frozenlake": (3, 0)}
    _val(tmp_path / "later", changes)
    val = _summary(tmp_path / "later")["val"]
    assert val["qualifying"] == [50, 100, 150, 200] and val["pick"] == 200
    assert val["checkpoints"]["200"]["mean_difference"] == pytest.approx(0.05)


def test_no_qualifying_checkpoint_ends_the_study_before_test(tmp_path):
    changes = {50: {"sokoban": (20, 0), "bandit": (0, 10)}, 100: {"frozenlake": (4, 0)}, 150: {},
               200: {"sokoban": (1, 8)}}
    _val(tmp_path, changes)
    summary = _summary(tmp_path)
    assert summary["val"]["qualifying"] == [] and summary["val"]["pick"] is None
    assert summary["state"] == "complete" and summary["verdict"] == "no improvement on val"
    assert "test" not in summary
    _check_comparison(summary["val"]["checkpoints"]["50"]["games"]["bandit"], 0, 10)
    # a test look is not the plan's once val chose nothing
    _write(tmp_path, "start-sokoban-test", _model(0, 0), first_seed=5000)
    with pytest.raises(SystemExit, match="though no checkpoint qualified on val: start-sokoban-test"):
        _summary(tmp_path)


def test_the_test_confirms_a_gain_on_a_game_higher_on_val_with_no_loss(tmp_path):
    _val(tmp_path, {100: {"sokoban": (20, 0)}})
    _test(tmp_path, 100, {"sokoban": (15, 1), "frozenlake": (2, 5)})
    summary = _summary(tmp_path)
    test = summary["test"]
    assert test["step"] == 100 and test["higher_on_val"] == ["sokoban"]
    _check_comparison(test["pick"]["sokoban"], 15, 1)
    _check_comparison(test["pick"]["frozenlake"], 2, 5)
    assert [test["pick"][g]["call"] for g in GAMES] == ["higher", "neither", "neither"]
    assert test["start"]["bandit"]["distinct_levels"] == 70 and test["start"]["bandit"]["levels"] == LEVELS
    assert test["call"] == "confirmed"
    assert summary["state"] == "complete" and summary["verdict"] == "confirmed"


def test_a_gain_on_test_only_on_a_game_not_higher_on_val_is_not_confirmed(tmp_path):
    _val(tmp_path, {100: {"sokoban": (20, 0)}})
    _test(tmp_path, 100, {"frozenlake": (15, 0), "sokoban": (3, 0)})
    test = _summary(tmp_path)["test"]
    assert (test["higher_on_val"], test["higher_on_test"], test["lower_on_test"]) == (["sokoban"], ["frozenlake"], [])
    assert test["pick"]["sokoban"]["mcnemar_p"] == pytest.approx(_mcnemar_p(3, 0))  # 0.25
    assert test["call"] == "not confirmed"


def test_a_loss_on_test_is_not_confirmed_though_the_val_game_gains(tmp_path):
    _val(tmp_path, {100: {"sokoban": (20, 0)}})
    _test(tmp_path, 100, {"sokoban": (15, 0), "bandit": (0, 10)})
    summary = _summary(tmp_path)
    test = summary["test"]
    _check_comparison(test["pick"]["bandit"], 0, 10)
    assert (test["higher_on_test"], test["lower_on_test"]) == (["sokoban"], ["bandit"])
    assert test["call"] == "not confirmed" and summary["verdict"] == "not confirmed"


def _train(root, steps: int) -> list[float]:
    """train.csv of ``steps`` steps: sokoban's success at step s is (s % 7) / 7, the rest constant."""
    sokoban = [(step % 7) / 7 for step in range(1, steps + 1)]
    root.mkdir(parents=True, exist_ok=True)
    with open(root / "train.csv", "w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["step", "success_rate", "sokoban/success_rate", "bandit/format_error_rate"])
        writer.writerows([step, 0.5, value, 0.01] for step, value in zip(range(1, steps + 1), sokoban))
    return sokoban


def test_unfinished_looks_have_only_the_training_record_or_the_pick(tmp_path):
    sokoban = _train(tmp_path, 120)
    _val(tmp_path, {100: {"sokoban": (20, 0)}}, models=analyze.VAL[:7])
    summary = _summary(tmp_path)
    assert summary["state"] == "in progress: 120 of 200 training steps, 7 of 15 val evaluations"
    assert set(summary) == {"training", "state"}
    training = summary["training"]
    assert (training["steps"], training["steps_planned"]) == (120, 200)
    assert training["first_10_steps"]["sokoban/success_rate"] == pytest.approx(np.mean(sokoban[:10]))
    assert training["last_10_steps"]["sokoban/success_rate"] == pytest.approx(np.mean(sokoban[-10:]))
    assert training["last_10_steps"]["bandit/format_error_rate"] == pytest.approx(0.01)
    # a test look before val is done is not the plan's
    _write(tmp_path, "start-bandit-test", _model(0, 0), first_seed=5000)
    with pytest.raises(SystemExit, match="before val finished: start-bandit-test"):
        _summary(tmp_path)
    (tmp_path / "start-bandit-test.csv").unlink()
    # val done, three of the pick's six test evaluations
    _val(tmp_path, {100: {"sokoban": (20, 0)}})
    _test(tmp_path, 100, {}, games=("sokoban",))
    _write(tmp_path, "start-frozenlake-test", _model(0, 0), first_seed=5000)
    summary = _summary(tmp_path)
    assert summary["state"] == "in progress: val picked step 100, 3 of 6 test evaluations"
    assert summary["val"]["pick"] == 100 and "test" not in summary and "verdict" not in summary
    # a test look at a checkpoint val did not pick
    _write(tmp_path, "step150-frozenlake-test", _model(0, 0), first_seed=5000)
    with pytest.raises(SystemExit, match=r"other than val's pick \(step 100\): step150-frozenlake-test"):
        _summary(tmp_path)


def test_checkpoints_on_other_levels_stop_the_analysis(tmp_path):
    _val(tmp_path, {100: {"sokoban": (20, 0)}})
    path = tmp_path / "step150-frozenlake-val.csv"
    original = path.read_text()
    path.write_text(original.replace("\n1000,", "\n999,"))
    with pytest.raises(SystemExit, match="step150-frozenlake-val did not play the start model's levels"):
        _summary(tmp_path)
    path.write_text(original.replace("\n1000,0000,", "\n1000,00ff,"))  # the same seed, another level
    with pytest.raises(SystemExit, match="step150-frozenlake-val did not play"):
        _summary(tmp_path)
    path.write_text(original)
    _test(tmp_path, 100, {})
    path = tmp_path / "step100-bandit-test.csv"
    path.write_text(path.read_text().replace("\n5099,", "\n5100,"))
    with pytest.raises(SystemExit, match="step100-bandit-test did not play the start model's levels"):
        _summary(tmp_path)


# The export: a runs folder as run.sh leaves it, on training-split levels (no val or test level is played here).
VAL_LEVELS = {game: LevelSplitter(game).seeds("train", 8) for game in GAMES}
TEST_LEVELS = {game: LevelSplitter(game).seeds("train", 8, start=64) for game in GAMES}


def _episode(game: str, seed: int, success: bool, format_errors: int) -> dict:
    """An episode record of three turns, the first ``format_errors`` of them with a reply that broke the format."""
    return {"env": game, "seed": seed, "success": success, "total_reward": float(success), "num_turns": 3,
            "turns": [{"turn": i + 1, "format_ok": i >= format_errors, "actions_executed": ["Up"]} for i in range(3)]}


def _evaluation(folder, game: str, seeds: list[int], wins: int, finished: bool = True) -> None:
    """An evaluation that won the first ``wins`` of ``seeds``; the episode on the i-th seed broke the format on
    i % 3 turns."""
    folder.mkdir(parents=True)
    with open(folder / "episodes.jsonl", "w") as handle:
        handle.writelines(json.dumps(_episode(game, seed, i < wins, i % 3)) + "\n" for i, seed in enumerate(seeds))
    if finished:
        (folder / "summary.json").write_text("{}")


def _runs_folder(root, finished: bool = True) -> None:
    """The training run (200 steps of metrics, per game and pooled) and every evaluation: on val the start model and
    every checkpoint win one level of eight, except step 100 on Sokoban, all eight (7/0, p = 0.016); on test the
    start model wins two, step 100 all eight (6/0, p = 0.031). Only step 200's Bandit val look may be unfinished."""
    run = root / analyze.RUN
    run.mkdir(parents=True)
    with open(run / "metrics.csv", "w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["step", "rollout/success_rate", "rollout/format_error_rate", "losses/approx_kl",
                         *(f"rollout/{g}/{m}" for g in GAMES for m in ("success_rate", "format_error_rate",
                                                                        "kept_fraction"))])
        writer.writerows([step, step / 400, 0.02, 0.01, *(v for i in range(3) for v in (i / 4 + step / 1000, i / 100,
                                                                                         0.5))]
                         for step in range(1, analyze.STEPS + 1))
    for game in GAMES:
        _evaluation(root / f"start-{game}-val", game, VAL_LEVELS[game], 1)
        for step in analyze.CHECKPOINTS:
            _evaluation(root / f"step{step}-{game}-val", game, VAL_LEVELS[game],
                        8 if (step, game) == (100, "sokoban") else 1, finished or (step, game) != (200, "bandit"))
        _evaluation(root / f"start-{game}-test", game, TEST_LEVELS[game], 2, finished)
        _evaluation(root / f"step100-{game}-test", game, TEST_LEVELS[game], 8, finished)
    _evaluation(root / "step100-frozenlake_det-val", "frozenlake_det", VAL_LEVELS["frozenlake"], 8)  # not the study's


def test_the_export_and_the_command_line_on_a_runs_folder(tmp_path, monkeypatch, capsys):
    _runs_folder(tmp_path / "runs")
    monkeypatch.setattr(analyze, "HERE", tmp_path)
    assert analyze.main([str(tmp_path / "runs"), "--export", str(tmp_path / "data")]) == 0
    data = tmp_path / "data"
    assert sorted(p.name for p in data.iterdir()) == sorted(
        ["train.csv", *(f"{n}.csv" for n in analyze.VAL)] + [f"{m}-{g}-test.csv" for g in GAMES
                                                             for m in ("start", "step100")])
    with open(data / "train.csv", newline="") as handle:
        rows = list(csv.reader(handle))
    assert rows[0] == ["step", "success_rate", "format_error_rate", "sokoban/success_rate",
                       "sokoban/format_error_rate", "frozenlake/success_rate", "frozenlake/format_error_rate",
                       "bandit/success_rate", "bandit/format_error_rate"]
    assert rows[3] == [str(v) for v in (3, 3 / 400, 0.02, 0 / 4 + 3 / 1000, 0.0, 1 / 4 + 3 / 1000, 0.01,
                                        2 / 4 + 3 / 1000, 0.02)]
    assert len(rows) == 1 + analyze.STEPS
    for game, name, wins in (("sokoban", "step100-sokoban-val", 8), ("bandit", "start-bandit-test", 2)):
        splitter = LevelSplitter(game)
        seeds = VAL_LEVELS[game] if name.endswith("-val") else TEST_LEVELS[game]
        with open(data / f"{name}.csv", newline="") as handle:
            rows = list(csv.reader(handle))
        # Bandit's preset is one level shared by every seed: its key is written as "shared"
        expected = sorted([seed, (splitter.level_key(seed) or b"shared").hex(), int(i < wins), 3, i % 3]
                          for i, seed in enumerate(seeds))
        assert rows == [COLUMNS] + [[str(v) for v in row] for row in expected]

    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary == json.loads(capsys.readouterr().out)
    assert summary["training"]["steps"] == analyze.STEPS
    assert summary["training"]["last_10_steps"]["frozenlake/success_rate"] == pytest.approx(
        1 / 4 + np.mean(range(191, 201)) / 1000)
    val = summary["val"]
    assert val["start"]["sokoban"]["distinct_levels"] == len(
        {LevelSplitter("sokoban").level_key(s) for s in VAL_LEVELS["sokoban"]})
    assert val["start"]["bandit"]["distinct_levels"] == 1
    # every episode of three turns broke the format on i % 3 of them: 0+1+2+0+1+2+0+1 of 24
    assert val["start"]["frozenlake"]["format_error_rate"] == pytest.approx(7 / 24)
    sokoban = val["checkpoints"]["100"]["games"]["sokoban"]
    assert (sokoban["model_only"], sokoban["start_only"], sokoban["call"]) == (7, 0, "higher")
    assert sokoban["mcnemar_p"] == pytest.approx(stats.binomtest(7, 7, 0.5).pvalue)
    assert val["qualifying"] == [100] and val["pick"] == 100
    test = summary["test"]
    assert [test["pick"][g]["mcnemar_p"] for g in GAMES] == pytest.approx([stats.binomtest(6, 6, 0.5).pvalue] * 3)
    assert test["higher_on_val"] == ["sokoban"] and test["higher_on_test"] == list(GAMES)
    assert summary["verdict"] == "confirmed" and summary["state"] == "complete"
    assert (tmp_path / "mixture.png").stat().st_size > 0
    # the compact data alone gives the same summary
    assert analyze.main([str(data)]) == 0
    assert json.loads((tmp_path / "summary.json").read_text()) == summary


def test_unfinished_evaluations_are_not_exported(tmp_path, monkeypatch):
    _runs_folder(tmp_path / "runs", finished=False)
    monkeypatch.setattr(analyze, "HERE", tmp_path)
    assert analyze.main([str(tmp_path / "runs"), "--export", str(tmp_path / "data")]) == 0
    assert not (tmp_path / "data" / "step200-bandit-val.csv").exists()
    assert not list((tmp_path / "data").glob("*-test.csv"))
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["state"] == "in progress: 200 of 200 training steps, 14 of 15 val evaluations"
    assert (tmp_path / "mixture.png").stat().st_size > 0


def test_a_missing_folder_is_a_usage_error_and_an_empty_runs_folder_is_in_progress(tmp_path, monkeypatch):
    summary = empty_study_summary(analyze, tmp_path, monkeypatch)
    assert summary == {"training": {"steps": 0, "steps_planned": 200},
                       "state": "in progress: 0 of 200 training steps, 0 of 15 val evaluations"}
