"""Words the rule-based extractor recognises: things on the grid, directions, numbers, coordinates.

Patterns are compiled per game by :func:`lexicon_for`, since the same word names different things
in different games ("goal" is a box target in Sokoban, the exit in FrozenLake).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache

from ragen_envs import make

NUMBER_WORDS = {"zero": 0, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
                "eight": 8, "nine": 9, "ten": 10, "a": 1, "an": 1, "once": 1, "twice": 2, "thrice": 3}
NUM = r"(?:\d+|zero|one|two|three|four|five|six|seven|eight|nine|ten)"

#: Move words and their canonical action, shared by plans and predictions.
MOVE_WORDS = {"up": "up", "upward": "up", "upwards": "up", "north": "up", "u": "up",
              "down": "down", "downward": "down", "downwards": "down", "south": "down", "d": "down",
              "left": "left", "west": "left", "l": "left", "right": "right", "east": "right", "r": "right"}
#: A move word in a plan or a prediction ("up", "north", "upwards").
MOVE = r"(?:up|down|left|right|north|south|east|west|upwards?|downwards?)"


def moves_in(text: str) -> list[str]:
    """Canonical moves of a sequence such as ``"right twice, then up"``."""
    out: list[str] = []
    for m in re.finditer(rf"({MOVE})(?:\s+(once|twice|thrice|two\s+times|three\s+times|(\d+)\s+times|x\s?(\d)))?"
                         rf"|(?:to|onto|into|towards?)\s+(?:the\s+)?\w+", text, re.IGNORECASE):
        if m.group(1) is None:
            continue
        word = m.group(1).lower()
        name = MOVE_WORDS.get(word) or MOVE_WORDS[word.replace("wards", "").replace("ward", "")]
        count = int(m.group(3) or m.group(4) or 0) or {"twice": 2, "thrice": 3, "two times": 2,
                                                         "three times": 3}.get((m.group(2) or "").lower(), 1)
        out.extend([name] * count)
    return out


_PLAYER = (r"(?:the\s+player'?s?\s+(?:current\s+)?(?:position|location|cell)|my\s+(?:current\s+)?"
           r"(?:position|location|cell|spot|square)|current\s+(?:position|location)|the\s+player|player|"
           r"the\s+agent|agent|i'm|i\s+am|i|me|myself|@)")
_SOKOBAN_THINGS = {
    "player": _PLAYER,
    "box": r"(?:boxes|box|crates?|\$)",
    "target": r"(?:targets?|goals?|docks?|storage\s+(?:spots?|locations?)|target\s+spots?)",
    "wall": r"(?:walls?|#)",
    "floor": r"(?:floor|empty\s+(?:cell|space|square)s?|free\s+cells?)",
}
_FROZENLAKE_THINGS = {
    "player": _PLAYER,
    "goal": r"(?:goal|gift|treasure|present|targets?|exit)",
    "hole": r"(?:holes?|ice\s+holes?)",
    "start": r"(?<!\bi\s)(?<!\bwe\s)start(?:ing)?(?:\s+(?:position|cell|point|tile|square))?",
    "frozen": r"(?:(?:safe\s+)?frozen(?:\s+(?:ice|tile|cell|surface))?|safe\s+(?:ice|tile|cell)s?|ice)",
}


#: The protocol's symbol kinds (ragen_envs text views) -> the claim kind a symbol names.
_SYMBOL_KIND = {"wall": "wall", "floor": "floor", "target": "target", "box_on_target": "box", "box": "box",
                "player": "player", "player_on_target": "player", "frozen": "frozen", "hole": "hole", "goal": "goal",
                "player_in_hole": "player", "player_on_goal": "player"}
_THINGS = {"sokoban": _SOKOBAN_THINGS, "frozenlake": _FROZENLAKE_THINGS}


@lru_cache(maxsize=None)
def default_symbols(game: str) -> Mapping[str, str]:
    """The symbols ``game``'s prompts use unless the protocol overrides them: the first of the game's
    ``symbol_sets``, asked of the game itself (``game`` is its preset name, as in ``state_dict()["game"]``)."""
    env = make(game)
    try:
        return next(iter(env.unwrapped.symbol_sets.values()), {})
    finally:
        env.close()


def symbol_names(game: str, symbols: Mapping[str, str] | None = None) -> tuple[tuple[str, str], ...]:
    """(symbol, claim kind) pairs the prompt's legend used: ``symbols`` over the game's defaults.

    Models name things by their symbol ("X is at (3, 3)", "the O"), so each single-character symbol
    becomes a name for its kind; "_" (floor) is left out, as it is no word.
    """
    merged = {**(default_symbols(game) if game in _THINGS else {}), **(symbols or {})}
    pairs = {(str(ch), _SYMBOL_KIND[kind]) for kind, ch in merged.items()
             if kind in _SYMBOL_KIND and len(str(ch)) == 1 and not str(ch).isspace() and str(ch) != "_"}
    return tuple(sorted(pairs))


@dataclass(frozen=True)
class Lexicon:
    """Compiled patterns for one game."""

    game: str
    thing: re.Pattern[str]
    kinds: tuple[str, ...]

    def kind_of(self, match: re.Match[str]) -> str:
        """The canonical kind of an entity match made with :attr:`thing`."""
        return next(k for k in self.kinds if match.group(k) is not None)


@lru_cache(maxsize=64)
def lexicon_for(game: str, symbols: tuple[tuple[str, str], ...] = ()) -> Lexicon:
    """The lexicon of ``sokoban`` or ``frozenlake``, plus (symbol, kind) names (cached: immutable)."""
    table = _THINGS.get(game)
    if table is None:
        raise ValueError(f"no grid lexicon for game {game!r}")
    extra: dict[str, list[str]] = {}
    for ch, kind in symbols:
        # letters only in capitals ("the X"), other characters as they are
        extra.setdefault(kind, []).append(f"(?-i:{re.escape(ch)})" if ch.isalpha() else re.escape(ch))
    alternatives = "|".join(f"(?P<{kind}>{'|'.join([pattern, *extra.get(kind, [])])})"
                            for kind, pattern in table.items())
    # "I" must not match inside words or "I start" (a verb); symbols need no word boundary.
    thing = re.compile(rf"(?<![\w'])(?:{alternatives})(?![\w'])(?!\s+start\b)", re.IGNORECASE)
    return Lexicon(game, thing, tuple(table))


def to_int(word: str) -> int:
    """``"3"`` or ``"three"`` -> 3."""
    return int(word) if word.isdigit() else NUMBER_WORDS[word.lower()]


_COORD_PATTERNS = (
    # (2, 3) or [2,3]
    (r"[(\[]\s*(?P<a>\d+)\s*,\s*(?P<b>\d+)\s*[)\]]", "rc"),
    # row 2, column 3 / row 2 col 3 / row two and column three
    (rf"\brow\s*(?P<a>{NUM})\s*(?:,|and|;)?\s*(?:,\s*)?(?:col(?:umn)?|c)\.?\s*(?P<b>{NUM})\b", "rc"),
    # column 3, row 2 (column first)
    (rf"\bcol(?:umn)?\.?\s*(?P<b>{NUM})\s*(?:,|and)?\s*row\s*(?P<a>{NUM})\b", "rc"),
    # r2c3
    (r"\br(?P<a>\d+)\s*c(?P<b>\d+)\b", "rc"),
    # bare 2,3 (not part of a longer list of numbers or a decimal)
    (r"(?<![\d.,(\[])\b(?P<a>\d+)\s*,\s*(?P<b>\d+)\b(?![\d.]|\s*,\s*\d)", "rc"),
)
COORD = re.compile("|".join(f"(?:{p})".replace("?P<a>", f"?P<a{i}>").replace("?P<b>", f"?P<b{i}>")
                            for i, (p, _) in enumerate(_COORD_PATTERNS)), re.IGNORECASE)


def coord_value(match: re.Match[str], base: int) -> tuple[int, int]:
    """0-based (row, col) of a :data:`COORD` match read under ``base``."""
    for i in range(len(_COORD_PATTERNS)):
        if match.group(f"a{i}") is not None:
            return to_int(match.group(f"a{i}")) - base, to_int(match.group(f"b{i}")) - base
    raise AssertionError("COORD matched without a row group")
