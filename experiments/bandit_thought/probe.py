"""Exploratory probe: ragen-train sft with the demonstrations' Bandit thought changed (plan.md beside this file).

    python experiments/bandit_thought/probe.py without-list ARGS...    # Bandit thoughts without the arm list
    python experiments/bandit_thought/probe.py per-arm ARGS...         # each arm's role in its own sentence
    python experiments/bandit_thought/probe.py of-the-two ARGS...      # "Of the two," after the arm list

ARGS are ``ragen-train sft``'s. ``without-list``: the grounded (and templated) Bandit thought begins "The arms are A
and B."; here it begins with the chosen arm ("Tiger is the riskier arm, but Tiger pays more on average. I choose
Tiger."). ``per-arm``: after the list, one sentence for each arm in the listed order, its role beside its name ("The
arms are Owl and Tiger. Owl is the safer arm. Tiger is the riskier arm and pays more on average. I choose Tiger."),
so the name written after the list is always the next one listed, never a choice between them. ``of-the-two``: the
package's thought with "Of the two, " opening the sentence after the list, so the list's last name is not written
again at once ("The arms are Owl and Tiger. Of the two, Tiger is the riskier arm, but Tiger pays more on average. I
choose Tiger."). Answers written after a space are ``ragen-train sft``'s own ``--answer-space``, which ARGS may
hold. Each change lives only in this process (``ragen_train.thoughts``' Bandit template is rebound), so the package
stays as it is.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from typing import Any

from ragen_train import thoughts

LISTED = thoughts._bandit  # the package's template, kept for the sentences after the list


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


#: Each variant's Bandit thought, bound in place of the package's template.
VARIANTS = {"without-list": without_list, "per-arm": per_arm, "of-the-two": of_the_two}


def main(argv: list[str] | None = None) -> int:
    """Run ragen-train sft on the arguments after the variant, with its Bandit thought bound in this process."""
    args = sys.argv[1:] if argv is None else argv
    if not args or args[0] not in VARIANTS:
        print(f"usage: probe.py {{{','.join(VARIANTS)}}} ARGS... (ragen-train sft's arguments)", file=sys.stderr)
        return 2
    thoughts._bandit = VARIANTS[args[0]]
    from ragen_train.cli import main as ragen_train
    return ragen_train(["sft", *args[1:]])


if __name__ == "__main__":
    sys.exit(main())
