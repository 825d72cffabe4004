"""Arm-name pools: which names the low-risk arm and the high-risk arms are drawn from, per name set."""

from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType


@dataclass(frozen=True)
class NamePool:
    """Candidate names for the low-risk arm and for the high-risk arms of one name set."""

    low_risk: tuple[str, ...]
    high_risk: tuple[str, ...]


#: ``ragen``: RAGEN's pair. ``heldout``: unseen names with a similar calm-versus-bold contrast, for
#: generalisation tests. ``reversed``: the safe arm has a thrilling name and the risky arm a sober one,
#: so a model that trusts connotations picks the wrong arm. The pools are pairwise disjoint.
NAME_POOLS: MappingProxyType[str, NamePool] = MappingProxyType({
    "ragen": NamePool(low_risk=("Phoenix",), high_risk=("Dragon",)),
    "heldout": NamePool(
        low_risk=("Owl", "Tortoise", "Lighthouse", "Oak", "Unicorn", "Dove"),
        high_risk=("Tiger", "Kraken", "Comet", "Hydra", "Griffin", "Shark"),
    ),
    "reversed": NamePool(
        low_risk=("Jackpot", "Wildfire", "Tornado", "Avalanche", "Lottery", "Meteor"),
        high_risk=("Vault", "Bedrock", "Anchor", "Shelter", "Harbor", "Savings"),
    ),
})
