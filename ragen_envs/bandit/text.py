"""Bandit as text: the rules an LLM reads, how to answer, and the arms before and after the pull.

Bandit draws no grid, so it has no symbols; the arm names are the whole vocabulary.
"""

from __future__ import annotations

from collections.abc import Sequence

from ragen_envs.bandit.config import BanditConfig
from ragen_envs.bandit.level import BanditLevel


def names_list(names: Sequence[str]) -> str:
    """``"A, B and C"``."""
    return ", ".join(names[:-1]) + f" and {names[-1]}" if len(names) > 1 else names[0]


def rules_text(config: BanditConfig, level: BanditLevel | None, names: Sequence[str]) -> str:
    """The rules in plain English; payoffs are stated only if ``config.reveal_payoffs`` (and a level is drawn)."""
    lines = [
        f"Bandit: there are {config.num_arms} arms to pull: {names_list(list(names))}.",
        "You pull exactly one arm, once, and receive the reward it pays.",
    ]
    if config.reveal_payoffs and level is not None:
        lines.append("Payoffs:")
        for arm in level.arms:
            if arm.low_risk:
                lines.append(f"  {arm.name}: pays {arm.payout:g} every time.")
            else:
                lines.append(f"  {arm.name}: pays {arm.payout:g} with probability {arm.pay_prob:g}, otherwise 0.")
    else:
        lines.append("Each arm pays according to its own hidden distribution; the names are your only clue.")
    lines.append("Pick the arm you expect to pay the most on average.")
    return "\n".join(lines)


def legend_text(names: Sequence[str]) -> str:
    """How to answer: one arm's name as written."""
    return f"Answer with the name of one arm exactly as written: {' or '.join(names)}."


def observation_text(names: Sequence[str], chosen: int | None, reward: float | None) -> str:
    """The arms to choose from, or which arm was pulled and what it paid."""
    if chosen is None:
        return f"Arms: {', '.join(names)}. Choose one to pull."
    return f"You pulled {names[chosen]} and received {reward:g}."
