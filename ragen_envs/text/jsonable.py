"""Conversion of game output (numpy scalars and arrays, tuples) into plain JSON values."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

# Exact types checked first: records are built on every turn, and most values are already plain.
_PLAIN = frozenset({str, int, float, bool, type(None)})


def to_jsonable(value: Any) -> Any:
    """``value`` with numpy scalars/arrays turned into Python numbers/lists and tuples into lists.

    Raises ``TypeError`` naming the offending type for anything JSON cannot hold, so a record is never
    written half-serialisable.
    """
    kind = type(value)
    if kind in _PLAIN:
        return value
    if kind is list or kind is tuple:
        return [v if type(v) in _PLAIN else to_jsonable(v) for v in value]
    if kind is dict:
        return {str(k): v if type(v) in _PLAIN else to_jsonable(v) for k, v in value.items()}
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, Mapping):
        return {str(k): to_jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_jsonable(v) for v in value]
    raise TypeError(f"cannot store a {type(value).__name__} in an episode record: {value!r:.80}")


def plain_info(info: Mapping[str, Any], drop: str = "certificate") -> dict[str, Any]:
    """A step ``info`` dict as plain JSON, without the key ``drop`` (stored once per episode instead)."""
    return {str(k): v if type(v) in _PLAIN else to_jsonable(v) for k, v in info.items() if k != drop}


def is_plain_json(value: Any) -> bool:
    """True when ``value`` is built only of dict (str keys), list, str, int, float, bool and None."""
    kind = type(value)
    if kind in _PLAIN:
        return True
    if kind is list:
        return all(is_plain_json(v) for v in value)
    if kind is dict:
        return all(type(k) is str and is_plain_json(v) for k, v in value.items())
    return False
