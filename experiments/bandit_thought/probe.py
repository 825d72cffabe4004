"""Exploratory probe: ragen-train sft with the demonstrations' Bandit reply changed (plan.md beside this file).

    python experiments/bandit_thought/probe.py without-list ARGS...    # Bandit thoughts without the arm list
    python experiments/bandit_thought/probe.py spaced-answer ARGS...   # answers written "<answer> Tiger</answer>"
    python experiments/bandit_thought/probe.py per-arm ARGS...         # each arm's role in its own sentence
    python experiments/bandit_thought/probe.py of-the-two ARGS...      # "Of the two," after the arm list
    python experiments/bandit_thought/probe.py spaced-answer+of-the-two ARGS...  # both at once

ARGS are ``ragen-train sft``'s. ``without-list``: the grounded (and templated) Bandit thought begins "The arms are A
and B."; here it begins with the chosen arm ("Tiger is the riskier arm, but Tiger pays more on average. I choose
Tiger."). ``spaced-answer``: every demonstration's answer has a space before it, so an arm's name is spelled in the
same tokens as in the prompt and the thought (" Tiger", where "<answer>Tiger" splits it otherwise); the harness
strips the answer, so it reads the same action. ``per-arm``: after the list, one sentence for each arm in the listed
order, its role beside its name ("The arms are Owl and Tiger. Owl is the safer arm. Tiger is the riskier arm and
pays more on average. I choose Tiger."), so the name written after the list is always the next one listed, never
a choice between them. ``of-the-two``: the package's thought with "Of the two, " opening the sentence after the
list, so the list's last name is not written again at once ("The arms are Owl and Tiger. Of the two, Tiger is the
riskier arm, but Tiger pays more on average. I choose Tiger."). Variants joined by ``+`` apply together. Each change
lives only in this process (``ragen_train.thoughts``' Bandit template or ``ragen_train.demos``' reply format is
rebound), so the package stays as it is.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from typing import Any

from ragen_train import demos, thoughts

LISTED = thoughts._bandit  # the package's template, kept for the sentences after the list
REPLY = demos.format_reply  # the package's reply format, kept for the thought and the separator


def split_list(state: Mapping[str, Any], actions: Sequence[str]) -> tuple[str, str]:
    """The package's Bandit thought as its arm list ("The arms are A and B", without the period) and the rest."""
    listed = LISTED(state, actions)
    first, sep, rest = listed.partition(". ")
    if not sep or not first.startswith("The arms are "):
        raise ValueError(f"the Bandit thought no longer begins with the arm list: {listed!r}")
    return first, rest


def without_list(state: Mapping[str, Any], actions: Sequence[str]) -> str:
    """The package's Bandit thought without its first sentence ("The arms are A and B.")."""
    return split_list(state, actions)[1]


def per_arm(state: Mapping[str, Any], actions: Sequence[str]) -> str:
    """The package's arm list, then each arm's role and payoff in its own sentence, then the choice."""
    first, _ = split_list(state, actions)  # refuses an action that is not one of the arms
    arms = state["arms"]
    variances = [float(a["variance"]) for a in arms]
    means = [float(a["expected_reward"]) for a in arms]
    sentences = []
    for arm in arms:
        facts = []
        if max(variances) > min(variances) and float(arm["variance"]) in (max(variances), min(variances)):
            facts.append(f"is the {'riskier' if float(arm['variance']) == max(variances) else 'safer'} arm")
        if max(means) > min(means) and float(arm["expected_reward"]) == max(means):
            facts.append("pays more on average")
        if facts:
            sentences.append(f"{arm['name']} {' and '.join(facts)}.")
    chosen = next(a["name"] for a in arms if str(a["name"]).lower() == str(actions[0]).lower())
    return " ".join([f"{first}.", *sentences, f"I choose {chosen}."])


def of_the_two(state: Mapping[str, Any], actions: Sequence[str]) -> str:
    """The package's Bandit thought with "Of the two, " between the arm list and the sentence after it."""
    first, rest = split_list(state, actions)
    return f"{first}. Of the two, {rest}"


def spaced_answer(actions: Sequence[str], separator: str = "||", thought: str | None = None) -> str:
    """The package's reply with a space opening the answer: ``<answer> Tiger</answer>``."""
    reply = REPLY(actions, separator, thought)
    head, tag, answer = reply.rpartition("<answer>")
    if not tag:
        raise ValueError(f"the reply format no longer holds <answer>: {reply!r}")
    return f"{head}{tag} {answer}"


#: Each variant: the module, the name it rebinds there, and what it binds.
VARIANTS = {"without-list": (thoughts, "_bandit", without_list),
            "spaced-answer": (demos, "format_reply", spaced_answer),
            "per-arm": (thoughts, "_bandit", per_arm),
            "of-the-two": (thoughts, "_bandit", of_the_two)}


def main(argv: list[str] | None = None) -> int:
    """Run ragen-train sft on the arguments after the variants (joined by ``+``), with their changes made in this
    process."""
    args = sys.argv[1:] if argv is None else argv
    variants = args[0].split("+") if args else []
    known = variants and all(v in VARIANTS for v in variants)
    if not known or len({VARIANTS[v][1] for v in variants}) < len(variants):  # two rewrites of one thing clash
        print(f"usage: probe.py {{{','.join(VARIANTS)}}}[+VARIANT] ARGS... (ragen-train sft's arguments; joined "
              "variants change different things)", file=sys.stderr)
        return 2
    for variant in variants:
        module, name, replacement = VARIANTS[variant]
        setattr(module, name, replacement)
    from ragen_train.cli import main as ragen_train
    return ragen_train(["sft", *args[1:]])


if __name__ == "__main__":
    sys.exit(main())
