"""The one override grammar of every command: ``key=value`` pairs, dotted keys, YAML scalar values.

``ragen-eval --protocol max_turns=3``, ``ragen-train protocol.max_turns=3`` and
``ragen-train sft --protocol max_turns=3`` all go through :func:`parse_overrides` (options such as
``--protocol`` through :func:`parse_flag`), so a key and a value mean the same in each. Values are
read as YAML flow values, here without PyYAML (a bare install has only numpy and gymnasium): ``3``,
``-1e-4``, ``.inf``, ``true``/``false``, ``null``/``~``, ``'quoted'`` and ``"quoted"`` strings,
plain strings, and flow collections ``[1, 2]`` and ``{wall: X}``. JSON is a subset of that, so the
JSON values the commands took before still read the same.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from typing import Any

_INT = re.compile(r"[-+]?[0-9]+")
_FLOAT = re.compile(r"[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?")
_SPECIAL = {"null": None, "~": None, "true": True, "false": False,
            ".inf": math.inf, "+.inf": math.inf, "-.inf": -math.inf, ".nan": math.nan,
            # Python's spellings too: a value written with f"{x}" (as a float prints) reads back as that float
            "inf": math.inf, "+inf": math.inf, "-inf": -math.inf, "nan": math.nan}


def parse_value(text: str) -> Any:
    """The value of one override: a YAML scalar or flow collection; an empty text is the empty string.

    Raises ``ValueError`` for a malformed quoted string or collection.
    """
    stripped = text.strip()
    if not stripped:
        return ""
    if stripped[0] in "[{\"'":
        reader = _FlowReader(stripped)
        value = reader.value(flow=False)
        reader.skip_spaces()
        if reader.pos != len(stripped):
            raise ValueError(f"cannot read {text!r}: unexpected {stripped[reader.pos:]!r} after the value")
        return value
    return _plain_scalar(stripped)


def parse_overrides(pairs: Sequence[str], *, flag: str = "override") -> dict[str, Any]:
    """Turn ``["a=1", "protocol.max_turns=3"]`` into ``{"a": 1, "protocol": {"max_turns": 3}}``.

    A dotted key sets one entry of a nested mapping. Raises ``ValueError`` naming the pair (and
    ``flag``, the option it came with) when one is not ``key=value``, has an empty key part, or sets a
    key both to a value and into it.
    """
    out: dict[str, Any] = {}
    for pair in pairs:
        key, sep, raw = pair.partition("=")
        path = key.strip().split(".")
        if not sep or not all(part.strip() for part in path):
            raise ValueError(f"{flag} {pair!r} is not key=value (dotted keys reach nested fields: a.b=1)")
        value = parse_value(raw)
        place = out
        for depth, part in enumerate(path[:-1]):
            place = place.setdefault(part.strip(), {})
            if not isinstance(place, dict):
                raise ValueError(f"{flag} {pair!r}: {'.'.join(path[:depth + 1])} was already set to a value")
        last = path[-1].strip()
        if isinstance(place.get(last), dict) and not isinstance(value, Mapping):
            raise ValueError(f"{flag} {pair!r}: {'.'.join(path)} already has nested keys")
        place[last] = merge_values(place[last], value) if isinstance(place.get(last), dict) else value
    return out


def parse_flag(items: Sequence[str], flag: str) -> dict[str, Any]:
    """The fields a repeatable option such as ``--protocol`` sets, later items winning.

    Each item is ``key=value`` (:func:`parse_overrides`) or a whole flow mapping, ``{key: value, ...}``
    (JSON is one: ``'{"max_turns": 3}'``).
    """
    out: dict[str, Any] = {}
    for item in items:
        if item.lstrip().startswith("{"):
            values = parse_value(item)
            if not isinstance(values, Mapping):
                raise ValueError(f"{flag} {item!r} is neither key=value nor a mapping {{key: value, ...}}")
        else:
            values = parse_overrides([item], flag=flag)
        out = merge_values(out, values)
    return out


def parse_game_flag(items: Sequence[str], flag: str = "--env-config") -> dict[str, dict[str, Any]]:
    """``ENV:KEY=VALUE`` items (or ``ENV:{key: value, ...}``): per env, the fields they set, later items winning.

    The one per-game override grammar of ``ragen-eval --env-config`` and, in a mixture, ``ragen-train sft
    --env-config``. Raises ``ValueError`` naming the item when it has no ``ENV:`` part.
    """
    out: dict[str, dict[str, Any]] = {}
    for item in items:
        env, sep, rest = item.partition(":")
        if not sep or not env.strip():
            raise ValueError(f"{flag} takes ENV:KEY=VALUE (e.g. sokoban:num_boxes=2), got {item!r}")
        out[env.strip()] = merge_values(out.get(env.strip(), {}), parse_flag([rest], flag))
    return out


def merge_values(base: Mapping[str, Any], updates: Mapping[str, Any]) -> dict[str, Any]:
    """``base`` updated by ``updates``, nested mappings merged key by key (later wins)."""
    out = dict(base)
    for key, value in updates.items():
        if isinstance(value, Mapping) and isinstance(out.get(key), Mapping):
            out[key] = merge_values(out[key], value)
        else:
            out[key] = value
    return out


def _plain_scalar(text: str) -> Any:
    """An unquoted scalar: null, a bool, an int, a float, else the text itself."""
    lowered = text.lower()
    if lowered in _SPECIAL and text in (lowered, lowered.capitalize(), lowered.upper()):  # YAML's three spellings
        return _SPECIAL[lowered]
    if _INT.fullmatch(text):
        return int(text)
    if _FLOAT.fullmatch(text):
        return float(text)
    return text


class _FlowReader:
    """Recursive-descent reader of one YAML flow value (``[...]``, ``{...}``, quoted or plain scalars)."""

    def __init__(self, text: str) -> None:
        self.text, self.pos = text, 0

    def skip_spaces(self) -> None:
        while self.pos < len(self.text) and self.text[self.pos].isspace():
            self.pos += 1

    def fail(self, what: str) -> ValueError:
        return ValueError(f"cannot read {self.text!r}: {what} at character {self.pos}")

    def value(self, *, flow: bool = True, stops: str = ",]}") -> Any:
        self.skip_spaces()
        if self.pos >= len(self.text):
            raise self.fail("a value is missing")
        head = self.text[self.pos]
        if head == "[":
            return self.sequence()
        if head == "{":
            return self.mapping()
        if head in "\"'":
            return self.quoted()
        if not flow:  # a plain scalar at the top level runs to the end
            return _plain_scalar(self.text[self.pos:].strip())
        start = self.pos
        while self.pos < len(self.text) and self.text[self.pos] not in stops:
            self.pos += 1
        word = self.text[start:self.pos].strip()
        if not word:
            raise self.fail("a value is missing")
        return _plain_scalar(word)

    def quoted(self) -> str:
        quote, start = self.text[self.pos], self.pos
        self.pos += 1
        while self.pos < len(self.text):
            char = self.text[self.pos]
            if quote == '"' and char == "\\":
                self.pos += 2
                continue
            if char == quote:
                if quote == "'" and self.text[self.pos + 1:self.pos + 2] == "'":  # '' is a quote inside '...'
                    self.pos += 2
                    continue
                self.pos += 1
                body = self.text[start:self.pos]
                if quote == "'":
                    return body[1:-1].replace("''", "'")
                try:
                    return json.loads(body)
                except json.JSONDecodeError as err:
                    raise ValueError(f"cannot read {self.text!r}: bad escape in {body} ({err.msg})") from None
            self.pos += 1
        raise self.fail(f"the string opened with {quote} is not closed")

    def sequence(self) -> list[Any]:
        self.pos += 1
        items: list[Any] = []
        while True:
            self.skip_spaces()
            if self.text[self.pos:self.pos + 1] == "]" and not items:
                self.pos += 1
                return items
            items.append(self.value())
            if self.closes("]"):
                return items

    def mapping(self) -> dict[str, Any]:
        self.pos += 1
        items: dict[str, Any] = {}
        while True:
            self.skip_spaces()
            if self.text[self.pos:self.pos + 1] == "}" and not items:
                self.pos += 1
                return items
            key = self.value(stops=":,}")
            self.skip_spaces()
            if self.text[self.pos:self.pos + 1] != ":":
                raise self.fail("':' expected after a key")
            self.pos += 1
            items[key] = self.value()
            if self.closes("}"):
                return items

    def closes(self, closer: str) -> bool:
        """Step over a ``,`` (more items follow: False) or ``closer`` (the collection ends: True)."""
        self.skip_spaces()
        char = self.text[self.pos:self.pos + 1]
        self.pos += 1
        if char == closer:
            return True
        if char == ",":
            return False
        self.pos -= 1
        raise self.fail(f"',' or {closer!r} expected")
