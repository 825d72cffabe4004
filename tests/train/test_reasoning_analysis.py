"""experiments/reasoning_reward/analyze.py: the plan's verdict rules and test 2's calls on hand-made per-level
outcomes written as its compact data, checked against the tests computed here from scipy; episodes without a
checkable claim left out of the claim-accuracy pairs; and the export from a small runs folder of real files
(metrics.csv as the trainer writes it, episodes.jsonl played on real train-split levels with hand-written thoughts)
through the command line, against hand-counted verdicts and words."""

from __future__ import annotations

import csv
import json
from fractions import Fraction

import numpy as np
import pytest
from scipy import stats

from ragen_envs.splits import LevelSplitter
from ragen_envs.text import TextEpisode
from ragen_eval.stats import wilson_interval
from tests.script_modules import load_script
from tests.train.study_cli import empty_study_summary

analyze = load_script("experiments/reasoning_reward/analyze.py")
LEVELS = 200
TURNS = 5
CLAIMS = 10  # checkable claims per episode in the hand-made data
COLUMNS = ["seed", "level_key", "success", "true_claims", "checkable_claims", "think_words", "turns",
           "format_error_turns"]


def _first(share: float) -> np.ndarray:
    return np.arange(LEVELS) < round(share * LEVELS)


class Spec:
    """One evaluation's hand-made episodes: success on the first ``success`` share of the levels; ``false`` of
    the 10 claims false on the first ``wrong`` share; ``words`` think words per turn, ``short_words`` on the first
    ``short`` share; no checkable claim on the levels in ``silent``; a format-error turn on the first 20 levels."""

    def __init__(self, success=0.3, wrong=0.2, false=2, words=40, short=0.0, short_words=40, silent=()):
        self.success, self.wrong, self.short = _first(success), _first(wrong), _first(short)
        self.false, self.words, self.short_words, self.silent = false, words, short_words, set(silent)

    def counts(self) -> list[tuple[int, ...]]:
        """Per level: (success, true claims, checkable claims, think words, turns, format-error turns)."""
        out = []
        for i in range(LEVELS):
            checkable = 0 if i in self.silent else CLAIMS
            true = checkable - (self.false if self.wrong[i] and checkable else 0)
            words = (self.short_words if self.short[i] else self.words) * TURNS
            out.append((int(self.success[i]), true, checkable, words, TURNS, int(i < 20)))
        return out


def _write(folder, spec: Spec, train=None):
    folder.mkdir(parents=True)
    with open(folder / "test.csv", "w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(COLUMNS)
        writer.writerows([1000 + i, f"{i % 150:04x}", *counts] for i, counts in enumerate(spec.counts()))
    if train is not None:
        with open(folder / "train.csv", "w", newline="") as handle:
            writer = csv.writer(handle)
            writer.writerow(["step", *analyze.TRAIN_COLUMNS])
            writer.writerows([step + 1, 0.3, 40 - step / 10, "" if step == 4 else 0.9, 0.1, 0.0]
                             for step in range(train))


START = Spec()


def _study(root, specs: dict[str, list[Spec]], start: Spec | None = START, steps: int = analyze.STEPS):
    for arm in analyze.ARMS:
        for s, spec in zip(analyze.SEEDS, specs[arm]):
            _write(root / f"{analyze.GAME}__{arm}__seed{s}", spec, steps)
    if start is not None:
        _write(root / "start", start)
    return analyze.analyse(*analyze.load(root))


# The tests as computed here, in exact fractions from the counts (so equal values are equal and tied differences
# tied, with no float rounding to mind), then scipy's Wilcoxon on the differences.

def _exact(counts: tuple[int, ...], metric: str) -> Fraction | None:
    """An episode's success, claim accuracy (None without a checkable claim) or think words per turn."""
    success, true, checkable, words, turns = counts[:5]
    if metric == "success":
        return Fraction(success)
    if metric == "claim_accuracy":
        return Fraction(true, checkable) if checkable else None
    return Fraction(words, turns)


def _level_means(tables: list[list[tuple[int, ...]]], metric: str) -> list[Fraction | None]:
    """Each level's value averaged over the evaluations (seeds) that have one; None where none has."""
    out = []
    for level in zip(*tables):
        present = [v for v in (_exact(counts, metric) for counts in level) if v is not None]
        out.append(sum(present) / len(present) if present else None)
    return out


def _seed_mean(table: list[tuple[int, ...]], metric: str) -> float:
    present = [v for v in (_exact(counts, metric) for counts in table) if v is not None]
    return float(sum(present) / len(present))


def _check(test: dict, a: list, b: list, seeds_a: list[float], seeds_b: list[float]):
    """The module's test against this one: the levels where both have a value, the Wilcoxon p, the seed side."""
    differences = [x - y for x, y in zip(a, b) if x is not None and y is not None]
    p = float(stats.wilcoxon([float(d) for d in differences]).pvalue) if any(differences) else 1.0
    assert test["pairs"] == len(differences)
    assert test["wilcoxon_p"] == pytest.approx(p, rel=1e-12)
    assert test["significant"] == (p < 0.05)
    assert test["mean_difference"] == pytest.approx(float(sum(differences) / len(differences)), abs=1e-12)
    assert test["seed_side"] == (1 if min(seeds_a) > max(seeds_b) else -1 if max(seeds_a) < min(seeds_b) else 0)


def _arm_vs(summary_test: dict, specs: list[Spec], others: list[Spec], metric: str):
    _check(summary_test, _level_means([s.counts() for s in specs], metric),
           _level_means([s.counts() for s in others], metric), [_seed_mean(s.counts(), metric) for s in specs],
           [_seed_mean(s.counts(), metric) for s in others])


def _check_test1(summary, o: list[Spec], start: Spec = START):
    for metric in ("claim_accuracy", "think_words_per_turn"):
        _arm_vs(summary["test1"][metric], o, [start], metric)


SAME = [Spec(), Spec(), Spec()]


def test_claim_accuracy_lower_on_every_seed_is_reproduced(tmp_path):
    # O: more levels with false claims, and more false claims on them, than START (0.96), on every seed
    o = [Spec(wrong=0.5, false=4), Spec(wrong=0.6, false=4), Spec(wrong=0.4, false=5)]
    summary = _study(tmp_path, {"O": o, "C": SAME})
    assert summary["state"] == "complete"
    assert (summary["levels"], summary["distinct_levels"]) == (LEVELS, 150)
    _check_test1(summary, o)
    assert summary["test1"]["claim_accuracy"]["call"] == "worse"
    assert summary["test1"]["think_words_per_turn"]["wilcoxon_p"] == 1.0  # the same words everywhere
    assert summary["test1"]["reproduced_through"] == ["claim_accuracy"]
    assert summary["verdict"] == "reproduced"
    assert summary["claim_accuracy"]["O"]["per_seed"] == pytest.approx([1 - 0.5 * 0.4, 1 - 0.6 * 0.4, 1 - 0.4 * 0.5])
    assert summary["claim_accuracy"]["C"]["mean"] == pytest.approx(0.96)
    start = summary["start_model"]
    assert start["success"] == pytest.approx(0.3) and start["wilson95"] == pytest.approx(list(wilson_interval(60, 200)))
    assert start["claims"] == {"true": 2000 - 80, "checkable": 2000, "accuracy": pytest.approx(0.96),
                               "wilson95": pytest.approx(list(wilson_interval(1920, 2000)))}
    assert start["think_words_per_turn"] == pytest.approx(40.0)
    # false / checkable claims, and 20 of the 200 episodes with one format-error turn of 5
    assert start["hallucination_rate"] == pytest.approx(0.04)
    assert start["format_error_rate"] == pytest.approx(20 / 1000)
    assert summary["pooled"]["O"]["per_seed"][1]["hallucination_rate"] == pytest.approx(0.6 * 0.4)


def test_fewer_think_words_on_every_seed_is_reproduced(tmp_path):
    o = [Spec(short=0.5, short_words=20), Spec(short=0.4, short_words=25), Spec(short=0.6, short_words=30)]
    summary = _study(tmp_path, {"O": o, "C": SAME})
    _check_test1(summary, o)
    assert summary["test1"]["think_words_per_turn"]["call"] == "worse"
    assert summary["test1"]["claim_accuracy"]["call"] == "neither"
    assert summary["test1"]["reproduced_through"] == ["think_words_per_turn"]
    assert summary["verdict"] == "reproduced"
    assert summary["think_words_per_turn"]["O"]["per_seed"] == pytest.approx([30.0, 34.0, 34.0])


def test_neither_lower_is_not_reproduced(tmp_path):
    # O's thoughts grow longer and truer: significant, but not lower
    o = [Spec(wrong=0.0, words=50), Spec(wrong=0.05, words=50), Spec(wrong=0.0, words=45)]
    summary = _study(tmp_path, {"O": o, "C": SAME})
    _check_test1(summary, o)
    assert all(t["significant"] and t["mean_difference"] > 0 for t in (summary["test1"]["claim_accuracy"],
                                                                    summary["test1"]["think_words_per_turn"]))
    assert summary["verdict"] == "not reproduced" and summary["test1"]["reproduced_through"] == []
    same = _study(tmp_path / "same", {"O": SAME, "C": SAME})
    assert same["test1"]["claim_accuracy"]["wilcoxon_p"] == 1.0 and same["verdict"] == "not reproduced"


def test_significantly_lower_but_carried_by_two_seeds_is_unclear(tmp_path):
    # seed 0 makes no false claim (above START's 0.96); seeds 1 and 2 pull the level means far down
    o = [Spec(wrong=0.0), Spec(wrong=0.8, false=6), Spec(wrong=0.8, false=6)]
    summary = _study(tmp_path, {"O": o, "C": SAME})
    _check_test1(summary, o)
    test = summary["test1"]["claim_accuracy"]
    assert test["significant"] and test["mean_difference"] < 0 and test["seed_side"] == 0
    assert test["call"] == "neither" and summary["verdict"] == "unclear"


def test_the_consistency_reward_truer_on_every_seed_and_its_cost(tmp_path):
    o = [Spec(wrong=0.5, false=4, success=0.3), Spec(wrong=0.6, false=4, success=0.32),
         Spec(wrong=0.4, false=5, success=0.34)]
    c = [Spec(wrong=0.1, success=0.2), Spec(wrong=0.15, success=0.22), Spec(wrong=0.05, success=0.4)]
    summary = _study(tmp_path, {"O": o, "C": c})
    two = summary["test2"]
    _arm_vs(two["claim_accuracy_C_vs_O"], c, o, "claim_accuracy")
    assert two["claim_accuracy_C_vs_O"]["call"] == "keeps the reasoning truer"
    assert summary["second_line"] == "keeps the reasoning truer"
    # the success cost, reported with its p and per-seed figures whatever its sign
    _arm_vs(two["success_C_vs_O"], c, o, "success")
    assert two["success_C_vs_O"]["per_seed"] == {"O": pytest.approx([0.3, 0.32, 0.34]),
                                                 "C": pytest.approx([0.2, 0.22, 0.4])}
    # C's claim accuracy (0.98-0.99) is above START's 0.96: it holds START's level
    held = two["claim_accuracy_C_vs_start"]
    _arm_vs(held, c, [START], "claim_accuracy")
    assert held["holds_start_level"] and held["mean_difference"] > 0


def test_the_consistency_reward_not_shown_and_below_start(tmp_path):
    o = [Spec(wrong=0.5, false=4), Spec(wrong=0.6, false=4), Spec(wrong=0.4, false=5)]
    # C is truer than O on the level means, but its seed 2 lies below O's seed 0: not seed-consistent
    c = [Spec(wrong=0.3, false=3), Spec(wrong=0.3, false=3), Spec(wrong=0.7, false=4)]
    summary = _study(tmp_path, {"O": o, "C": c})
    truer = summary["test2"]["claim_accuracy_C_vs_O"]
    assert truer["significant"] and truer["mean_difference"] > 0 and truer["seed_side"] == 0
    assert truer["call"] == "not shown" and summary["second_line"] == "not shown"
    held = summary["test2"]["claim_accuracy_C_vs_start"]
    assert held["significant"] and held["mean_difference"] < 0 and not held["holds_start_level"]


def test_episodes_without_a_checkable_claim_leave_the_claim_accuracy_pairs(tmp_path):
    # START says nothing checkable on levels 0-9; O's seed 1 on levels 10-29, all of O on levels 30-39
    o = [Spec(wrong=0.5, false=4, silent=range(30, 40)), Spec(wrong=0.6, false=4, silent=range(10, 40)),
         Spec(wrong=0.4, false=5, silent=range(30, 40))]
    start = Spec(silent=range(10))
    summary = _study(tmp_path, {"O": o, "C": SAME}, start=start)
    _check_test1(summary, o, start)
    assert summary["test1"]["claim_accuracy"]["pairs"] == LEVELS - 20
    assert summary["test1"]["think_words_per_turn"]["pairs"] == LEVELS  # the words of silent thoughts still count
    # levels 10-29 take O's value from seeds 0 and 2 alone (4 and 5 false claims of 10 there)
    assert _level_means([s.counts() for s in o], "claim_accuracy")[15] == Fraction(11, 20)
    assert summary["start_model"]["episodes_with_claims"] == LEVELS - 10
    assert summary["claim_accuracy"]["O"]["per_seed"][1] == pytest.approx(_seed_mean(o[1].counts(), "claim_accuracy"))


def test_an_unfinished_study_has_only_the_training_record(tmp_path):
    partial = _study(tmp_path / "steps", {"O": SAME, "C": SAME}, steps=analyze.STEPS - 1)
    assert partial["state"] == "in progress: 0 of 6 runs finished" and "verdict" not in partial
    assert partial["training_ends"]["runs"] == {}
    no_start = _study(tmp_path / "start", {"O": SAME, "C": SAME}, start=None)
    assert no_start["state"] == "in progress: 6 of 6 runs finished" and "test1" not in no_start
    ends = no_start["training_ends"]["runs"]["C"]["2"]
    assert ends["think_words_per_turn"] == {"first": pytest.approx(40 - 0.45), "last": pytest.approx(40 - 5.45)}
    assert ends["claim_accuracy"] == {"first": pytest.approx(0.9), "last": pytest.approx(0.9)}  # step 5 empty
    assert no_start["mean_training_success"]["O"]["0"] == pytest.approx(0.3)


def test_a_checkpoint_on_other_levels_stops_the_analysis(tmp_path):
    _study(tmp_path, {"O": SAME, "C": SAME})
    run = tmp_path / f"{analyze.GAME}__C__seed1"
    (run / "test.csv").write_text((run / "test.csv").read_text().replace("\n1000,", "\n999,"))
    with pytest.raises(SystemExit, match="did not play the start model's test levels"):
        analyze.analyse(*analyze.load(tmp_path))


# The export: a runs folder as run.sh leaves it, on four train-split frozenlake_det levels (the study's test block
# is not read here), each played by the real game with hand-written replies. The maps (row, col from 0; S the
# player's start, G the goal, H a hole):
#   seed 0    seed 1    seed 2    seed 3
#   FFFH      GFFF      FFFH      HFFG
#   HFFF      FHHS      HFFF      FHFS
#   HFGS      FFFF      FFGH      HFFF
#   HFFF      FFFF      FSFH      FFFF
PLAYED = LevelSplitter(analyze.GAME).seeds("train", 4)
BOARDS = {0: ["FFFH", "HFFF", "HFGS", "HFFF"], 1: ["GFFF", "FHHS", "FFFF", "FFFF"],
          2: ["FFFH", "HFFF", "FFGH", "FSFH"], 3: ["HFFG", "FHFS", "HFFF", "FFFF"]}
#: (level, kind) -> the replies played, and what they hold by hand: (success, true claims, checkable claims,
#: think words, turns, format-error turns).
SCRIPTS = {
    # at(player,2,3) T, at(goal,2,2) T; words 5 + 6
    (0, "true"): (["<think>I am at (2, 3). The goal is at (2, 2).</think><answer>Left</answer>"], (1, 2, 2, 11, 1, 0)),
    # at(player,2,2) F (the player is at (2, 3)), at(goal,2,2) T; Down to (3, 3); a reply without <think> (a format
    # error); three turns of "Wait." (no claim) walking into the east edge; words 5 + 6 + 0 + 3 x 1
    (0, "false"): (["<think>I am at (2, 2). The goal is at (2, 2).</think><answer>Down</answer>",
                    "<answer>Left</answer>"] + ["<think>Wait.</think><answer>Right</answer>"] * 3, (0, 1, 2, 14, 5, 1)),
    # at(player,1,3) T, the goal up and to the left T; words 5 + 10
    (1, "true"): (["<think>I am at (1, 3). The goal is up and to the left of me.</think>"
                   "<answer>Up || Left || Left || Left</answer>"], (1, 2, 2, 15, 1, 0)),
    # the goal below me F (it is above), a hole to my left T ((1, 2)); Down to (2, 3); then "I am at (2, 3)" T four
    # times, walking into the east edge; words 5 + 7 + 4 x 5
    (1, "false"): (["<think>The goal is below me. There is a hole to my left.</think><answer>Down</answer>"]
                   + ["<think>I am at (2, 3).</think><answer>Right</answer>"] * 4, (0, 5, 6, 32, 5, 0)),
    # the goal up and to the right T; words 10
    (2, "true"): (["<think>The goal is up and to the right of me.</think><answer>Up || Right</answer>"],
                  (1, 1, 1, 10, 1, 0)),
    # a plan, no checkable claim; words 4
    (2, "silent"): (["<think>Go up, then right.</think><answer>Up || Right</answer>"], (1, 0, 0, 4, 1, 0)),
    # at(player,1,3) T, at(goal,0,3) T; Left to (1, 2); then at(player,1,2) T, a hole to my left T ((1, 1)), and
    # Right, Up reach the goal; words 5 + 6 + 5 + 7
    (3, "true"): (["<think>I am at (1, 3). The goal is at (0, 3).</think><answer>Left</answer>",
                   "<think>I am at (1, 2). There is a hole to my left.</think><answer>Right || Up</answer>"],
                  (1, 4, 4, 23, 2, 0)),
    # at(goal,3,3) F on each of five turns, walking down to (3, 3) and into the south edge; words 5 x 6
    (3, "false"): (["<think>The goal is at (3, 3).</think><answer>Down</answer>"] * 5, (0, 0, 5, 30, 5, 0)),
}


def _kinds(name: str) -> dict[int, str]:
    """Which script each evaluation plays on each level: START true everywhere; O false but silent on seed 2 and
    true on seed 3 with its seed 1; C true but silent on seed 2 with its seed 0."""
    if name == "start":
        return dict.fromkeys(PLAYED, "true")
    arm, seed = name.split("__")[1], int(name[-1])
    if arm == "O":
        return {0: "false", 1: "false", 2: "silent", 3: "true" if seed == 1 else "false"}
    return {0: "true", 1: "true", 2: "silent" if seed == 0 else "true", 3: "true"}


def _play(seed: int, kind: str) -> dict:
    episode = TextEpisode(analyze.GAME, seed)
    assert episode.game.state_dict()["rows"] == BOARDS[seed], "the level these thoughts were written for changed"
    for reply in SCRIPTS[(seed, kind)][0]:
        episode.step(reply)
    assert episode.done
    return episode.record()


def _evaluation(folder, kinds: dict[int, str], finished: bool = True) -> None:
    folder.mkdir(parents=True)
    with open(folder / "episodes.jsonl", "w") as handle:
        handle.writelines(json.dumps(_play(seed, kinds[seed])) + "\n" for seed in reversed(PLAYED))
    if finished:
        (folder / "summary.json").write_text("{}")


def _metrics_row(step: int, arm: str) -> list:
    """A metrics.csv row: step 3 checked no claim (an empty claim accuracy, as the trainer writes None)."""
    return [step, (step % 4) / 4, 40 - step / 3 if arm == "O" else 40, "" if step == 3 else 1 - step / 120,
            step / 600, 0.01, 0.02]


def _runs_folder(root, finished: bool = True):
    for arm in analyze.ARMS:
        for s in analyze.SEEDS:
            run = root / f"{analyze.GAME}__{arm}__seed{s}"
            run.mkdir(parents=True)
            with open(run / "metrics.csv", "w", newline="") as handle:
                writer = csv.writer(handle)
                writer.writerow(["step", "rollout/success_rate", "rollout/think_words_per_turn",
                                 "rollout/claim_accuracy", "rollout/hallucination_rate", "rollout/format_error_rate",
                                 "losses/approx_kl"])
                writer.writerows(_metrics_row(step, arm) for step in range(1, analyze.STEPS + 1))
            _evaluation(root / f"{run.name}-test", _kinds(run.name), finished)
    _evaluation(root / "start-test", _kinds("start"))


def _evaluations() -> list[str]:
    return ["start", *(f"{analyze.GAME}__{a}__seed{s}" for a in analyze.ARMS for s in analyze.SEEDS)]


def _hand(name: str, level: int) -> tuple[int, ...]:
    return SCRIPTS[(level, _kinds(name)[level])][1]


def test_the_export_and_the_command_line_on_a_runs_folder(tmp_path, monkeypatch, capsys):
    _runs_folder(tmp_path / "runs")
    monkeypatch.setattr(analyze, "HERE", tmp_path)
    assert analyze.main([str(tmp_path / "runs"), "--export", str(tmp_path / "data")]) == 0
    data = tmp_path / "data"
    with open(data / f"{analyze.GAME}__O__seed2" / "train.csv", newline="") as handle:
        rows = list(csv.reader(handle))
    assert rows[0] == ["step", "success_rate", "think_words_per_turn", "claim_accuracy", "hallucination_rate",
                       "format_error_rate"]
    assert rows[3] == ["3", "0.75", str(40 - 3 / 3), "", str(3 / 600), "0.01"]
    keys = {seed: LevelSplitter(analyze.GAME).level_key(seed).hex() for seed in PLAYED}
    for name in ("start", f"{analyze.GAME}__O__seed1", f"{analyze.GAME}__C__seed0"):
        with open(data / name / "test.csv", newline="") as handle:
            assert list(csv.reader(handle)) == [COLUMNS] + [
                [str(v) for v in (seed, keys[seed], *_hand(name, seed))] for seed in sorted(PLAYED)]

    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary == json.loads(capsys.readouterr().out)
    assert summary["state"] == "complete" and summary["levels"] == 4
    assert summary["distinct_levels"] == len(set(keys.values()))
    tables = {name: [_hand(name, level) for level in PLAYED] for name in _evaluations()}

    def check(test, names, others, metric):
        _check(test, _level_means([tables[n] for n in names], metric), _level_means([tables[n] for n in others],
               metric), [_seed_mean(tables[n], metric) for n in names], [_seed_mean(tables[n], metric) for n in others])

    runs = {a: [f"{analyze.GAME}__{a}__seed{s}" for s in analyze.SEEDS] for a in analyze.ARMS}
    for metric in ("claim_accuracy", "think_words_per_turn"):
        check(summary["test1"][metric], runs["O"], ["start"], metric)
    check(summary["test2"]["claim_accuracy_C_vs_O"], runs["C"], runs["O"], "claim_accuracy")
    check(summary["test2"]["success_C_vs_O"], runs["C"], runs["O"], "success")
    check(summary["test2"]["claim_accuracy_C_vs_start"], runs["C"], ["start"], "claim_accuracy")
    # O is silent on seed 2's level everywhere: three claim-accuracy pairs of four levels
    assert summary["test1"]["claim_accuracy"]["pairs"] == 3
    assert summary["test1"]["claim_accuracy"]["mean_difference"] == pytest.approx(
        np.mean([1 / 2 - 1, 5 / 6 - 1, 1 / 3 - 1]))
    # with four levels no Wilcoxon p reaches 0.05 (the smallest, all four the same way, is 0.125)
    assert summary["verdict"] == "not reproduced" and summary["second_line"] == "not shown"
    assert summary["test2"]["claim_accuracy_C_vs_start"]["holds_start_level"]
    start = summary["start_model"]
    assert start["success"] == 1.0 and start["wilson95"] == pytest.approx(list(wilson_interval(4, 4)))
    assert start["claims"]["true"] == start["claims"]["checkable"] == 2 + 2 + 1 + 4
    assert start["think_words_per_turn"] == pytest.approx(np.mean([11, 15, 10, 23 / 2]))
    # O's seed 0: false claims 1 + 1 + 0 + 5 of 2 + 6 + 0 + 5 checkable; format errors 1 of 5 + 5 + 1 + 5 turns
    assert summary["pooled"]["O"]["per_seed"][0] == {"hallucination_rate": pytest.approx(7 / 13),
                                                     "format_error_rate": pytest.approx(1 / 16)}
    assert summary["success"]["O"]["per_seed"] == pytest.approx([0.25, 0.5, 0.25])
    ends = summary["training_ends"]["runs"]["O"]["1"]
    assert ends["claim_accuracy"]["first"] == pytest.approx(np.mean([1 - s / 120 for s in range(1, 11) if s != 3]))
    assert ends["think_words_per_turn"]["last"] == pytest.approx(np.mean([40 - s / 3 for s in range(51, 61)]))
    assert (tmp_path / "reasoning.png").stat().st_size > 0


def test_unfinished_evaluations_are_not_exported(tmp_path, monkeypatch):
    _runs_folder(tmp_path / "runs", finished=False)
    monkeypatch.setattr(analyze, "HERE", tmp_path)
    assert analyze.main([str(tmp_path / "runs"), "--export", str(tmp_path / "data")]) == 0
    assert not list((tmp_path / "data").glob(f"{analyze.GAME}__*/test.csv"))
    assert (tmp_path / "data" / "start" / "test.csv").is_file()
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["state"] == "in progress: 6 of 6 runs finished" and "verdict" not in summary
    assert (tmp_path / "reasoning.png").stat().st_size > 0


def test_a_missing_folder_is_a_usage_error_and_an_empty_runs_folder_is_in_progress(tmp_path, monkeypatch):
    summary = empty_study_summary(analyze, tmp_path, monkeypatch)
    assert summary["state"] == "in progress: 0 of 6 runs finished"


def test_a_metrics_file_without_a_planned_column_is_refused(tmp_path, monkeypatch):
    run = tmp_path / "runs" / f"{analyze.GAME}__O__seed0"
    run.mkdir(parents=True)
    (run / "metrics.csv").write_text("step,rollout/success_rate,rollout/think_words_per_turn\n1,0.5,30\n")
    monkeypatch.setattr(analyze, "HERE", tmp_path)
    with pytest.raises(SystemExit, match="has no column rollout/claim_accuracy"):
        analyze.main([str(tmp_path / "runs"), "--export", str(tmp_path / "data")])
