"""experiments/actions_per_turn/analyze.py: the plan's verdict rules on hand-made per-level outcomes written as its
compact data, checked against the tests computed here from scipy; and the export from a small runs folder of real
files (metrics.csv, episodes.jsonl with dropped actions) through the command line, against hand-counted figures."""

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
from tests.train.test_arm_comparison import holm_adjusted

analyze = load_script("experiments/actions_per_turn/analyze.py")
LEVELS = 200
OTHERS = (1, 2, 3, 7, 10)


def _write(folder, outcomes, train=None, dropped=0):
    """Compact data: level i succeeds where outcomes[i]; every episode plays 5 turns, the first ``dropped`` levels'
    episodes drop actions on 2 of them."""
    folder.mkdir(parents=True)
    with open(folder / "test.csv", "w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["seed", "level_key", "success", "turns", "turns_with_dropped"])
        writer.writerows([1000 + i, f"{i % 150:04x}", int(s), 5, 2 if i < dropped else 0]
                         for i, s in enumerate(outcomes))
    if train is not None:
        with open(folder / "train.csv", "w", newline="") as handle:
            writer = csv.writer(handle)
            writer.writerow(["step", "success_rate"])
            writer.writerows([step + 1, value] for step, value in enumerate(train))


def _outcomes(rate: float) -> np.ndarray:
    return np.arange(LEVELS) < round(rate * LEVELS)


def _study(root, rates: dict[int, list[float]], steps: int = analyze.STEPS, starts=analyze.ARMS):
    """Compact data where arm k's seed s succeeds on the first rates[k][s] share of the levels; the start model
    on the first 30% under every k in ``starts``; arm k's episodes drop actions on the first 10 k levels."""
    for k in analyze.ARMS:
        for s, rate in zip(analyze.SEEDS, rates[k]):
            _write(root / f"frozenlake_det__k{k}__seed{s}", _outcomes(rate), [0.3] * steps, dropped=10 * k)
    for k in starts:
        _write(root / f"start-k{k}", _outcomes(0.3))
    return analyze.analyse(*analyze.load(root))


def _check_tests(summary, rates):
    """Every comparison against k = 5 as computed here: per-level wins over the seeds (integers: the ranks of their
    means, with no float rounding to split tied differences), scipy's Wilcoxon, Holm by adjusted p, the seed side
    from the rates."""
    wins = {k: np.sum([_outcomes(r) for r in rates[k]], axis=0) for k in analyze.ARMS}
    pvalues = [float(stats.wilcoxon(wins[k], wins[5]).pvalue) if np.any(wins[k] != wins[5]) else 1.0
               for k in OTHERS]
    for k, p, adjusted in zip(OTHERS, pvalues, holm_adjusted(pvalues)):
        test = summary["tests"][f"k{k}_vs_k5"]
        assert test["wilcoxon_p"] == pytest.approx(p, rel=1e-12)
        assert test["holm_significant"] == (adjusted <= 0.05)
        assert test["mean_difference"] == pytest.approx(np.mean(rates[k]) - np.mean(rates[5]), abs=1e-12)
        assert test["seed_side"] == (1 if min(rates[k]) > max(rates[5]) else -1 if max(rates[k]) < min(rates[5])
                                     else 0)


BASE = [0.5, 0.52, 0.54]


def test_one_action_worse_on_every_seed_and_no_arm_better_is_reproduced(tmp_path):
    rates = {1: [0.3, 0.32, 0.34], 2: BASE, 3: [0.48, 0.5, 0.52], 5: BASE, 7: [0.45, 0.5, 0.6], 10: BASE}
    summary = _study(tmp_path, rates)
    assert summary["state"] == "complete"
    assert (summary["levels"], summary["distinct_levels"]) == (LEVELS, 150)
    _check_tests(summary, rates)
    assert summary["tests"]["k1_vs_k5"]["call"] == "worse"
    assert summary["tests"]["k2_vs_k5"]["wilcoxon_p"] == 1.0
    assert summary["verdict"] == "reproduced"
    assert summary["k10_vs_k5"] == {"call": "neither", "verdict": "consistent"}
    assert summary["success"]["7"]["per_seed"] == pytest.approx([0.45, 0.5, 0.6])
    # k = 2, 5 and 10 share the highest mean, 0.52 (k = 7: 0.517); the first in the plan's order is named
    assert summary["best_arm"] == {"k": 2, "mean": pytest.approx(0.52)}
    start = summary["start_model"]["1"]
    assert start["success"] == pytest.approx(0.3)
    assert start["wilson95"] == pytest.approx(list(wilson_interval(60, LEVELS)))
    assert summary["gain_over_start"]["1"] == pytest.approx(np.mean([0.3, 0.32, 0.34]) - 0.3)
    # arm k drops actions on 2 of the 5 turns of its first 10 k levels, on every seed
    assert summary["dropped_share"]["3"] == {"share": pytest.approx(30 * 2 / (LEVELS * 5)),
                                            "per_seed": pytest.approx([30 * 2 / (LEVELS * 5)] * 3)}
    assert summary["mean_training_success"]["10"] == {"0": pytest.approx(0.3), "1": pytest.approx(0.3),
                                                      "2": pytest.approx(0.3)}


def test_some_arm_better_is_not_reproduced_though_one_action_is_worse(tmp_path):
    rates = {1: [0.3, 0.32, 0.34], 2: BASE, 3: [0.7, 0.72, 0.74], 5: BASE, 7: BASE, 10: [0.6, 0.62, 0.64]}
    summary = _study(tmp_path, rates)
    _check_tests(summary, rates)
    assert summary["tests"]["k1_vs_k5"]["call"] == "worse" and summary["tests"]["k3_vs_k5"]["call"] == "better"
    assert summary["verdict"] == "not reproduced"
    assert summary["k10_vs_k5"] == {"call": "better", "verdict": "not consistent"}
    assert summary["best_arm"]["k"] == 3


def test_one_action_below_but_carried_by_two_seeds_is_unclear(tmp_path):
    # k = 1's seed 0 lies above every seed of k = 5, yet the per-level means fall on many levels
    rates = {1: [0.55, 0.1, 0.1], 2: BASE, 3: BASE, 5: BASE, 7: BASE, 10: BASE}
    summary = _study(tmp_path, rates)
    _check_tests(summary, rates)
    test = summary["tests"]["k1_vs_k5"]
    assert test["holm_significant"] and test["mean_difference"] < 0 and test["seed_side"] == 0
    assert test["call"] == "neither"
    assert summary["verdict"] == "unclear"


def test_no_difference_is_not_reproduced(tmp_path):
    summary = _study(tmp_path, {k: BASE for k in analyze.ARMS})
    assert all(t["wilcoxon_p"] == 1.0 and not t["holm_significant"] for t in summary["tests"].values())
    assert summary["verdict"] == "not reproduced"


def test_an_unfinished_study_has_only_the_training_record(tmp_path):
    rates = {k: BASE for k in analyze.ARMS}
    partial = _study(tmp_path / "steps", rates, steps=analyze.STEPS - 1)
    assert partial["state"] == "in progress: 0 of 18 runs finished" and "verdict" not in partial
    # every run finished and evaluated, one start row missing: still no test
    no_start = _study(tmp_path / "start", rates, starts=(1, 2, 3, 5, 7))
    assert no_start["state"] == "in progress: 18 of 18 runs finished" and "tests" not in no_start
    assert no_start["mean_training_success"]["5"]["1"] == pytest.approx(0.3)


def test_a_checkpoint_on_other_levels_stops_the_analysis(tmp_path):
    rates = {k: BASE for k in analyze.ARMS}
    run = tmp_path / "frozenlake_det__k7__seed2"
    _study(tmp_path, rates)
    (run / "test.csv").write_text((run / "test.csv").read_text().replace("\n1000,", "\n999,"))
    with pytest.raises(SystemExit, match="did not play the start model's test levels"):
        analyze.analyse(*analyze.load(tmp_path))


# The export: a runs folder as run.sh leaves it, on training-split levels (the study's test block is not read here).
SEEDS_PLAYED = LevelSplitter("frozenlake_det").seeds("train", 4)


def _episode(seed: int, success: bool, dropped: list[int]) -> dict:
    """An episode record whose i-th turn dropped dropped[i] actions (the fields the export reads, and some others)."""
    return {"env": "frozenlake_det", "seed": seed, "success": success, "num_turns": len(dropped),
            "turns": [{"turn": i + 1, "actions_executed": ["Up"], "actions_dropped": ["Left"] * n}
                      for i, n in enumerate(dropped)]}


def _evaluation(folder, episodes: list[dict], finished: bool = True) -> None:
    folder.mkdir(parents=True)
    with open(folder / "episodes.jsonl", "w") as handle:
        handle.writelines(json.dumps(e) + "\n" for e in episodes)
    if finished:
        (folder / "summary.json").write_text("{}")


def _runs_folder(root, finished: bool = True):
    """Every run with 30 steps of metrics; run (k, s) wins the first (k + s) % 4 of the four levels, and its episode
    on level i plays i + 1 turns and drops two actions on i of them. The start model wins level 0 only and never drops
    actions."""
    for k in analyze.ARMS:
        for s in analyze.SEEDS:
            run = root / f"frozenlake_det__k{k}__seed{s}"
            run.mkdir(parents=True)
            with open(run / "metrics.csv", "w", newline="") as handle:
                writer = csv.writer(handle)
                writer.writerow(["step", "rollout/success_rate", "losses/approx_kl"])
                writer.writerows([step, (step % 4) / 4, 0.01] for step in range(1, analyze.STEPS + 1))
            episodes = [_episode(seed, i < (k + s) % 4, [2] * i + [0])
                        for i, seed in enumerate(reversed(SEEDS_PLAYED))]
            _evaluation(root / f"{run.name}-test", episodes, finished)
    for k in analyze.ARMS:
        _evaluation(root / f"start-k{k}-test", [_episode(seed, i == 0, [0, 0]) for i, seed in enumerate(SEEDS_PLAYED)])


def test_the_export_and_the_command_line_on_a_runs_folder(tmp_path, monkeypatch, capsys):
    _runs_folder(tmp_path / "runs")
    monkeypatch.setattr(analyze, "HERE", tmp_path)
    assert analyze.main([str(tmp_path / "runs"), "--export", str(tmp_path / "data")]) == 0
    data = tmp_path / "data"
    with open(data / "frozenlake_det__k3__seed1" / "train.csv", newline="") as handle:
        assert list(csv.reader(handle)) == [["step", "success_rate"]] + [
            [str(step), str((step % 4) / 4)] for step in range(1, analyze.STEPS + 1)]
    keys = [LevelSplitter("frozenlake_det").level_key(seed).hex() for seed in SEEDS_PLAYED]
    with open(data / "frozenlake_det__k3__seed1" / "test.csv", newline="") as handle:
        rows = list(csv.reader(handle))
    # (3 + 1) % 4 = 0 wins; level i (by position in the reversed list) dropped actions on i turns of i + 1
    expected = sorted([seed, keys[j], 0, 4 - j, 3 - j] for j, seed in enumerate(SEEDS_PLAYED))
    assert rows == [["seed", "level_key", "success", "turns", "turns_with_dropped"]] + [
        [str(v) for v in row] for row in expected]
    with open(data / "start-k10" / "test.csv", newline="") as handle:
        assert [r["success"] for r in csv.DictReader(handle)] == ["1", "0", "0", "0"]

    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary == json.loads(capsys.readouterr().out)
    assert summary["state"] == "complete" and summary["levels"] == 4
    assert summary["distinct_levels"] == len(set(keys))
    for k in analyze.ARMS:
        wins = [(k + s) % 4 / 4 for s in analyze.SEEDS]
        assert summary["success"][str(k)]["per_seed"] == pytest.approx(wins)
        assert summary["gain_over_start"][str(k)] == pytest.approx(np.mean(wins) - 0.25)
        # every seed: 0 + 1 + 2 + 3 dropping turns of 1 + 2 + 3 + 4 (the share of turns, not a mean of episodes')
        assert summary["dropped_share"][str(k)] == {"share": pytest.approx(6 / 10),
                                                    "per_seed": pytest.approx([6 / 10] * 3)}
        assert summary["start_model"][str(k)]["dropped_share"] == 0.0
        assert summary["mean_training_success"][str(k)] == {str(s): pytest.approx(np.mean(
            [(step % 4) / 4 for step in range(1, 31)])) for s in analyze.SEEDS}
    assert (tmp_path / "actions.png").stat().st_size > 0


def test_unfinished_evaluations_are_not_exported(tmp_path, monkeypatch):
    _runs_folder(tmp_path / "runs", finished=False)
    monkeypatch.setattr(analyze, "HERE", tmp_path)
    assert analyze.main([str(tmp_path / "runs"), "--export", str(tmp_path / "data")]) == 0
    assert not list((tmp_path / "data").glob("frozenlake_det__*/test.csv"))
    assert len(list((tmp_path / "data").glob("start-k*/test.csv"))) == 6
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["state"] == "in progress: 18 of 18 runs finished" and "verdict" not in summary


def test_a_missing_folder_is_a_usage_error_and_an_empty_runs_folder_is_in_progress(tmp_path, monkeypatch):
    summary = empty_study_summary(analyze, tmp_path, monkeypatch)
    assert summary["state"] == "in progress: 0 of 18 runs finished"
