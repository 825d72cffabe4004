"""Named splits (train, val, test) that are disjoint by level content, not only by seed.

API::

    split_seeds(split, n, start=0, *, env, env_config=None) -> list[int]
        The first n seeds at or after ``SPLIT_OFFSETS[split] + start`` whose level belongs to ``split``.
    LevelSplitter(env, env_config=None)          # one env instance, reused for many seeds
        .split_of(seed) -> str | None            # split of the seed's level; None: shared by every split
        .belongs(split, seed) -> bool            # seed lies in the split's range and its level in the split
        .seeds(split, n, start=0, *, kept=None)  # what split_seeds returns; kept(seed) on each found
    level_split(key: bytes | None) -> str | None # split of a level key (``TextGame.level_key()``)
    seed_range_split(seed) -> str                # which split's seed range holds ``seed``

A seed is what ``env.reset(seed=...)`` takes and stays the public handle of a level (episodes are
keyed ``env:seed``). The generators map many seeds to one level (a 6x6 room with one box, a 4x4
lake), so seed ranges alone let a test level reappear among training seeds. Here a level's split is
a hash of its content: ``blake2b`` of the game's ``level_key()`` (Sokoban: walls, targets, boxes and
player; FrozenLake: the map; Bandit: the arm names and their roles) put into buckets of 80/10/10
percent. A seed belongs to a split when it lies in that split's seed range *and* its level hashes to
that split, so no test level is ever played from a train or val seed, for any number of seeds and in
any preset (presets that share a generator agree on every level's split).

A game whose config can make only one level up to presentation (``bandit``: Phoenix and Dragon, in
either order) returns ``level_key() is None``: there is nothing to hold out, so every split plays it
and its splits are the seed ranges alone; held-out names are the presets ``bandit_heldout`` and
``bandit_reversed``, whose name sets are split by content like any other level.

Everything here is a pure function of its arguments; nothing is cached between calls.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping
from typing import Any

#: First seed of each split's range. Ranges are 10**8 wide, far more than any run draws.
SPLIT_OFFSETS: dict[str, int] = {"train": 0, "val": 100_000_000, "test": 200_000_000}
SPLIT_SIZE = 100_000_000
#: Percent of level hashes (and so, on average, of levels) in each split, in bucket order.
SPLIT_SHARES: dict[str, int] = {"train": 80, "val": 10, "test": 10}
#: Seeds a walk may pass over per seed asked for before it gives up: a split that keeps fewer than
#: one seed in this many has (almost) no levels of its own, and saying so beats walking 10**8 seeds.
MAX_WALK_PER_SEED = 200
_MIN_WALK = 1_000
# Part of every hash; a new value would move levels between splits, so it carries a version.
_PERSON = b"ragen-split-v1"


def level_split(key: bytes | None) -> str | None:
    """The split a level with ``key`` (a game's ``level_key()``) belongs to; None for a shared level."""
    if key is None:
        return None
    if not isinstance(key, bytes):
        raise TypeError(f"a level key is bytes, got {type(key).__name__}")
    bucket = int.from_bytes(hashlib.blake2b(key, digest_size=8, person=_PERSON).digest(), "big") % 100
    for split, share in SPLIT_SHARES.items():
        if bucket < share:
            return split
        bucket -= share
    raise AssertionError("SPLIT_SHARES must add up to 100")


def seed_range_split(seed: int) -> str:
    """The split whose seed range holds ``seed``; ValueError for a seed outside every range."""
    for split, offset in SPLIT_OFFSETS.items():
        if offset <= seed < offset + SPLIT_SIZE:
            return split
    raise ValueError(f"seed {seed} lies outside every split's range (0..{max(SPLIT_OFFSETS.values()) + SPLIT_SIZE - 1})")


def _check_split(split: str) -> None:
    if split not in SPLIT_OFFSETS:
        raise ValueError(f"unknown split {split!r}; choose one of {sorted(SPLIT_OFFSETS)}")


class LevelSplitter:
    """Decides the split of seeds of one environment (a preset and optional config overrides).

    Holds one unwrapped env and resets it to read each seed's level key, so checking many seeds
    costs one level generation each (see docs/envs.md for the measured rates).
    """

    def __init__(self, env: str, env_config: Mapping[str, Any] | None = None) -> None:
        from ragen_envs.registration import make

        self.env_name = env
        self._env = make(env, config=dict(env_config or {})).unwrapped
        self._env.reset(seed=0)
        #: The config makes one level (``level_key()`` is None): every split plays it, by seed range alone.
        self.shared = self._env.level_key() is None

    def level_key(self, seed: int) -> bytes | None:
        """The level key of the level ``env.reset(seed=seed)`` starts."""
        self._env.reset(seed=seed)
        return self._env.level_key()

    def split_of(self, seed: int) -> str | None:
        """The split of ``seed``'s level (by content); None when every split shares it."""
        # a game with one level has no key to read, so there is no level to generate
        return None if self.shared else level_split(self.level_key(seed))

    def belongs(self, split: str, seed: int) -> bool:
        """Whether ``seed`` is a seed of ``split``: in the split's range, with a level of the split (or shared)."""
        _check_split(split)
        if seed_range_split(seed) != split:
            return False
        return self.split_of(seed) in (split, None)

    def seeds(self, split: str, n: int, start: int = 0, *, kept: Callable[[int], None] | None = None) -> list[int]:
        """The first ``n`` seeds of ``split`` at or after index ``start`` of its range; ``kept`` is called
        with each seed as it is found (a long walk's progress)."""
        _check_split(split)
        if n < 0 or start < 0 or start >= SPLIT_SIZE:
            raise ValueError(f"split {split!r} walks seed indices 0..{SPLIT_SIZE - 1}; asked for {n} from {start}")
        base = SPLIT_OFFSETS[split]
        if self.shared:
            if start + n > SPLIT_SIZE:
                raise ValueError(f"split {split!r} holds seed indices 0..{SPLIT_SIZE - 1}; asked for {start}..{start + n - 1}")
            shared = list(range(base + start, base + start + n))
            for seed in shared if kept is not None else ():
                kept(seed)
            return shared
        limit = min(SPLIT_SIZE, start + max(_MIN_WALK, MAX_WALK_PER_SEED * n))
        found: list[int] = []
        index = start
        while len(found) < n:
            if index >= limit:
                raise ValueError(
                    f"split {split!r} of {self.env_name} kept only {len(found)} of {n} seeds in seed indices "
                    f"{start}..{index - 1}: its levels are too few or too rare; ask for fewer or choose another split"
                )
            if self.split_of(base + index) in (split, None):
                found.append(base + index)
                if kept is not None:
                    kept(base + index)
            index += 1
        return found


def split_seeds(split: str, n: int, start: int = 0, *, env: str,
                env_config: Mapping[str, Any] | None = None) -> list[int]:
    """The first ``n`` seeds of ``split`` for ``env`` (a preset name or id, with optional config
    overrides), walking the split's seed range from index ``start`` and keeping the seeds whose level
    belongs to the split; see the module docstring."""
    return LevelSplitter(env, env_config).seeds(split, n, start)
