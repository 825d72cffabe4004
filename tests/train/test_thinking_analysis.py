"""experiments/thinking_model/analyze.py: the plan's val report and pick and its four test gates on hand-made compact
data (per-level outcomes and per-evaluation figures), with McNemar p checked against scipy's exact binomial test on
the discordant levels, Wilson intervals against the score formula written out here, and pooled ratios against sums
done here; a test that passes every gate and one that fails each; the states and refusals of unfinished or stray
looks; and the export from hand-built run directories of real episode records (oracle play with templated thoughts on
training-split levels, summarised by ragen-eval's own summarize) through the command line."""

from __future__ import annotations

import csv
import json
import math
import os
import subprocess

import numpy as np
import pytest
from scipy import stats

from ragen_envs.splits import LevelSplitter
from ragen_eval.summary import summarize
from ragen_train.demos import DemoConfig, iter_demos
from tests.script_modules import REPO, load_script
from tests.train.study_cli import empty_study_summary

analyze = load_script("experiments/thinking_model/analyze.py")
PRESETS = analyze.PRESETS
LEVELS = 40
RANDOM, V13, MODEL = 8, 20, 30  # by default each wins its first this many levels of every preset


def _wins(n: int) -> np.ndarray:
    return np.arange(LEVELS) < n


def _write(root, name: str, preset: str, split: str, outcomes, *, model: str | None = None, turns: int = 100,
           thought_turns: int | None = None, n_claims: int = 200, n_true: int | None = None,
           format_error_rate: float = 0.0) -> None:
    """DIR/<name>-<preset>-<split>.csv and .json: level i (seed first + i, one of LEVELS - 5 level keys) won where
    outcomes[i]; the figures as given (every turn with a thought and every claim true unless told)."""
    key = f"{name}-{preset}-{split}"
    first = 1000 if split == "val" else 5000
    root.mkdir(parents=True, exist_ok=True)
    with open(root / f"{key}.csv", "w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["seed", "level_key", "success"])
        writer.writerows([first + i, f"{i % (LEVELS - 5):04x}", int(won)] for i, won in enumerate(outcomes))
    n_true = n_claims if n_true is None else n_true
    figure = {"model": model or {"v13": "default", "random": "random"}.get(name, f"runs/{name}"), "split": split,
              "seed_start": 0 if split == "val" else 2560, "format_error_rate": format_error_rate,
              "think_words_per_turn": 40.0, "turns": turns,
              "thought_turns": turns if thought_turns is None else thought_turns,
              "consistency": {"n_turns": turns, "n_claims": n_claims, "n_true": n_true,
                              "claims_per_turn": n_claims / turns,
                              "claim_accuracy": n_true / n_claims if n_claims else None,
                              "hallucination_rate": 0.1, "plan_answer_agreement": 0.9}}
    (root / f"{key}.json").write_text(json.dumps(figure))


def _baselines(root, split: str) -> None:
    for preset in PRESETS:
        _write(root, "random", preset, split, _wins(RANDOM), n_claims=0, thought_turns=0)
        _write(root, "v13", preset, split, _wins(V13), n_claims=0, thought_turns=0)


def _model(root, name: str, split: str, outcomes: dict | None = None, **figures: dict) -> None:
    """NAME on every preset: outcomes[preset] where given, else its first MODEL levels won; figures[field][preset]
    where given."""
    for preset in PRESETS:
        _write(root, name, preset, split, (outcomes or {}).get(preset, _wins(MODEL)),
               **{field: values[preset] for field, values in figures.items() if preset in values})


def _summary(root) -> dict:
    return analyze.analyse(*analyze.load(root))


def _mcnemar_p(only_a: int, only_b: int) -> float:
    return float(stats.binomtest(only_a, only_a + only_b, 0.5).pvalue) if only_a + only_b else 1.0


def _wilson(k: int, n: int) -> list[float]:
    """The Wilson score interval at 95%, written out."""
    z = stats.norm.ppf(0.975)
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z / (1 + z * z / n) * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return [max(0.0, centre - half), min(1.0, centre + half)]


def test_val_reports_every_preset_against_random_and_v13(tmp_path):
    _baselines(tmp_path, "val")
    lake = _wins(MODEL)
    lake[MODEL - 12:MODEL] = False  # 18 wins: 10 over random's, 2 fewer than v13's
    _model(tmp_path, "t1", "val", {"frozenlake_8x8": lake}, n_claims={"frozenlake": 400}, n_true={"frozenlake": 300},
           turns={"bandit": 200}, thought_turns={"bandit": 194}, format_error_rate={"boxoban": 0.05})
    summary = _summary(tmp_path)
    assert summary["state"] == "in progress: val picked t1, 0 of 39 test evaluations"
    val = summary["val"]
    row = val["candidates"]["t1"]["presets"]["simple_sokoban"]
    assert (row["levels"], row["distinct_levels"], row["wins"]) == (LEVELS, LEVELS - 5, MODEL)
    assert row["success"] == pytest.approx(MODEL / LEVELS)
    assert row["wilson95"] == pytest.approx(_wilson(MODEL, LEVELS), rel=1e-12)
    assert row["vs_random"] == {"difference": pytest.approx((MODEL - RANDOM) / LEVELS), "model_only": MODEL - RANDOM,
                                "other_only": 0, "mcnemar_p": pytest.approx(_mcnemar_p(MODEL - RANDOM, 0), rel=1e-9)}
    assert row["vs_v13"]["mcnemar_p"] == pytest.approx(_mcnemar_p(MODEL - V13, 0), rel=1e-9)
    lake_row = val["candidates"]["t1"]["presets"]["frozenlake_8x8"]
    assert (lake_row["vs_v13"]["model_only"], lake_row["vs_v13"]["other_only"]) == (0, 2)
    assert lake_row["vs_v13"]["mcnemar_p"] == pytest.approx(_mcnemar_p(0, 2))  # 0.5
    rows = val["candidates"]["t1"]["presets"]
    assert rows["frozenlake"]["claim_accuracy"] == pytest.approx(0.75)
    assert rows["bandit"]["turns_with_thought"] == pytest.approx(0.97)
    assert rows["frozenlake"]["claims_per_turn"] == 4.0
    assert rows["boxoban"]["format_error_rate"] == 0.05
    assert (rows["bandit"]["claims_per_turn"], rows["bandit"]["hallucination_rate"],
            rows["bandit"]["plan_answer_agreement"], rows["bandit"]["think_words_per_turn"]) == (1.0, 0.1, 0.9, 40.0)
    assert val["baselines"]["random"]["larger_sokoban"]["wins"] == RANDOM
    assert "vs_random" not in val["baselines"]["v13"]["larger_sokoban"]
    # the gates judged on val, pooled over a game's presets (not the mean of their ratios, which would give the lakes
    # 0.917 and Bandit's thoughts 0.99, a pass): lake claims 300 + 200 + 200 of 800, Bandit thoughts 194 + 100 + 100
    # of 400
    gates = val["candidates"]["t1"]["gates"]
    first = gates["1_thoughts_and_claims"]["per_game"]
    assert first["frozenlake"]["claim_accuracy"] == pytest.approx(700 / 800)
    assert first["bandit"]["turns_with_thought"] == pytest.approx(394 / 400)
    assert [first[g]["pass"] for g in ("sokoban", "frozenlake", "bandit")] == [True, False, False]
    assert gates["2_format_errors"]["failing"] == ["boxoban"]
    assert gates["3_against_random"]["not_significantly_above"] == []  # 10/0 over random on the 8x8 lake: p = 0.002
    assert (gates["passed"], gates["all_pass"]) == (2, False)
    # the stop check: claims pooled over every preset, 12 * 200 + 300 of 12 * 200 + 400
    check = val["candidates"]["t1"]["stop_check"]
    assert check["claim_accuracy"] == pytest.approx((12 * 200 + 300) / (12 * 200 + 400))
    assert check == {"claim_accuracy": check["claim_accuracy"], "sokoban_below_v13": [], "stop": False}
    assert val["pick"] == "t1"


def test_the_stop_check_and_the_pick_among_candidates(tmp_path):
    _baselines(tmp_path, "val")
    # t1: four gates on val, success 30 everywhere; t2: higher success but a format-error gate failed
    _model(tmp_path, "t1", "val")
    _model(tmp_path, "t2", "val", {p: _wins(35) for p in PRESETS}, format_error_rate={"bandit_reversed": 0.02})
    # t3: a Sokoban preset 12 levels below v13 (p < 0.05; no better than random) and claims at 0.94 everywhere: stop
    _model(tmp_path, "t3", "val", {"larger_sokoban": _wins(V13 - 12)}, n_true={p: 188 for p in PRESETS})
    # curve points on some presets only
    _write(tmp_path, "step250", "sokoban", "val", _wins(2), n_true=50)
    _write(tmp_path, "step250", "simple_sokoban", "val", _wins(4), n_true=150)
    _write(tmp_path, "step3000", "bandit", "val", _wins(25))
    val = _summary(tmp_path)["val"]
    candidates = val["candidates"]
    assert sorted(candidates) == ["t1", "t2", "t3"]
    assert [candidates[n]["gates"]["passed"] for n in ("t1", "t2", "t3")] == [4, 3, 2]
    assert candidates["t2"]["gates"]["2_format_errors"]["failing"] == ["bandit_reversed"]  # 2% is not below 2%
    assert candidates["t2"]["mean_success"] == pytest.approx(35 / LEVELS)
    assert val["pick"] == "t1"
    check = candidates["t3"]["stop_check"]
    assert check["claim_accuracy"] == pytest.approx(0.94) and check["sokoban_below_v13"] == ["larger_sokoban"]
    assert check["stop"] and not candidates["t1"]["stop_check"]["stop"]
    assert candidates["t3"]["gates"]["3_against_random"]["not_significantly_above"] == ["larger_sokoban"]
    assert candidates["t3"]["presets"]["larger_sokoban"]["vs_v13"]["mcnemar_p"] == pytest.approx(_mcnemar_p(0, 12))
    assert list(val["curve"]) == ["step250", "step3000"]
    point = val["curve"]["step250"]
    assert point["step"] == 250 and sorted(point["presets"]) == ["simple_sokoban", "sokoban"]
    assert point["games"] == {"sokoban": {"presets": 2, "success": pytest.approx(6 / (2 * LEVELS)),
                                          "claim_accuracy": pytest.approx(200 / 400)}}
    assert val["curve"]["step3000"]["games"]["bandit"]["success"] == pytest.approx(25 / LEVELS)
    # equal gates: the higher mean success over the presets; equal success too: the earlier stage
    _model(tmp_path, "t2", "val", {p: _wins(35) for p in PRESETS})
    assert _summary(tmp_path)["val"]["pick"] == "t2"
    _model(tmp_path, "t2", "val")
    assert _summary(tmp_path)["val"]["pick"] == "t1"
    # plan3.md's stage P is a candidate after every tK: picked on higher success, not on a tie with an earlier stage
    _model(tmp_path, "p", "val")
    assert sorted(_summary(tmp_path)["val"]["candidates"]) == ["p", "t1", "t2", "t3"]
    assert _summary(tmp_path)["val"]["pick"] == "t1"
    _model(tmp_path, "p", "val", {p: _wins(35) for p in PRESETS})
    assert _summary(tmp_path)["val"]["pick"] == "p"
    # plan4.md's stage Q2 comes after P: equal to it, P stays the pick; ahead of it, Q2 is
    _model(tmp_path, "q2", "val", {p: _wins(35) for p in PRESETS})
    assert sorted(_summary(tmp_path)["val"]["candidates"]) == ["p", "q2", "t1", "t2", "t3"]
    assert _summary(tmp_path)["val"]["pick"] == "p"
    _model(tmp_path, "q2", "val", {p: _wins(36) for p in PRESETS})
    assert _summary(tmp_path)["val"]["pick"] == "q2"
    # plan5.md's stage S comes after Q2, the same way; a chunk copy ("step...") is never a candidate
    _model(tmp_path, "s", "val", {p: _wins(36) for p in PRESETS})
    assert sorted(_summary(tmp_path)["val"]["candidates"]) == ["p", "q2", "s", "t1", "t2", "t3"]
    assert _summary(tmp_path)["val"]["pick"] == "q2"
    _model(tmp_path, "s", "val", {p: _wins(37) for p in PRESETS})
    assert _summary(tmp_path)["val"]["pick"] == "s"


def test_stage_s_stops_on_val_where_gate_1_or_2_fails(tmp_path):
    """plan5.md: S stops with no test look where it fails gate 1 or 2 on val, whatever T1's claim and v13 check says;
    a test evaluation after that stop is refused."""
    _baselines(tmp_path, "val")
    _model(tmp_path, "s", "val")
    summary = _summary(tmp_path)
    assert summary["val"]["candidates"]["s"]["stop_check"]["val_gates_failed"] == []
    assert summary["state"] == "in progress: val picked s, 0 of 39 test evaluations"
    # gate 2 alone: 0.051 of bandit_heldout's turns; claims all true and no preset behind v13 (T1's check would go on)
    _model(tmp_path, "s", "val", format_error_rate={"bandit_heldout": 0.051})
    summary = _summary(tmp_path)
    check = summary["val"]["candidates"]["s"]["stop_check"]
    assert check["val_gates_failed"] == ["2"] and check["stop"]
    assert check["claim_accuracy"] == pytest.approx(1.0) and check["sokoban_below_v13"] == []
    assert summary["state"] == "stopped: val picked s, whose stop check says stop; no test look"
    # gate 1 as well: bandit's thoughts on 97 of 100 turns pool below 99% over the game's three presets
    _model(tmp_path, "s", "val", format_error_rate={"bandit_heldout": 0.051}, thought_turns={p: 97 for p in PRESETS})
    assert _summary(tmp_path)["val"]["candidates"]["s"]["stop_check"]["val_gates_failed"] == ["1", "2"]
    _write(tmp_path, "s", "sokoban", "test", _wins(MODEL))
    with pytest.raises(SystemExit, match="after val's pick \\(s\\) stopped"):
        _summary(tmp_path)


def test_stage_s6_is_a_candidate_after_s_and_stops_on_val_as_s_does(tmp_path):
    """plan6.md: S6 is judged beside S's committed val runs; where S fails gate 2 and S6 passes every gate, val picks
    S6 and the test look may follow; where S6 fails gate 1 or 2 it stops as S does."""
    _baselines(tmp_path, "val")
    _model(tmp_path, "s", "val", format_error_rate={"bandit_heldout": 0.051})
    _model(tmp_path, "s6", "val")
    summary = _summary(tmp_path)
    assert list(summary["val"]["candidates"]) == ["s", "s6"]
    assert summary["val"]["candidates"]["s"]["stop_check"]["stop"]
    assert summary["state"] == "in progress: val picked s6, 0 of 39 test evaluations"
    _model(tmp_path, "s6", "val", format_error_rate={"bandit_reversed": 0.03})
    summary = _summary(tmp_path)
    assert summary["val"]["candidates"]["s6"]["stop_check"]["val_gates_failed"] == ["2"]
    assert summary["state"].startswith("stopped: val picked s")



def test_stage_s7_comes_after_s6_and_val_picks_the_better_of_two_that_pass(tmp_path):
    """plan7.md: S7 is a candidate after S6 and stops on val as S6 does; where both pass gates 1 and 2, val picks
    between them by the plan's selection (more successes first), not by their order."""
    _baselines(tmp_path, "val")
    _model(tmp_path, "s6", "val")
    _model(tmp_path, "s7", "val", format_error_rate={"bandit_heldout": 0.03})
    summary = _summary(tmp_path)
    assert list(summary["val"]["candidates"]) == ["s6", "s7"]
    assert summary["val"]["candidates"]["s7"]["stop_check"]["val_gates_failed"] == ["2"]
    assert summary["state"] == "in progress: val picked s6, 0 of 39 test evaluations"
    _model(tmp_path, "s7", "val")
    assert _summary(tmp_path)["val"]["pick"] == "s6"  # the same figures: the earlier stage
    _model(tmp_path, "s6", "val", outcomes={preset: _wins(V13) for preset in PRESETS})
    assert _summary(tmp_path)["val"]["pick"] == "s7"

def test_a_test_that_passes_every_gate_ships(tmp_path):
    _baselines(tmp_path, "val")
    _model(tmp_path, "t1", "val")
    _baselines(tmp_path, "test")
    behind = _wins(V13)
    behind[:5] = False  # sokoban: 5 levels fewer than v13, p = 0.0625: no significant loss
    _model(tmp_path, "t1", "test", {"boxoban": _wins(RANDOM + 5), "sokoban": behind},
           format_error_rate={"boxoban_hard": 0.0199}, thought_turns={"bandit_heldout": 97})
    summary = _summary(tmp_path)
    assert summary["state"] == "complete" and summary["verdict"] == "ship"
    test = summary["test"]
    assert test["pick"] == "t1" and test["failed"] == []
    gates = test["gates"]
    assert [gates[g]["pass"] for g in ("1_thoughts_and_claims", "2_format_errors", "3_against_random",
                                       "4_against_v13")] == [True] * 4 and gates["all_pass"]
    assert gates["1_thoughts_and_claims"]["per_game"]["bandit"]["turns_with_thought"] == pytest.approx(297 / 300)
    # boxoban is not among the presets that must beat random: 5/0 (p = 0.0625) is enough there
    assert test["presets"]["boxoban"]["vs_random"]["mcnemar_p"] == pytest.approx(_mcnemar_p(5, 0))
    sokoban = test["presets"]["sokoban"]["vs_v13"]
    assert (sokoban["model_only"], sokoban["other_only"]) == (0, 5)
    assert sokoban["difference"] == pytest.approx(-5 / LEVELS)
    assert sokoban["mcnemar_p"] == pytest.approx(_mcnemar_p(0, 5))
    assert test["baselines"]["v13"]["frozenlake"]["wins"] == V13


@pytest.fixture
def passing(tmp_path):
    _baselines(tmp_path, "val")
    _model(tmp_path, "t1", "val")
    _baselines(tmp_path, "test")
    return tmp_path


def test_a_test_that_fails_the_gates_says_which_and_why(passing):
    lake = _wins(RANDOM)
    lake[RANDOM:RANDOM + 4] = True  # 4/0 over random: p = 0.125, not above
    behind = _wins(V13)
    behind[:8] = False  # sokoban: 8 fewer than v13 (0/8: p = 0.008); against random 12/8, p = 0.50
    _model(passing, "t1", "test", {"frozenlake_8x8": lake, "sokoban": behind, "boxoban": _wins(2)},
           thought_turns={"frozenlake": 98, "frozenlake_det": 98}, format_error_rate={"frozenlake_det": 0.02})
    summary = _summary(passing)
    test = summary["test"]
    assert test["failed"] == ["1_thoughts_and_claims", "2_format_errors", "3_against_random", "4_against_v13"]
    assert summary["verdict"] == ("do not ship: gate 1_thoughts_and_claims, 2_format_errors, 3_against_random, "
                                  "4_against_v13 failed")
    gates = test["gates"]
    assert gates["1_thoughts_and_claims"]["per_game"]["frozenlake"]["turns_with_thought"] == pytest.approx(296 / 300)
    assert gates["1_thoughts_and_claims"]["per_game"]["sokoban"]["pass"]
    assert gates["2_format_errors"]["failing"] == ["frozenlake_det"]
    third = gates["3_against_random"]
    # boxoban: 2 wins against random's 8, p = 0.031: significantly below (no "above" is asked of boxoban)
    assert third["significantly_below"] == ["boxoban"]
    assert third["per_preset"]["boxoban"]["mcnemar_p"] == pytest.approx(_mcnemar_p(0, 6))
    assert third["not_significantly_above"] == ["frozenlake_8x8"]
    assert third["per_preset"]["frozenlake_8x8"]["mcnemar_p"] == pytest.approx(_mcnemar_p(4, 0))
    fourth = gates["4_against_v13"]
    assert fourth["significantly_below"] == ["sokoban"]
    assert fourth["per_preset"]["sokoban"]["mcnemar_p"] == pytest.approx(_mcnemar_p(0, 8))
    assert (fourth["per_preset"]["sokoban"]["model_only"], fourth["per_preset"]["sokoban"]["other_only"]) == (0, 8)
    assert third["per_preset"]["sokoban"]["mcnemar_p"] == pytest.approx(_mcnemar_p(12, 8))
    assert gates["passed"] == 0


def test_unfinished_and_stray_looks(tmp_path):
    assert _summary(tmp_path) == {"state": "in progress: 0 of 26 val evaluations of v13 and random"}
    _write(tmp_path, "t1", "bandit", "test", _wins(MODEL))
    with pytest.raises(SystemExit, match="before val finished: t1-bandit-test"):
        _summary(tmp_path)
    (tmp_path / "t1-bandit-test.csv").unlink()
    _baselines(tmp_path, "val")
    _model(tmp_path, "step500", "val")
    summary = _summary(tmp_path)
    assert summary["state"] == "in progress: no candidate (tK or p) has played every preset of val"
    assert summary["val"]["pick"] is None and list(summary["val"]["curve"]) == ["step500"]
    _write(tmp_path, "t1", "bandit", "test", _wins(MODEL))
    with pytest.raises(SystemExit, match="before val picked a candidate: t1-bandit-test"):
        _summary(tmp_path)
    _model(tmp_path, "t1", "val")
    _write(tmp_path, "v13", "bandit", "test", _wins(V13))
    assert _summary(tmp_path)["state"] == "in progress: val picked t1, 2 of 39 test evaluations"
    _write(tmp_path, "step500", "bandit", "test", _wins(MODEL))
    with pytest.raises(SystemExit, match=r"other than val's pick \(t1\) and the baselines: step500-bandit-test"):
        _summary(tmp_path)
    (tmp_path / "step500-bandit-test.csv").unlink()
    _write(tmp_path, "v13", "bandit", "val", _wins(V13), model="runs/sft-t1")
    with pytest.raises(SystemExit, match="v13-bandit-val played runs/sft-t1, not default"):
        _summary(tmp_path)
    _write(tmp_path, "v13", "bandit", "val", _wins(V13))
    _write(tmp_path, "t1", "bandit", "test", _wins(MODEL))
    figure = json.loads((tmp_path / "t1-bandit-test.json").read_text())
    (tmp_path / "t1-bandit-test.json").write_text(json.dumps({**figure, "split": "val"}))
    with pytest.raises(SystemExit, match="t1-bandit-test played the val split"):
        _summary(tmp_path)
    (tmp_path / "t1-bandit-test.csv").unlink()
    path = tmp_path / "t1-boxoban-val.csv"
    path.write_text(path.read_text().replace("\n1003,0003,", "\n1003,00ff,"))  # the same seed, another level
    with pytest.raises(SystemExit, match="t1-boxoban-val did not play the same levels"):
        _summary(tmp_path)


# The export: run directories as evaluate.sh leaves them, holding real records of oracle play with templated
# thoughts on training-split levels (no val or test level is played here), summarised by ragen-eval's summarize.
def _run_dir(root, name: str, preset: str, model: str, episodes: int = 3, blank: int = 0,
             finished: bool = True) -> list[dict]:
    """OUT/NAME-PRESET-val with ``episodes`` oracle episodes, the thoughts of the first ``blank`` turns erased."""
    records = [demo.record for demo in iter_demos(DemoConfig(env=preset, mode="oracle", num_episodes=episodes,
                                                             seed=3, thought="templated"))]
    turns = [turn for record in records for turn in record["turns"]]
    for turn in turns[:blank]:
        turn["think"] = ""
    folder = root / f"{name}-{preset}-val"
    folder.mkdir(parents=True)
    (folder / "config.json").write_text(json.dumps({"eval_config": {"model": model, "split": "val",
                                                                    "seed_start": 0}}))
    with open(folder / "episodes.jsonl", "w") as handle:
        handle.writelines(json.dumps(record) + "\n" for record in records)
    if finished:
        (folder / "summary.json").write_text(json.dumps(summarize(records, [preset])))
    return records


def test_the_export_and_the_command_line_on_run_directories(tmp_path, monkeypatch, capsys):
    runs = tmp_path / "runs"
    records = _run_dir(runs, "v13", "frozenlake", "default", blank=2)
    _run_dir(runs, "random", "frozenlake", "random")
    _run_dir(runs, "t1", "bandit", "runs/sft-t1", finished=False)
    (runs / "notes").mkdir()
    monkeypatch.setattr(analyze, "HERE", tmp_path)
    assert analyze.main([str(runs), "--export", str(tmp_path / "data")]) == 0
    data = tmp_path / "data"
    assert sorted(p.name for p in data.iterdir()) == sorted(f"{n}-frozenlake-val.{ext}" for n in ("v13", "random")
                                                            for ext in ("csv", "json"))
    splitter = LevelSplitter("frozenlake")
    with open(data / "v13-frozenlake-val.csv", newline="") as handle:
        rows = list(csv.reader(handle))
    assert rows == [["seed", "level_key", "success"]] + sorted(
        [str(r["seed"]), splitter.level_key(r["seed"]).hex(), str(int(r["success"]))] for r in records)
    figure = json.loads((data / "v13-frozenlake-val.json").read_text())
    turns = sum(len(r["turns"]) for r in records)
    expected = summarize(records, ["frozenlake"])["per_env"]["frozenlake"]
    assert figure == {"model": "default", "split": "val", "seed_start": 0,
                      "format_error_rate": 0.0, "think_words_per_turn": expected["think_words_per_turn"],
                      "turns": turns, "thought_turns": turns - 2,
                      "consistency": {k: expected["consistency"][k] for k in analyze.CONSISTENCY}}
    # the templated thoughts are true; two erased ones make no claim
    assert figure["consistency"]["claim_accuracy"] == 1.0 and figure["consistency"]["n_turns"] == turns
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary == json.loads(capsys.readouterr().out)
    assert summary == {"state": "in progress: 2 of 26 val evaluations of v13 and random"}
    assert (tmp_path / "thinking.png").stat().st_size > 0
    # the compact data alone gives the same summary
    assert analyze.main([str(data)]) == 0
    assert json.loads((tmp_path / "summary.json").read_text()) == summary


def test_a_missing_folder_is_a_usage_error_and_an_empty_runs_folder_is_in_progress(tmp_path, monkeypatch):
    summary = empty_study_summary(analyze, tmp_path, monkeypatch)
    assert summary == {"state": "in progress: 0 of 26 val evaluations of v13 and random"}


# evaluate.sh, with a stand-in for ragen-eval on PATH that records its arguments and finishes the run at once.
def _evaluate(tmp_path, *args: str) -> subprocess.CompletedProcess:
    bin_dir = tmp_path / "bin"
    if not bin_dir.is_dir():
        bin_dir.mkdir()
        fake = bin_dir / "ragen-eval"
        fake.write_text('#!/usr/bin/env bash\nargs="$*"\n'
                        'while [ $# -gt 0 ]; do case $1 in --out) out=$2 ;; --run-name) run=$2 ;; esac; shift; done\n'
                        'mkdir -p "$out/$run" && echo "$args" > "$out/$run/args"\n'
                        'echo {} > "$out/$run/summary.json"\n')
        fake.chmod(0o755)
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}
    return subprocess.run(["bash", str(REPO / "experiments/thinking_model/evaluate.sh"), *args], env=env,
                          capture_output=True, text=True, timeout=60)


def test_evaluate_plays_every_preset_on_val_and_skips_finished_runs(tmp_path):
    out = tmp_path / "eval"
    assert _evaluate(tmp_path, str(out), "val", "random", "random").returncode == 0
    assert sorted(p.name for p in out.iterdir()) == sorted(f"random-{p}-val" for p in PRESETS)
    for preset in PRESETS:
        episodes = 1024 if preset in ("frozenlake", "frozenlake_8x8") else 256
        assert (out / f"random-{preset}-val" / "args").read_text().split() == [
            "--model", "random", "--env", preset, "--split", "val", "--seed-start", "0", "--episodes", str(episodes),
            "--out", str(out), "--run-name", f"random-{preset}-val", "--no-progress"]
    checkpoint = tmp_path / "snapshots" / "step_250"
    checkpoint.mkdir(parents=True)
    (out / "random-bandit-val" / "summary.json").unlink()  # an unfinished run is played again (ragen-eval resumes it)
    (out / "random-boxoban-val" / "args").unlink()
    assert _evaluate(tmp_path, str(out), "val", "random", "random").returncode == 0
    assert (out / "random-bandit-val" / "summary.json").is_file() and not (out / "random-boxoban-val" / "args").exists()
    assert _evaluate(tmp_path, str(out), "val", str(checkpoint), "step250").returncode == 0
    assert (out / "step250-frozenlake-val" / "args").read_text().split()[:4] == ["--model", str(checkpoint),
                                                                                 "--backend", "hf"]
    assert _evaluate(tmp_path, str(out), "val", "default", "v13").returncode == 0
    assert (out / "v13-sokoban-val" / "args").read_text().split()[:4] == ["--model", "default", "--backend", "hf"]


@pytest.mark.parametrize("args, message", [
    (("val", "runs/missing", "t1"), "no checkpoint folder runs/missing"),
    (("train", "default", "v13"), "unknown split train"),
    (("val", "default", "v-13"), "NAME is letters, digits and _"),
])
def test_evaluate_refuses_bad_arguments_before_playing(tmp_path, args, message):
    done = _evaluate(tmp_path, str(tmp_path / "eval"), *args)
    assert done.returncode == 2 and message in done.stderr
    assert not (tmp_path / "eval").exists()


def test_evaluate_plays_only_the_presets_named_on_val(tmp_path, monkeypatch):
    out = tmp_path / "eval"
    monkeypatch.setenv("ONLY", "larger_sokoban frozenlake_8x8")
    assert _evaluate(tmp_path, str(out), "val", "random", "g1").returncode == 0
    assert sorted(p.name for p in out.iterdir()) == ["g1-frozenlake_8x8-val", "g1-larger_sokoban-val"]
    for only, message in (("larger_sokoban", "ONLY is for val"), ("larger_sokoban sokobann", "ONLY names sokobann")):
        monkeypatch.setenv("ONLY", only)
        split = "test" if message.startswith("ONLY is") else "val"
        done = _evaluate(tmp_path, str(tmp_path / "other"), split, "random", "random")
        assert done.returncode == 2 and message in done.stderr and not (tmp_path / "other").exists()
