"""Config dataclasses from plain dicts, the form they take in JSON/YAML files, presets, overrides and kwargs.

Every config of the package (the games', the text protocol's, the harness's and the trainer's) is read
the same way, by :func:`config_from_dict`: an unknown key is an error that names it and lists the known
ones (a misspelt field that silently kept its default would change an experiment without a trace), and
each value is checked against its field's type hint, with the same message for every config
(``TrainConfig.total_steps must be an int, got 'many'``). A field whose type is itself a config
dataclass is read from a nested dict the same way, and its errors are prefixed with the field's name
(``protocol: unknown ProtocolConfig fields: ['max_turnz']; ...``).
"""

from __future__ import annotations

import re

import functools
import types
from collections.abc import Mapping
from dataclasses import MISSING, Field, fields, is_dataclass
from typing import Any, TypeVar, Union, get_args, get_origin, get_type_hints

ConfigT = TypeVar("ConfigT")


def config_from_dict(cls: type[ConfigT], values: Mapping[str, Any]) -> ConfigT:
    """``cls(**values)`` for the dataclass ``cls``, each value checked against its field's type.

    Missing fields default; unknown keys raise a ValueError naming them and the known fields; a value
    of the wrong type raises a TypeError naming the field and the expected type. Ints are accepted
    for float fields (and become floats), and so are exponent strings such as ``1e-6``, which PyYAML's
    YAML 1.1 reader leaves as strings; other strings (``"0.1"``) are refused.
    """
    if not isinstance(values, Mapping):
        raise TypeError(f"{cls.__name__}.from_dict needs a mapping, got {type(values).__name__}")
    known = {f.name for f in fields(cls)}
    unknown = sorted(set(values) - known, key=str)
    if unknown:
        raise ValueError(f"unknown {cls.__name__} fields: {unknown}; known fields: {sorted(known)}")
    hints = _type_hints(cls)
    return cls(**{name: _typed(f"{cls.__name__}.{name}", name, hints[name], value) for name, value in values.items()})


def non_default_fields(config: Any) -> dict[str, Any]:
    """The fields of the dataclass instance ``config`` whose values differ from their defaults.

    The compact form a run stores of a nested config (``protocol: {max_turns: 3}``): it reads back
    with :func:`config_from_dict` to an equal config, and configs stored before that field was typed
    (as a dict of overrides) keep their form.
    """
    out = {}
    for f in fields(config):
        value = getattr(config, f.name)
        if f.init and value != field_default(f):
            out[f.name] = non_default_fields(value) if is_dataclass(value) and not isinstance(value, type) else value
    return out


def field_default(f: Field[Any]) -> Any:
    """A dataclass field's default value (a fresh one for a ``default_factory``); MISSING when it has none."""
    return f.default_factory() if f.default_factory is not MISSING else f.default


@functools.cache
def _type_hints(cls: type) -> dict[str, Any]:
    return get_type_hints(cls)


def _typed(label: str, name: str, hint: Any, value: Any) -> Any:
    """``value`` checked (and, for floats, nested configs and tuples, converted) against the hint ``hint``."""
    origin, args = get_origin(hint), get_args(hint)
    if origin in (Union, types.UnionType):
        options = [a for a in args if a is not type(None)]
        if value is None:
            if len(options) < len(args):
                return None
            raise TypeError(f"{label} cannot be null")
        return _typed(label, name, options[0], value) if len(options) == 1 else value  # wider unions: the class checks
    if hint is Any:
        return value
    if value is None:
        raise TypeError(f"{label} cannot be null")
    if is_dataclass(hint):
        if isinstance(value, hint):
            return value
        if not isinstance(value, Mapping):
            raise TypeError(f"{label} must be a mapping of {hint.__name__} fields, got {value!r}")
        try:
            return config_from_dict(hint, value)
        except (ValueError, TypeError) as err:
            raise type(err)(f"{name}: {err}") from None
    if hint is bool and not isinstance(value, bool):
        raise TypeError(f"{label} must be true or false, got {value!r}")
    if hint is int and (isinstance(value, bool) or not isinstance(value, int)):
        raise TypeError(f"{label} must be an int, got {value!r}")
    if hint is float:
        return _number(label, value)
    if hint is str and not isinstance(value, str):
        raise TypeError(f"{label} must be a string, got {value!r}")
    container = origin or hint
    if container in (dict, Mapping) and not isinstance(value, Mapping):
        raise TypeError(f"{label} must be a mapping, got {value!r}")
    if container in (list, tuple):
        if isinstance(value, (str, Mapping)) or not isinstance(value, (list, tuple)):
            raise TypeError(f"{label} must be a list, got {value!r}")
        return container(value)
    return value


_YAML11_EXPONENT = re.compile(r"[-+]?\d+(\.\d*)?[eE][-+]?\d+")


def _number(label: str, value: Any) -> float:
    if isinstance(value, str) and _YAML11_EXPONENT.match(value.strip()):
        try:
            value = float(value)
        except ValueError:
            raise TypeError(f"{label} must be a number, got {value!r}") from None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{label} must be a number, got {value!r}")
    return float(value)


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
