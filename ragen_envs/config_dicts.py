"""Config dataclasses from plain dicts, the form they take in JSON files, presets and keyword arguments.

Every config of the package (the games', the text protocol's, the harness's) is read the same way:
unknown keys are an error that names them and lists the known ones, since a misspelt field that
silently kept its default would change an experiment without a trace.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import fields
from typing import Any, TypeVar

ConfigT = TypeVar("ConfigT")


def config_from_dict(cls: type[ConfigT], values: Mapping[str, Any]) -> ConfigT:
    """``cls(**values)`` for the dataclass ``cls``; missing fields default, unknown keys raise a ValueError."""
    if not isinstance(values, Mapping):
        raise TypeError(f"{cls.__name__}.from_dict needs a mapping, got {type(values).__name__}")
    known = {f.name for f in fields(cls)}
    unknown = sorted(set(values) - known)
    if unknown:
        raise ValueError(f"unknown {cls.__name__} fields: {unknown}; known fields: {sorted(known)}")
    return cls(**dict(values))


def require_ints(config: object, names: tuple[str, ...], minimum: int = 1) -> None:
    """Raise ValueError naming the first of ``config``'s fields ``names`` that is not an int >= ``minimum``
    (a bool is not an int here: ``True`` for a count is a mistake, not a 1)."""
    for name in names:
        value = getattr(config, name)
        if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
            kind = "a positive int" if minimum == 1 else f"an int >= {minimum}"
            raise ValueError(f"{type(config).__name__}.{name} must be {kind}, got {value!r}")


def coerce_config(cls: type[ConfigT], config: ConfigT | Mapping[str, Any] | None) -> ConfigT:
    """Accept a ``cls`` instance, a dict of its fields, or None (the defaults)."""
    if config is None:
        return cls()
    if isinstance(config, cls):
        return config
    if isinstance(config, Mapping):
        return config_from_dict(cls, config)
    raise TypeError(f"config must be a {cls.__name__}, a dict of its fields or None, got {type(config).__name__}")
