"""Seeds as users pass them: Python ints, or NumPy integers straight out of an array of seeds.

Gymnasium's ``Env.reset`` takes only a Python ``int``; ``np.int64(3)`` from ``np.arange`` or
``rng.integers`` is the same seed and is accepted everywhere ragen takes one.
"""

from __future__ import annotations

import numpy as np


def as_seed(seed: object) -> int:
    """``seed`` as a Python int; NumPy integers are converted. TypeError for any other type (bools
    too), ValueError for a negative seed."""
    if isinstance(seed, (bool, np.bool_)) or not isinstance(seed, (int, np.integer)):
        raise TypeError(f"seed must be an integer (int or NumPy integer), got {seed!r}")
    if seed < 0:
        raise ValueError(f"seed must be a non-negative integer, got {seed!r}")
    return int(seed)


def as_optional_seed(seed: object) -> int | None:
    """:func:`as_seed`, with None (draw from the OS's entropy) passed through, as ``reset(seed=None)`` takes it."""
    return None if seed is None else as_seed(seed)
