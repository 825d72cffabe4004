"""Exploratory probe: can Bandit data with many arm names teach the thinking model to copy names from the prompt?

    python experiments/thinking_model/bandit_copy_probe.py train ARGS...   # ragen-train ARGS, with the name set
    python experiments/thinking_model/bandit_copy_probe.py eval ARGS...    # ragen-eval ARGS, with the name set
    python experiments/thinking_model/bandit_copy_probe.py check DIR SET   # a crossed run trained on train pairs only

Runs ragen-train or ragen-eval with two extra Bandit name sets. ``wide``: 20 calm low-risk names and 20 bold
high-risk names (400 pairs, split by content like the other sets), disjoint from every built-in set. ``crossed``: the
13 low-risk names of the built-in sets against their 13 high-risk names (169 pairs, roles kept), so each name meets
every name of the other role (../bandit_thought/plan.md, its crossed-pairs addition). ``coined``: 1,000 low-risk and
1,000 high-risk made-up names (``coined_pool``; its coined-names addition). The sets live only in this
process (rebound in every loaded module that holds ``NAME_POOLS``), so the package's name sets and presets stay as
they are; select one with ``--env bandit --env-config name_set=wide`` (ragen-eval: ``--env-config
bandit:name_set=wide``). ``check`` reads a finished training run DIR and confirms that the levels of its mixture entry
SET (0-based), played with ``name_set=crossed``, are train levels and none is a val or test pair of bandit_heldout or
bandit_reversed. Commands and figures: results.md, "Third attempt", and ../bandit_thought/results.md.
"""

from __future__ import annotations

import json
import sys
from itertools import product
from pathlib import Path
from types import MappingProxyType, ModuleType

import numpy as np

import ragen_envs.bandit  # noqa: F401  (loads every module that reads NAME_POOLS)
from ragen_envs.bandit.names import NAME_POOLS, NamePool
from ragen_envs.splits import LevelSplitter

WIDE = NamePool(
    low_risk=("Maple", "Pebble", "Harvest", "Meadow", "Quilt", "Lantern", "Willow", "Cottage", "Pillow", "Garden",
              "Blanket", "Candle", "Teapot", "Biscuit", "Kettle", "Sparrow", "Cedar", "Brook", "Mitten", "Acorn"),
    high_risk=("Volcano", "Rocket", "Blaze", "Thunder", "Cyclone", "Cobra", "Falcon", "Viper", "Inferno", "Storm",
               "Wolf", "Panther", "Raptor", "Blizzard", "Scorpion", "Lightning", "Torrent", "Bandit", "Hurricane",
               "Rampage"),
)
CROSSED = NamePool(
    low_risk=tuple(name for pool in NAME_POOLS.values() for name in pool.low_risk),
    high_risk=tuple(name for pool in NAME_POOLS.values() for name in pool.high_risk),
)

# Syllables of the coined names: an onset, a vowel and an optional coda each.
ONSETS = ("b", "d", "f", "g", "k", "l", "m", "n", "p", "r", "s", "t", "v", "z", "br", "dr", "gr", "kl", "pl", "st", "tr")
VOWELS = ("a", "e", "i", "o", "u")
CODAS = ("", "n", "r", "l", "s", "m")


def coined_pool(per_role: int = 1000, seed: int = 0) -> NamePool:
    """``per_role`` low-risk and ``per_role`` high-risk made-up names of two or three syllables, distinct ignoring
    case and sharing none with the built-in and wide sets: a pure function of its arguments."""
    syllables = ["".join(parts) for parts in product(ONSETS, VOWELS, CODAS)]
    taken = {name.lower() for pool in (*NAME_POOLS.values(), WIDE) for name in pool.low_risk + pool.high_risk}
    rng = np.random.default_rng(seed)
    names: list[str] = []
    while len(names) < 2 * per_role:
        name = "".join(syllables[i] for i in rng.integers(len(syllables), size=int(rng.integers(2, 4)))).capitalize()
        if name.lower() not in taken:
            taken.add(name.lower())
            names.append(name)
    return NamePool(low_risk=tuple(names[:per_role]), high_risk=tuple(names[per_role:]))


def check_crossed(run_dir: Path, entry: int) -> int:
    """Levels of mixture entry ``entry`` of the training run in ``run_dir`` (its ``level_seeds.json``), played with
    ``name_set=crossed``: raises if any is not a train level, returns how many. A pair's level key is the same in
    every name set, so a train level is never a val or test pair of bandit_heldout or bandit_reversed."""
    seeds = json.loads((run_dir / "level_seeds.json").read_text())[entry]
    splitter = LevelSplitter("ragen/Bandit-v0", {"name_set": "crossed"})
    for seed in seeds:
        if not splitter.belongs("train", seed):  # the key is read again only to name the level that fails
            raise SystemExit(f"bandit_copy_probe.py: seed {seed} of {run_dir} plays {splitter.level_key(seed)!r}, "
                             "not a crossed train pair")
    return len(seeds)


def pool_readers() -> list[ModuleType]:
    """The loaded modules whose ``NAME_POOLS`` is the package's own mapping (each imported it by name)."""
    # Read each module's own namespace: getattr on a lazy module (transformers) imports its submodules.
    return [module for module in list(sys.modules.values())
            if getattr(module, "__dict__", {}).get("NAME_POOLS") is NAME_POOLS]


def main(argv: list[str] | None = None) -> int:
    """Add the ``wide``, ``crossed`` and ``coined`` name sets, then run ragen-train (``train``) or ragen-eval (``eval``) on the
    other arguments, or check a crossed run's levels (``check``)."""
    args = sys.argv[1:] if argv is None else argv
    if not args or args[0] not in ("train", "eval", "check") or (args[0] == "check" and len(args) != 3):
        print("usage: bandit_copy_probe.py train|eval ARGS..., or bandit_copy_probe.py check DIR SET", file=sys.stderr)
        return 2
    used = {name for pool in NAME_POOLS.values() for name in pool.low_risk + pool.high_risk}
    assert used.isdisjoint(WIDE.low_risk + WIDE.high_risk), "the wide set must share no name with the built-in sets"
    pools = MappingProxyType({**NAME_POOLS, "wide": WIDE, "crossed": CROSSED, "coined": coined_pool()})
    for module in pool_readers():
        module.NAME_POOLS = pools
    if args[0] == "check":
        levels = check_crossed(Path(args[1]), int(args[2]))
        print(f"{levels} crossed levels, all train pairs outside the judged val/test")
        return 0
    if args[0] == "train":
        from ragen_train.cli import main as run
    else:
        from ragen_eval.cli import main as run
    return run(args[1:])


if __name__ == "__main__":
    sys.exit(main())
