"""Named, fixed seed splits, so every model and every run plays the same levels.

The splits are disjoint ranges of level seeds. A seed is what ``env.reset(seed=...)`` takes; the
level itself is a pure function of (env config, seed).
"""

from __future__ import annotations

#: First seed of each split. Ranges are 10**8 wide, far more than any run draws.
SPLIT_OFFSETS: dict[str, int] = {"train": 0, "val": 100_000_000, "test": 200_000_000}
SPLIT_SIZE = 100_000_000


def split_seeds(split: str, n: int, start: int = 0) -> list[int]:
    """The seeds ``start .. start+n-1`` of a named split (``train``, ``val`` or ``test``)."""
    if split not in SPLIT_OFFSETS:
        raise ValueError(f"unknown split {split!r}; choose one of {sorted(SPLIT_OFFSETS)}")
    if n < 0 or start < 0 or start + n > SPLIT_SIZE:
        raise ValueError(f"split {split!r} holds seeds 0..{SPLIT_SIZE - 1}; asked for {start}..{start + n - 1}")
    base = SPLIT_OFFSETS[split]
    return list(range(base + start, base + start + n))
