"""The Bandit thought probe's figures (plan.md beside this file): where each model's answers go on val.

    python experiments/bandit_thought/analyze.py runs/bandit_thought/eval

For each evaluation ``MODEL-PRESET-val`` under the directory (run.sh's names): success and format errors
(ragen-eval's summary), answers naming one of the level's arms, and of the other answers those that name a
training partner of the level's low-risk arm (the pair "low arm, answer" is a train-split level of the preset,
by ``ragen_envs.splits``), per val pair too, with the plan's 98% rule on the held-out name sets and its addition's
rule on the whole-token replicates, the rule on the random-weight replicates at two sizes, and the crossed-pairs
addition's rules on the short Bandit stages from the thinking model's Q1, and the spaced-answer addition's, which
also counts answer-level misses (the thought chose an arm of the level, the answer names none), and the coined-names
addition's, which also reads the wide name set's val levels (``MODEL-bandit_wide-val``), the per-arm thought
addition's, the rule on the short stages from Q6, which also pools the claims over the three presets (gate 1), and
the quarter-Q6 addition's, and the rule on spaced answers from random weights.
Writes summary.json beside this file; rows of summary.json whose evaluations are not under the directory (played on
another machine) are kept.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections import Counter
from pathlib import Path
from typing import Any

from ragen_envs.bandit.config import BanditConfig
from ragen_envs.bandit.level import Arm, BanditLevel
from ragen_envs.bandit.names import NAME_POOLS
from ragen_envs.registration import get_preset
from ragen_envs.splits import level_split
from ragen_eval.consistency import score_turn
from ragen_eval.jsonl_store import read_jsonl

HERE = Path(__file__).resolve().parent
RUN = re.compile(r"(?P<model>random|list(?:907|908)?|chosen|mixed\d?"
                 r"|(?:words|small|big|coined|perarm|spacedsmall)90[378]"
                 r"|q1|(?:judged|crossed|both|more|spaced|q6judged|q6perarm)91[34]|qq(?:fix)?915)"
                 r"-(?P<preset>bandit|bandit_heldout|bandit_reversed|bandit_wide)-val")
WIDE_VAL = "bandit_wide"  # the bandit preset with the probe's wide name set, names no model trained on
JUDGED = ("bandit_heldout", "bandit_reversed")
ON_ARMS = 0.98  # the plan's share of answers that must name one of the level's arms
WIDE = ("mixed", "mixed2", "mixed3")  # the additions' models, trained beside the wide name set
# the whole-token addition's replicates, by demo seed: (model with whole-name tokens, `list` on the same data)
REPLICATES = {"903": ("words903", "list"), "907": ("words907", "list907"), "908": ("words908", "list908")}
# the random-weight addition's replicates, by seed: (4 x 256, 2 x 128)
SIZES = {seed: (f"big{seed}", f"small{seed}") for seed in ("903", "907", "908")}
# the coined-names addition's replicates, by seed: (judged sets with coined names, judged sets alone), 2 x 128
COINED = {seed: (f"coined{seed}", f"small{seed}") for seed in ("903", "907", "908")}
# the per-arm addition's replicates, by seed: (each arm's role in its own sentence, the package's thought), 2 x 128
PER_ARM = {seed: (f"perarm{seed}", f"small{seed}") for seed in ("903", "907", "908")}
# the spaced-answer addition from random weights, by seed: (answers after a space, the package's answers), 2 x 128
SPACED_SMALL = {seed: (f"spacedsmall{seed}", f"small{seed}") for seed in ("903", "907", "908")}
# the crossed-pairs addition: short Bandit stages from Q1, on the judged sets alone or with crossed pairs
STAGES = {"judged": ("judged913", "judged914"), "crossed": ("crossed913", "crossed914"), "both": ("both913", "both914"),
          "more": ("more913", "more914"), "spaced": ("spaced913", "spaced914"),
          "q6judged": ("q6judged913", "q6judged914"), "q6perarm": ("q6perarm913", "q6perarm914"),
          "quarter": ("qq915", "qqfix915")}
CHOSEN = re.compile(r"I choose (\S+?)\.")  # the thought's choice; the last one counts
GATE_2 = 0.02  # the thinking model's gate 2: format errors under 2% on each preset
GATE_1 = 0.95  # its gate 1: claims true, pooled over a game's presets


def answers(episodes: Path, preset: str) -> dict[str, Any]:
    """Counts over the first turns: episodes, answers naming one of the level's arms, answers naming a training
    partner of the level's low-risk arm (a high-risk name of ``preset``'s name set that makes a train level beside
    it), answer-level misses (the thought's last "I choose X." names an arm of the level, the answer none), and
    episodes and off-arm answers where the prompt lists the high-risk arm second; ``pairs``: episodes and answers on
    the arms per pair ("low, high"); ``false_claim_pairs``: turns whose thought makes a false claim by ragen-eval's
    checker, per pair that has any."""
    high_risk = set() if preset == WIDE_VAL else set(  # no model trained on a wide name: no training partner
        NAME_POOLS[get_preset(preset).config.get("name_set", BanditConfig.name_set)].high_risk)
    counts: Counter[str] = Counter()
    pairs: dict[str, list[int]] = {}
    false_claims: Counter[str] = Counter()
    for record in read_jsonl(episodes):
        turn = record["turns"][0]
        arms = turn["state_before"]["arms"]
        answer = (turn.get("answer") or "").strip()
        low = next(arm["name"] for arm in arms if arm["low_risk"])
        key = ", ".join([low, *(arm["name"] for arm in arms if not arm["low_risk"])])
        pair = pairs.setdefault(key, [0, 0])
        pair[0] += 1
        if any(claim["verdict"] is False for claim in score_turn(turn, game="bandit")["claims"]):
            false_claims[key] += 1
        counts["episodes"] += 1
        high_second = bool(arms[0]["low_risk"])
        counts["high_second"] += high_second
        names = {arm["name"] for arm in arms}
        if answer in names:
            counts["on_arms"] += 1
            pair[1] += 1
            continue
        counts["off_arms_high_second"] += high_second
        chosen = CHOSEN.findall(turn.get("think") or "")
        if chosen and chosen[-1] in names:
            counts["answer_level_miss"] += 1
        # the level the pair would make, keyed by the game itself (a key holds names and roles, not payoffs)
        if answer in high_risk and level_split(BanditLevel((Arm(low, 0.0, 1.0, True),
                                                            Arm(answer, 0.0, 1.0, False))).level_key()) == "train":
            counts["training_partner"] += 1
    keys = ("episodes", "on_arms", "training_partner", "answer_level_miss", "high_second", "off_arms_high_second")
    return {**{key: counts[key] for key in keys},
            "pairs": dict(sorted(pairs.items())), "false_claim_pairs": dict(sorted(false_claims.items()))}


def summarize(runs: Path, kept: dict[str, dict[str, Any]] | None = None) -> dict[str, Any]:
    """Per evaluation: success, format errors and the answer counts; and the plan's rule. ``kept``: rows of
    evaluations that are not under ``runs`` (a committed summary.json's), judged beside the ones found there."""
    rows: dict[str, dict[str, Any]] = dict(kept or {})
    for run in sorted(runs.iterdir()):
        match = RUN.fullmatch(run.name)
        if not match or not (run / "summary.json").is_file():
            continue
        env = "bandit" if match["preset"] == WIDE_VAL else match["preset"]  # the wide set is played on `bandit`
        group = json.loads((run / "summary.json").read_text())["per_env"][env]
        claims = group["consistency"]
        rows[run.name] = {"model": match["model"], "preset": match["preset"], "success_rate": group["success_rate"],
                          "format_error_rate": group["format_error_rate"],
                          **answers(run / "episodes.jsonl", match["preset"]),
                          "claims_true": claims["n_true"], "claims_false": claims["n_false"]}

    def passes(model: str) -> bool | None:
        judged = [rows.get(f"{model}-{preset}-val") for preset in JUDGED]
        return None if None in judged else all(r["on_arms"] >= ON_ARMS * r["episodes"] for r in judged)

    verdicts = {model: passes(model) for model in ("list", "chosen", *WIDE, *(w for w, _ in REPLICATES.values()),
                                                   *(m for pair in SIZES.values() for m in pair))}
    if verdicts["list"] is None or verdicts["chosen"] is None:
        rule = None
    elif verdicts["chosen"] and not verdicts["list"]:
        rule = "the arm list breaks the format: drop it from the Bandit thought"
    elif not (verdicts["list"] or verdicts["chosen"]):
        rule = "the list is not the cause: copying needs other data"
    else:
        rule = "no rule of the plan applies"
    # the additions' rule, on each model trained beside the wide name set, alone
    wide = {model: None if verdicts[model] is None else (
        "a wide name set carries the answers onto the prompt's arms" if verdicts[model] else "reported as it is")
        for model in WIDE}
    return {"runs": rows, "on_arms_at_least_0.98": verdicts, "decision": rule, "decision_wide": wide,
            "decision_words": paired_rule(rows, verdicts, REPLICATES, (
                "the split spelling breaks the Bandit format: keep the arm names whole in the tokenizer",
                "the spelling is part of the cause", "not shown to matter: reported as it is")),
            "decision_size": paired_rule(rows, verdicts, SIZES, (
                "the 4 x 256 shape copies the held-out names from this data", "size helps",
                "size is not shown to matter: reported as it is")),
            "decision_crossed": crossed_rule(rows), "decision_both": both_rule(rows),
            "decision_more": both_rule(rows, "more"), "decision_spaced": spaced_rule(rows),
            "decision_coined": lever_rule(rows, COINED, (
                "coined names are the Bandit lever", "coined names help: reported with the gap", "reported as it is"),
                wide=True),
            "decision_per_arm": lever_rule(rows, PER_ARM, (
                "the per-arm thought is the Bandit lever", "the per-arm thought helps: reported with the gap",
                "reported as it is")),
            "decision_q6_stage": q6_stage_rule(rows), "decision_quarter": quarter_rule(rows),
            "decision_spaced_small": lever_rule(rows, SPACED_SMALL, (
                "answers after a space are the Bandit change for the next lineage",
                "answers after a space help: reported with the gap", "reported as it is"), claims=True)}


def under_gate_2(rows: dict[str, dict[str, Any]], model: str) -> bool | None:
    """Whether ``model`` has format errors under gate 2's 2% on bandit, bandit_heldout and bandit_reversed (None
    until it played all three)."""
    played = [rows.get(f"{model}-{preset}-val") for preset in ("bandit", *JUDGED)]
    return None if None in played else all(row["format_error_rate"] < GATE_2 for row in played)


def under_gates_1_and_2(rows: dict[str, dict[str, Any]], model: str) -> bool | None:
    """Whether ``model`` is under gate 2 on the three Bandit presets and its claims pooled over them are at least
    gate 1's 0.95 true (None until it played all three)."""
    played = [rows.get(f"{model}-{preset}-val") for preset in ("bandit", *JUDGED)]
    if None in played:
        return None
    true, false = sum(row["claims_true"] for row in played), sum(row["claims_false"] for row in played)
    return bool(under_gate_2(rows, model)) and true >= GATE_1 * (true + false)


def q6_stage_rule(rows: dict[str, dict[str, Any]]) -> str | None:
    """The per-arm stage addition's rule (None until its four models played the three presets): the package's
    thought is enough if both `q6judged` models pass gates 1 and 2 on Bandit; else the per-arm stage is the Bandit
    step if both `q6perarm` models do; otherwise the result is reported as it is."""
    passes = {stage: [under_gates_1_and_2(rows, model) for model in STAGES[stage]]
              for stage in ("q6judged", "q6perarm")}
    if any(None in verdicts for verdicts in passes.values()):
        return None
    if all(passes["q6judged"]):
        return "a short stage with the package's thought is enough"
    if all(passes["q6perarm"]):
        return "the per-arm stage is the Bandit step after S6"
    return "reported as it is"


def quarter_rule(rows: dict[str, dict[str, Any]]) -> str | None:
    """The quarter-Q6 addition's rule (None until both models played the three presets): the fix is the Bandit
    change for the next lineage if `qqfix915` passes gates 1 and 2 on Bandit and `qq915` does not; the proxy does not
    show the failure if both pass; otherwise the result is reported as it is."""
    plain, fix = (under_gates_1_and_2(rows, model) for model in STAGES["quarter"])
    if plain is None or fix is None:
        return None
    if fix and not plain:
        return "spaced answers with 'Of the two,' are the Bandit change for the next lineage"
    if fix and plain:
        return "the quarter stage does not show the lineage's Bandit misses: reported as it is"
    return "reported as it is"


def both_rule(rows: dict[str, dict[str, Any]], stage: str = "both") -> str | None:
    """The rule of the additions with the judged counts and crossed pairs together (``both``: 2,000 crossed
    demonstrations, ``more``: 6,000): the mixture is the Bandit lever if both models are under gate 2 on the three
    presets (None until both played)."""
    under = [under_gate_2(rows, model) for model in STAGES[stage]]
    if None in under:
        return None
    return "this mixture is the Bandit lever" if all(under) else "reported as it is"


def spaced_rule(rows: dict[str, dict[str, Any]]) -> str | None:
    """The spaced-answer addition's rule (None until `spaced` and `judged` played the three presets on both seeds):
    spaced answers are the lever if both `spaced` models are under gate 2 on the three presets; the respelling
    caused the answer-level misses if, on each seed, `spaced` has none on the held-out presets and `judged` has some."""
    under = {model: under_gate_2(rows, model) for model in (*STAGES["spaced"], *STAGES["judged"])}
    if None in under.values():
        return None
    if all(under[model] for model in STAGES["spaced"]):
        return "spaced answers are the Bandit lever"
    misses = {model: sum(rows[f"{model}-{preset}-val"]["answer_level_miss"] for preset in JUDGED) for model in under}
    if all(misses[spaced] == 0 < misses[judged] for spaced, judged in zip(STAGES["spaced"], STAGES["judged"])):
        return "the respelling caused the answer-level misses: keep spaced answers beside the next stage's other changes"
    return "reported as it is"


def lever_rule(rows: dict[str, dict[str, Any]], replicates: dict[str, tuple[str, str]],
               outcomes: tuple[str, str, str], wide: bool = False, claims: bool = False) -> str | None:
    """A random-weight addition's rule over its replicates (treated, control), None until every model played bandit,
    the two judged sets and, with ``wide``, the wide val set: ``outcomes[0]`` if every treated model is under gate 2 on
    the three presets (and answers on the level's arms on 98% of the wide turns; with ``claims``, its claims pooled
    over the three are also at least gate 1's 0.95 true), ``outcomes[1]`` if on each seed the
    treated model answers on the arms more often than its control on the judged sets together (and on the wide set),
    ``outcomes[2]`` otherwise."""
    presets = ("bandit", *JUDGED, *((WIDE_VAL,) if wide else ()))
    if any(f"{model}-{preset}-val" not in rows for pair in replicates.values() for model in pair for preset in presets):
        return None

    def on(model: str, *names: str) -> int:
        return sum(rows[f"{model}-{preset}-val"]["on_arms"] for preset in names)

    def wide_share(model: str) -> float:
        row = rows[f"{model}-{WIDE_VAL}-val"]
        return row["on_arms"] / row["episodes"]

    under = under_gates_1_and_2 if claims else under_gate_2
    if all(under(rows, treated) and (not wide or wide_share(treated) >= ON_ARMS)
           for treated, _ in replicates.values()):
        return outcomes[0]
    if all(on(treated, *JUDGED) > on(control, *JUDGED) and (not wide or on(treated, WIDE_VAL) > on(control, WIDE_VAL))
           for treated, control in replicates.values()):
        return outcomes[1]
    return outcomes[2]


def crossed_rule(rows: dict[str, dict[str, Any]]) -> str | None:
    """The crossed-pairs addition's rule (None until its four models played the three presets): crossed pairs are
    the lever if both `crossed` models are under gate 2's 2% format errors on bandit, bandit_heldout and
    bandit_reversed and both `judged` ones are not; a short stage is enough if all four are; otherwise neither."""
    under = {model: under_gate_2(rows, model) for model in (*STAGES["judged"], *STAGES["crossed"])}
    if None in under.values():
        return None
    if all(under.values()):
        return "a short Bandit stage is enough: crossed pairs are not needed"
    if all(under[m] for m in STAGES["crossed"]) and not any(under[m] for m in STAGES["judged"]):
        return "crossed pairs are the Bandit lever"
    return "neither is shown to close gate 2: reported as it is"


def paired_rule(rows: dict[str, dict[str, Any]], verdicts: dict[str, bool | None],
                replicates: dict[str, tuple[str, str]], outcomes: tuple[str, str, str]) -> str | None:
    """An addition's rule over its three replicates (treated, control) (None until all six played both sets):
    ``outcomes[0]`` if every treated model passes the 98% bar on both judged sets, ``outcomes[1]`` if each
    answers on the arms more often than its control on both, ``outcomes[2]`` otherwise."""
    judged = [(rows.get(f"{treated}-{preset}-val"), rows.get(f"{control}-{preset}-val"))
              for treated, control in replicates.values() for preset in JUDGED]
    if any(row is None for pair in judged for row in pair):
        return None
    if all(verdicts[treated] for treated, _ in replicates.values()):
        return outcomes[0]
    if all(treated["on_arms"] > control["on_arms"] for treated, control in judged):
        return outcomes[1]
    return outcomes[2]


def main(argv: list[str] | None = None) -> int:
    """Summarize run.sh's evaluations, print a table and write summary.json."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("runs", type=Path, help="run.sh's eval directory")
    args = parser.parse_args(argv)
    if not args.runs.is_dir():
        parser.exit(2, f"analyze.py: error: {args.runs} is not a directory\n")
    committed = HERE / "summary.json"
    kept = json.loads(committed.read_text())["runs"] if committed.is_file() else {}
    if not any(RUN.fullmatch(run.name) and (run / "summary.json").is_file() for run in args.runs.iterdir()):
        parser.exit(2, f"analyze.py: error: no finished evaluation under {args.runs}\n")
    summary = summarize(args.runs, kept)
    (HERE / "summary.json").write_text(json.dumps(summary, indent=1) + "\n")
    print("| model | preset | success | format errors | answers on the level's arms | training partner of the low arm "
          "| answer-level misses | claims true / false |")
    print("|---|---|---|---|---|---|---|---|")
    for row in summary["runs"].values():
        claims = f"{row['claims_true']} / {row['claims_false']}" if "claims_true" in row else "-"
        print(f"| {row['model']} | {row['preset']} | {row['success_rate']:.3f} | {row['format_error_rate']:.3f} | "
              f"{row['on_arms']} / {row['episodes']} | {row['training_partner']} | {row['answer_level_miss']} | "
              f"{claims} |")
    print("decision:", summary["decision"], "| wide name set:", summary["decision_wide"],
          "| whole tokens:", summary["decision_words"], "| size:", summary["decision_size"],
          "| crossed pairs:", summary["decision_crossed"], "| judged and crossed:", summary["decision_both"],
          "| three times crossed:", summary["decision_more"], "| spaced answers:", summary["decision_spaced"],
          "| coined names:", summary["decision_coined"], "| per-arm thought:", summary["decision_per_arm"],
          "| short stage from Q6:", summary["decision_q6_stage"], "| quarter Q6:", summary["decision_quarter"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
