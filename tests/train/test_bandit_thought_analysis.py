"""experiments/bandit_thought/analyze.py: answer counts on hand-made val records, checked against the train levels
the preset itself generates, and the plan's rule."""

from __future__ import annotations

import json

import pytest

from ragen_envs.splits import LevelSplitter
from tests.script_modules import load_script

analyze = load_script("experiments/bandit_thought/analyze.py")


def _train_partners(low: str) -> set[str]:
    """High-risk names that make a train level of bandit_heldout beside ``low``, read off generated train levels."""
    splitter = LevelSplitter("bandit_heldout")
    keys = {splitter.level_key(seed) for seed in splitter.seeds("train", 400)}
    pairs = [key.decode().split("\n") for key in keys]
    return {high[len("high="):] for _, low_part, high in pairs if low_part == f"low={low}"}


def _run(root, name: str, preset: str, answers: list[str], on_arms: int, thinks: list[str] | None = None,
         env: str | None = None, false_claims: int = 0) -> None:
    run = root / name
    run.mkdir(parents=True)
    arms = [{"name": "Owl", "low_risk": True}, {"name": "Tiger", "low_risk": False}]
    records = [{"turns": [{"state_before": {"game": "bandit", "arms": arms}, "answer": a, "think": t}]}
               for a, t in zip(answers, thinks or [None] * len(answers))]
    (run / "episodes.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    format_errors = 1 - on_arms / len(answers)
    (run / "summary.json").write_text(json.dumps(
        {"per_env": {env or preset: {"success_rate": 0.5, "format_error_rate": format_errors,
                                     "consistency": {"n_true": 2 * len(answers) - false_claims,
                                                     "n_false": false_claims}}}}))


def test_off_arm_answers_are_split_into_training_partners_and_the_rest(tmp_path):
    partners = sorted(_train_partners("Owl") - {"Tiger"})
    others = sorted({"Comet", "Griffin", "Hydra", "Kraken", "Shark"} - set(partners))
    assert partners and others  # Owl has train partners and held-out ones
    answers = ["Tiger", " Owl ", partners[0], partners[-1], others[0], "Dragon", ""]
    _run(tmp_path, "chosen-bandit_heldout-val", "bandit_heldout", answers, on_arms=2)
    row = analyze.summarize(tmp_path)["runs"]["chosen-bandit_heldout-val"]
    assert (row["episodes"], row["on_arms"], row["training_partner"]) == (7, 2, 2)


@pytest.mark.parametrize("list_on, chosen_on, decision", [
    (200, 255, "the arm list breaks the format: drop it from the Bandit thought"),
    (200, 240, "the list is not the cause: copying needs other data"),
    (255, 255, "no rule of the plan applies"),
])
def test_the_plans_rule(tmp_path, list_on, chosen_on, decision):
    for model, on in (("list", list_on), ("chosen", chosen_on)):
        for preset in analyze.JUDGED:
            _run(tmp_path, f"{model}-{preset}-val", preset, ["Tiger"] * on + ["Shark"] * (256 - on), on)
    summary = analyze.summarize(tmp_path)
    assert summary["decision"] == decision and summary["decision_wide"] == {"mixed": None, "mixed2": None, "mixed3": None}
    assert analyze.summarize(tmp_path / "list-bandit_heldout-val")["decision"] is None  # nothing judged there


def test_main_refuses_a_directory_without_evaluations(tmp_path):
    with pytest.raises(SystemExit) as exit_:
        analyze.main([str(tmp_path)])
    assert exit_.value.code == 2


@pytest.mark.parametrize("heldout_on, verdict", [
    (251, "a wide name set carries the answers onto the prompt's arms"),  # 251 >= 0.98 * 256
    (250, "reported as it is"),
])
def test_the_additions_rule_on_each_mixed_model(tmp_path, heldout_on, verdict):
    _run(tmp_path, "mixed2-bandit_heldout-val", "bandit_heldout", ["Tiger"] * heldout_on + ["Shark"] * (256 - heldout_on),
         heldout_on)
    _run(tmp_path, "mixed2-bandit_reversed-val", "bandit_reversed", ["Tiger"] * 256, 256)
    summary = analyze.summarize(tmp_path)
    assert summary["decision_wide"] == {"mixed": None, "mixed2": verdict, "mixed3": None} and summary["decision"] is None


def _replicates(root, replicates: dict[str, tuple[str, str]], treated_on: list[int], control_on: list[int]) -> None:
    """Each (treated, control) pair of ``replicates`` on both judged sets, answering on the arms that often."""
    for (treated, control), t_on, c_on in zip(replicates.values(), treated_on, control_on):
        for preset in analyze.JUDGED:
            for model, on in ((treated, t_on), (control, c_on)):
                _run(root, f"{model}-{preset}-val", preset, ["Tiger"] * on + ["Shark"] * (256 - on), on)


@pytest.mark.parametrize("words_on, list_on, verdict", [
    ([251, 252, 256], [100, 100, 100], "the split spelling breaks the Bandit format: keep the arm names whole in the tokenizer"),
    ([250, 120, 101], [100, 100, 100], "the spelling is part of the cause"),
    ([250, 120, 100], [100, 100, 100], "not shown to matter: reported as it is"),  # a tie in one pair is not "more"
    ([14, 30, 40], [21, 60, 90], "not shown to matter: reported as it is"),
])
def test_the_whole_token_rule_pairs_replicates_by_demo_seed(tmp_path, words_on, list_on, verdict):
    _replicates(tmp_path, analyze.REPLICATES, words_on, list_on)
    summary = analyze.summarize(tmp_path)
    assert summary["decision_words"] == verdict
    assert summary["runs"]["words907-bandit_heldout-val"]["pairs"] == {"Owl, Tiger": [256, words_on[1]]}


def test_the_whole_token_rule_waits_for_every_replicate(tmp_path):
    for model in ("words903", "list", "words907", "list907", "words908"):
        for preset in analyze.JUDGED:
            _run(tmp_path, f"{model}-{preset}-val", preset, ["Tiger"] * 256, 256)
    assert analyze.summarize(tmp_path)["decision_words"] is None  # list908 has not played


@pytest.mark.parametrize("big_on, small_on, verdict", [
    ([251, 256, 253], [247, 250, 240], "the 4 x 256 shape copies the held-out names from this data"),
    ([250, 249, 248], [247, 248, 240], "size helps"),
    ([250, 249, 240], [247, 248, 240], "size is not shown to matter: reported as it is"),
])
def test_the_size_rule_pairs_each_big_model_with_the_small_one_of_its_seed(tmp_path, big_on, small_on, verdict):
    _replicates(tmp_path, analyze.SIZES, big_on, small_on)
    summary = analyze.summarize(tmp_path)
    assert summary["decision_size"] == verdict and summary["decision_words"] is None


def _stage_runs(root, errors: dict[str, float]) -> None:
    """Each short Bandit stage on the three presets, ``errors[model]`` of 256 turns off the arms on every preset."""
    for model, rate in errors.items():
        off = round(rate * 256)
        for preset in ("bandit", *analyze.JUDGED):
            _run(root, f"{model}-{preset}-val", preset, ["Tiger"] * (256 - off) + ["Shark"] * off, 256 - off)


@pytest.mark.parametrize("judged, crossed, verdict", [
    ((0.07, 0.01), (0.0, 0.015), "neither is shown to close gate 2: reported as it is"),  # one judged model passes
    ((0.07, 0.12), (0.0, 0.015), "crossed pairs are the Bandit lever"),
    ((0.01, 0.015), (0.0, 0.019), "a short Bandit stage is enough: crossed pairs are not needed"),
    ((0.07, 0.12), (0.0, 0.0625), "neither is shown to close gate 2: reported as it is"),
])
def test_the_crossed_rule_judges_both_replicates_against_gate_2(tmp_path, judged, crossed, verdict):
    _stage_runs(tmp_path, {"judged913": judged[0], "judged914": judged[1],
                           "crossed913": crossed[0], "crossed914": crossed[1]})
    summary = analyze.summarize(tmp_path)
    assert summary["decision_crossed"] == verdict and summary["decision_size"] is None


def test_the_crossed_rule_waits_for_every_model_and_preset(tmp_path):
    _stage_runs(tmp_path, {"judged913": 0.0, "judged914": 0.0, "crossed913": 0.0, "crossed914": 0.0})
    (tmp_path / "crossed914-bandit-val" / "summary.json").unlink()
    _run(tmp_path, "q1-bandit_heldout-val", "bandit_heldout", ["Tiger"] * 256, 256)  # the start is read, not judged
    summary = analyze.summarize(tmp_path)
    assert summary["decision_crossed"] is None and "q1-bandit_heldout-val" in summary["runs"]


@pytest.mark.parametrize("both, verdict", [
    ((0.0, 0.0195), "this mixture is the Bandit lever"),  # 5 of 256 off: 0.0195
    ((0.0, 0.0234), "reported as it is"),  # 6 of 256
])
@pytest.mark.parametrize("stage", ["both", "more"])
def test_the_judged_and_crossed_rules_want_both_models_under_gate_2(tmp_path, both, verdict, stage):
    _stage_runs(tmp_path, {f"{stage}913": both[0], f"{stage}914": both[1]})
    summary = analyze.summarize(tmp_path)
    other = "more" if stage == "both" else "both"
    assert summary[f"decision_{stage}"] == verdict and summary[f"decision_{other}"] is None
    assert summary["decision_crossed"] is None
    (tmp_path / f"{stage}914-bandit_reversed-val" / "summary.json").unlink()
    assert analyze.summarize(tmp_path)[f"decision_{stage}"] is None


def test_answer_level_misses_are_off_arm_answers_after_a_thought_that_chose_an_arm(tmp_path):
    turns = [("Tiger", "The arms are Owl and Tiger. I choose Tiger."),  # on the arms: no miss
             ("Hydra", "The arms are Owl and Tiger. I choose Tiger."),  # a miss
             ("Shark", "I choose Owl. I choose Anicorn."),  # the last choice is no arm: not a miss
             ("Shark", "I choose Anicorn. I choose Tiger"),  # no full stop after the last: the first counts, no miss
             ("Vault", "I choose Shark. I choose Owl."),  # the last choice counts: a miss
             ("", None)]  # no thought
    _run(tmp_path, "spaced913-bandit_heldout-val", "bandit_heldout", [a for a, _ in turns], 1, [t for _, t in turns])
    row = analyze.summarize(tmp_path)["runs"]["spaced913-bandit_heldout-val"]
    assert (row["episodes"], row["on_arms"], row["answer_level_miss"]) == (6, 1, 2)


def _missing_runs(root, model: str, off: int, misses: int) -> None:
    """``model`` on the three presets: ``off`` of 256 answers off the arms, ``misses`` of them after a thought that
    chose Tiger (answer-level misses), the rest after no thought."""
    answers = ["Tiger"] * (256 - off) + ["Shark"] * off
    thinks = ["I choose Tiger."] * (256 - off + misses) + [""] * (off - misses)
    for preset in ("bandit", *analyze.JUDGED):
        _run(root, f"{model}-{preset}-val", preset, answers, 256 - off, thinks)


@pytest.mark.parametrize("spaced, judged, verdict", [
    (((5, 0), (0, 0)), ((30, 14), (19, 13)), "spaced answers are the Bandit lever"),  # 5 of 256 off: under 2%
    (((20, 0), (9, 0)), ((30, 14), (19, 13)),
     "the respelling caused the answer-level misses: keep spaced answers beside the next stage's other changes"),
    (((20, 0), (9, 1)), ((30, 14), (19, 13)), "reported as it is"),  # one answer-level miss left on a seed
    (((20, 0), (9, 0)), ((30, 14), (19, 0)), "reported as it is"),  # judged914 had none to remove
])
def test_the_spaced_rule_pairs_each_spaced_model_with_its_judged_twin(tmp_path, spaced, judged, verdict):
    for models, figures in ((analyze.STAGES["spaced"], spaced), (analyze.STAGES["judged"], judged)):
        for model, (off, misses) in zip(models, figures):
            _missing_runs(tmp_path, model, off, misses)
    summary = analyze.summarize(tmp_path)
    assert summary["decision_spaced"] == verdict
    (tmp_path / "judged914-bandit-val" / "summary.json").unlink()
    assert analyze.summarize(tmp_path)["decision_spaced"] is None  # waits for every model and preset


def _coined_runs(root, model: str, judged_on: int, wide_on: int) -> None:
    """``model`` on bandit (all on the arms), both judged sets (``judged_on`` of 256 each) and the wide val set,
    which ragen-eval files under the bandit preset's name."""
    _run(root, f"{model}-bandit-val", "bandit", ["Tiger"] * 256, 256)
    for preset in analyze.JUDGED:
        _run(root, f"{model}-{preset}-val", preset, ["Tiger"] * judged_on + ["Shark"] * (256 - judged_on), judged_on)
    _run(root, f"{model}-bandit_wide-val", "bandit_wide", ["Tiger"] * wide_on + ["Torrent"] * (256 - wide_on), wide_on,
         env="bandit")


@pytest.mark.parametrize("coined, small, verdict", [
    ((252, 251), (200, 200), "coined names are the Bandit lever"),  # 4 of 256 off is under 2%; 251 >= 0.98 * 256
    ((252, 250), (200, 200), "coined names help: reported with the gap"),  # the wide set short of 98% on every seed
    ((240, 240), (240, 200), "reported as it is"),  # no gain on the judged sets
    ((240, 240), (200, 240), "reported as it is"),  # no gain on the wide set
])
def test_the_coined_rule_pairs_each_coined_model_with_the_small_one_of_its_seed(tmp_path, coined, small, verdict):
    for treated, control in analyze.COINED.values():
        _coined_runs(tmp_path, treated, *coined)
        _coined_runs(tmp_path, control, *small)
    summary = analyze.summarize(tmp_path)
    assert summary["decision_coined"] == verdict
    wide = summary["runs"]["coined907-bandit_wide-val"]
    assert (wide["preset"], wide["on_arms"], wide["training_partner"]) == ("bandit_wide", coined[1], 0)
    (tmp_path / "small908-bandit_wide-val" / "summary.json").unlink()
    assert analyze.summarize(tmp_path)["decision_coined"] is None  # waits for every model and preset


@pytest.mark.parametrize("per_arm, small, verdict", [
    (251, 200, "the per-arm thought is the Bandit lever"),  # 5 of 256 off on each judged set is under 2%
    (250, 200, "the per-arm thought helps: reported with the gap"),  # 6 of 256 is not, and every seed gains
    (250, 250, "reported as it is"),  # no gain
])
def test_the_per_arm_rule_pairs_each_per_arm_model_with_the_small_one_of_its_seed(tmp_path, per_arm, small, verdict):
    for treated, control in analyze.PER_ARM.values():
        _coined_runs(tmp_path, treated, per_arm, 0)  # the wide set is not part of this rule
        _coined_runs(tmp_path, control, small, 0)
    for seed in ("903", "907", "908"):
        for model in (f"perarm{seed}", f"small{seed}"):
            (tmp_path / f"{model}-bandit_wide-val" / "summary.json").unlink()
    summary = analyze.summarize(tmp_path)
    assert summary["decision_per_arm"] == verdict and summary["decision_coined"] is None
    assert summary["runs"]["perarm907-bandit_heldout-val"]["on_arms"] == per_arm
    (tmp_path / "small908-bandit_reversed-val" / "summary.json").unlink()
    assert analyze.summarize(tmp_path)["decision_per_arm"] is None  # waits for every model and preset


def _claim_runs(root, model: str, on_arms: int, false_claims: int) -> None:
    """``model`` on the three Bandit presets: ``on_arms`` of 256 answers on the arms on each held-out set, and
    ``false_claims`` false claims among 512 on each."""
    for preset in ("bandit", *analyze.JUDGED):
        on = 256 if preset == "bandit" else on_arms
        _run(root, f"{model}-{preset}-val", preset, ["Tiger"] * on + ["Shark"] * (256 - on), on,
             false_claims=false_claims)


@pytest.mark.parametrize("judged, per_arm, verdict", [
    ((251, 25), (251, 25), "a short stage with the package's thought is enough"),  # 1 - 75 / 1536 >= 0.95
    ((251, 26), (251, 25), "the per-arm stage is the Bandit step after S6"),  # 1 - 78 / 1536 < 0.95
    ((250, 0), (251, 25), "the per-arm stage is the Bandit step after S6"),  # 6 of 256 off the arms
    ((251, 25), (250, 0), "a short stage with the package's thought is enough"),
    ((250, 0), (251, 26), "reported as it is"),
])
def test_the_q6_stage_rule_needs_both_seeds_under_gates_1_and_2(tmp_path, judged, per_arm, verdict):
    for stage, figures in (("q6judged", judged), ("q6perarm", per_arm)):
        for model in analyze.STAGES[stage]:
            _claim_runs(tmp_path, model, *figures)
    assert analyze.summarize(tmp_path)["decision_q6_stage"] == verdict
    (tmp_path / "q6perarm914-bandit-val" / "summary.json").unlink()
    assert analyze.summarize(tmp_path)["decision_q6_stage"] is None  # waits for every model and preset


@pytest.mark.parametrize("spaced, small, verdict", [
    ((251, 25), (200, 0), "answers after a space are the Bandit change for the next lineage"),  # 1 - 75 / 1536
    ((251, 26), (200, 0), "answers after a space help: reported with the gap"),  # claims 0.949 pooled
    ((250, 0), (200, 0), "answers after a space help: reported with the gap"),  # 6 of 256 off the arms
    ((250, 0), (250, 0), "reported as it is"),  # no gain
])
def test_the_spaced_small_rule_also_pools_the_claims(tmp_path, spaced, small, verdict):
    for treated, control in analyze.SPACED_SMALL.values():
        _claim_runs(tmp_path, treated, *spaced)
        _claim_runs(tmp_path, control, *small)
    summary = analyze.summarize(tmp_path)
    assert summary["decision_spaced_small"] == verdict and summary["decision_per_arm"] is None
    (tmp_path / "spacedsmall903-bandit-val" / "summary.json").unlink()
    assert analyze.summarize(tmp_path)["decision_spaced_small"] is None  # waits for every model and preset


def test_off_arm_answers_are_split_by_where_the_prompt_lists_the_high_risk_arm(tmp_path):
    owl, tiger = {"name": "Owl", "low_risk": True}, {"name": "Tiger", "low_risk": False}
    turns = [([owl, tiger], "Tiger"), ([owl, tiger], "Shark"), ([owl, tiger], "Hydra"), ([tiger, owl], "Shark"),
             ([tiger, owl], "Tiger"), ([tiger, owl], "Owl")]
    (tmp_path / "episodes.jsonl").write_text("".join(
        json.dumps({"turns": [{"state_before": {"game": "bandit", "arms": arms}, "answer": answer}]}) + "\n"
        for arms, answer in turns))
    counts = analyze.answers(tmp_path / "episodes.jsonl", "bandit_heldout")
    figures = ("episodes", "on_arms", "high_second", "off_arms_high_second")
    assert tuple(counts[key] for key in figures) == (6, 3, 3, 2)


@pytest.mark.parametrize("plain, fix, verdict", [
    ((250, 0), (251, 25), "spaced answers with 'Of the two,' are the Bandit change for the next lineage"),
    ((251, 25), (251, 25), "the quarter stage does not show the lineage's Bandit misses: reported as it is"),
    ((250, 0), (251, 26), "reported as it is"),  # claims 0.949 pooled
    ((251, 0), (250, 0), "reported as it is"),
])
def test_the_quarter_rule_wants_the_fix_to_pass_where_the_plain_stage_fails(tmp_path, plain, fix, verdict):
    for model, figures in zip(analyze.STAGES["quarter"], (plain, fix)):
        _claim_runs(tmp_path, model, *figures)
    assert analyze.summarize(tmp_path)["decision_quarter"] == verdict
    (tmp_path / "qqfix915-bandit_reversed-val" / "summary.json").unlink()
    assert analyze.summarize(tmp_path)["decision_quarter"] is None


def test_false_claims_are_counted_by_pair_with_the_low_risk_arm_first(tmp_path):
    owl = {"name": "Owl", "low_risk": True, "variance": 0.0, "expected_reward": 0.1}
    tiger = {"name": "Tiger", "low_risk": False, "variance": 0.1875, "expected_reward": 0.25}
    thinks = {  # (arms as the prompt lists them, thought): false claims?
        "true": ([owl, tiger], "The arms are Owl and Tiger. Owl is the safer arm. Tiger is the riskier arm. "
                               "I choose Tiger."),
        "swapped": ([tiger, owl], "The arms are Tiger and Owl. Tiger is the safer arm. I choose Tiger."),
        "payoff": ([owl, tiger], "The arms are Owl and Tiger. Owl pays more on average. I choose Tiger."),
        "none": ([owl, tiger], "I choose Tiger."),
    }
    run = tmp_path / "perarm903-bandit_heldout-val"
    run.mkdir()
    records = [{"turns": [{"state_before": {"game": "bandit", "arms": arms}, "answer": "Tiger", "think": think}]}
               for arms, think in thinks.values()]
    (run / "episodes.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    assert analyze.answers(run / "episodes.jsonl", "bandit_heldout")["false_claim_pairs"] == {"Owl, Tiger": 2}


def test_rows_played_elsewhere_are_kept_and_rows_played_here_replace_them(tmp_path):
    _run(tmp_path, "list-bandit_heldout-val", "bandit_heldout", ["Tiger"] * 256, 256)
    elsewhere = {"model": "chosen", "preset": "bandit_heldout", "success_rate": 0.0, "format_error_rate": 1.0,
                 "episodes": 256, "on_arms": 2, "training_partner": 240, "answer_level_miss": 0, "pairs": {}}
    stale = dict(elsewhere, model="list", on_arms=21)
    rows = analyze.summarize(tmp_path, {"chosen-bandit_heldout-val": elsewhere,
                                        "list-bandit_heldout-val": stale})["runs"]
    assert rows["chosen-bandit_heldout-val"] == elsewhere
    assert rows["list-bandit_heldout-val"]["on_arms"] == 256
