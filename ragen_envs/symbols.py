"""The one check of a game's cell symbols: the vocabulary its grids are drawn in, with a player's overrides."""

from __future__ import annotations

from collections.abc import Mapping


def merge_symbols(game: str, base: Mapping[str, str], override: Mapping[str, str] | None,
                  reserved: str = "") -> dict[str, str]:
    """``base`` (kind -> symbol) with ``override`` applied, checked so that the grid can be read back.

    ``override`` may name only kinds of ``base``. Every symbol must be a non-empty string without
    whitespace, hold none of the characters in ``reserved`` (those the game's cells already show, such
    as Sudoku's digits) and differ from every other symbol. Anything else is a ValueError naming
    ``game`` (a TypeError when ``override`` is not a mapping).
    """
    if override is not None and not isinstance(override, Mapping):
        raise TypeError(f"{game} symbols must be a mapping of cell kind to text, got {type(override).__name__}")
    unknown = sorted(set(override or {}) - set(base))
    if unknown:
        raise ValueError(f"unknown {game} symbol kind(s) {unknown}; known kinds: {list(base)}")
    merged = {**base, **(override or {})}
    for kind, symbol in merged.items():  # an empty or spaced symbol draws a grid no one can read back
        if not isinstance(symbol, str) or not symbol or any(ch.isspace() for ch in symbol):
            raise ValueError(f"{game} symbol for {kind!r} must be a non-empty string without spaces, "
                             f"got {symbol!r}")
        clash = sorted(set(symbol) & set(reserved))
        if clash:
            raise ValueError(f"{game} symbol for {kind!r} must not hold {''.join(clash)!r}: the grid already "
                             f"shows {reserved!r} in its cells, got {symbol!r}")
    if len(set(merged.values())) != len(merged):
        raise ValueError(f"{game} symbols must all differ, got {merged}")
    return merged
