"""Exploratory probe: can Bandit data with many arm names teach the thinking model to copy names from the prompt?

    python experiments/thinking_model/bandit_copy_probe.py train ARGS...   # ragen-train ARGS, with the name set
    python experiments/thinking_model/bandit_copy_probe.py eval ARGS...    # ragen-eval ARGS, with the name set

Runs ragen-train or ragen-eval with one extra Bandit name set, ``wide``: 20 calm low-risk names and 20 bold
high-risk names (400 pairs, split by content like the other sets), disjoint from every built-in set. The set lives
only in this process (rebound in every loaded module that holds ``NAME_POOLS``), so the package's name sets and presets
stay as they are; select it with ``--env bandit --env-config name_set=wide`` (ragen-eval:
``--env-config bandit:name_set=wide``). Commands and figures: results.md, "Third attempt".
"""

from __future__ import annotations

import sys
from types import MappingProxyType, ModuleType

import ragen_envs.bandit  # noqa: F401  (loads every module that reads NAME_POOLS)
from ragen_envs.bandit.names import NAME_POOLS, NamePool

WIDE = NamePool(
    low_risk=("Maple", "Pebble", "Harvest", "Meadow", "Quilt", "Lantern", "Willow", "Cottage", "Pillow", "Garden",
              "Blanket", "Candle", "Teapot", "Biscuit", "Kettle", "Sparrow", "Cedar", "Brook", "Mitten", "Acorn"),
    high_risk=("Volcano", "Rocket", "Blaze", "Thunder", "Cyclone", "Cobra", "Falcon", "Viper", "Inferno", "Storm",
               "Wolf", "Panther", "Raptor", "Blizzard", "Scorpion", "Lightning", "Torrent", "Bandit", "Hurricane",
               "Rampage"),
)


def pool_readers() -> list[ModuleType]:
    """The loaded modules whose ``NAME_POOLS`` is the package's own mapping (each imported it by name)."""
    # Read each module's own namespace: getattr on a lazy module (transformers) imports its submodules.
    return [module for module in list(sys.modules.values())
            if getattr(module, "__dict__", {}).get("NAME_POOLS") is NAME_POOLS]


def main(argv: list[str] | None = None) -> int:
    """Add the ``wide`` name set, then run ragen-train (``train``) or ragen-eval (``eval``) on the other arguments."""
    args = sys.argv[1:] if argv is None else argv
    if not args or args[0] not in ("train", "eval"):
        print("usage: bandit_copy_probe.py train|eval ARGS...", file=sys.stderr)
        return 2
    used = {name for pool in NAME_POOLS.values() for name in pool.low_risk + pool.high_risk}
    assert used.isdisjoint(WIDE.low_risk + WIDE.high_risk), "the wide set must share no name with the built-in sets"
    pools = MappingProxyType({**NAME_POOLS, "wide": WIDE})
    for module in pool_readers():
        module.NAME_POOLS = pools
    if args[0] == "train":
        from ragen_train.cli import main as run
    else:
        from ragen_eval.cli import main as run
    return run(args[1:])


if __name__ == "__main__":
    sys.exit(main())
