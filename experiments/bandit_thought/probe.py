"""Exploratory probe: ragen-train sft with the demonstrations' Bandit reply changed (plan.md beside this file).

    python experiments/bandit_thought/probe.py without-list ARGS...    # Bandit thoughts without the arm list
    python experiments/bandit_thought/probe.py spaced-answer ARGS...   # answers written "<answer> Tiger</answer>"

ARGS are ``ragen-train sft``'s. ``without-list``: the grounded (and templated) Bandit thought begins "The arms are A
and B."; here it begins with the chosen arm ("Tiger is the riskier arm, but Tiger pays more on average. I choose
Tiger."). ``spaced-answer``: every demonstration's answer has a space before it, so an arm's name is spelled in the
same tokens as in the prompt and the thought (" Tiger", where "<answer>Tiger" splits it otherwise); the harness
strips the answer, so it reads the same action. Each change lives only in this process (``ragen_train.thoughts``'
Bandit template or ``ragen_train.demos``' reply format is rebound), so the package stays as it is.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from typing import Any

from ragen_train import demos, thoughts

LISTED = thoughts._bandit  # the package's template, kept for the sentences after the list
REPLY = demos.format_reply  # the package's reply format, kept for the thought and the separator


def without_list(state: Mapping[str, Any], actions: Sequence[str]) -> str:
    """The package's Bandit thought without its first sentence ("The arms are A and B.")."""
    listed = LISTED(state, actions)
    first, sep, rest = listed.partition(". ")
    if not sep or not first.startswith("The arms are "):
        raise ValueError(f"the Bandit thought no longer begins with the arm list: {listed!r}")
    return rest


def spaced_answer(actions: Sequence[str], separator: str = "||", thought: str | None = None) -> str:
    """The package's reply with a space opening the answer: ``<answer> Tiger</answer>``."""
    reply = REPLY(actions, separator, thought)
    head, tag, answer = reply.rpartition("<answer>")
    if not tag:
        raise ValueError(f"the reply format no longer holds <answer>: {reply!r}")
    return f"{head}{tag} {answer}"


#: Each variant: the module, the name it rebinds there, and what it binds.
VARIANTS = {"without-list": (thoughts, "_bandit", without_list), "spaced-answer": (demos, "format_reply", spaced_answer)}


def main(argv: list[str] | None = None) -> int:
    """Run ragen-train sft on the arguments after the variant, with the variant's change made in this process."""
    args = sys.argv[1:] if argv is None else argv
    if not args or args[0] not in VARIANTS:
        print(f"usage: probe.py {{{','.join(VARIANTS)}}} ARGS... (ragen-train sft's arguments)", file=sys.stderr)
        return 2
    module, name, replacement = VARIANTS[args[0]]
    setattr(module, name, replacement)
    from ragen_train.cli import main as ragen_train
    return ragen_train(["sft", *args[1:]])


if __name__ == "__main__":
    sys.exit(main())
