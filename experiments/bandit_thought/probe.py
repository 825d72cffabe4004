"""Exploratory probe: ragen-train sft with the Bandit thought's arm list taken out (plan.md beside this file).

    python experiments/bandit_thought/probe.py ARGS...   # ragen-train sft ARGS, Bandit thoughts without the arm list

The grounded (and templated) Bandit thought begins "The arms are A and B."; here it begins with the chosen arm
("Tiger is the riskier arm, but Tiger pays more on average. I choose Tiger."). The change lives only in this process
(``ragen_train.thoughts``' Bandit template is rebound), so the package's thoughts stay as they are.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from typing import Any

from ragen_train import thoughts

LISTED = thoughts._bandit  # the package's template, kept for the sentences after the list


def without_list(state: Mapping[str, Any], actions: Sequence[str]) -> str:
    """The package's Bandit thought without its first sentence ("The arms are A and B.")."""
    listed = LISTED(state, actions)
    first, sep, rest = listed.partition(". ")
    if not sep or not first.startswith("The arms are "):
        raise ValueError(f"the Bandit thought no longer begins with the arm list: {listed!r}")
    return rest


def main(argv: list[str] | None = None) -> int:
    """Run ragen-train sft on the arguments with the Bandit thought rebound to :func:`without_list`."""
    thoughts._bandit = without_list
    from ragen_train.cli import main as ragen_train
    return ragen_train(["sft", *(sys.argv[1:] if argv is None else argv)])


if __name__ == "__main__":
    sys.exit(main())
