"""Reading and writing levels in the standard Sokoban text notation and in Boxoban files.

Standard notation: ``#`` wall, ``@`` player, ``+`` player on a target, ``$`` box, ``*`` box on a
target, ``.`` target, space floor (``-`` and ``_`` are read as floor too). Boxoban files (DeepMind's
level sets) hold many 10x10 levels, each after a ``; N`` header line.
"""

from __future__ import annotations

import pathlib
from collections.abc import Iterable

from ragen_envs.deadline import check_deadline
from ragen_envs.sokoban.level import SokobanLevel

_FLOOR_CHARS = " -_"


def parse_level(text: str) -> SokobanLevel:
    """Parse one level in standard notation. Raises ValueError naming the problem if it is malformed."""
    if not isinstance(text, str):
        raise TypeError(f"parse_level expects a str, got {type(text).__name__}")
    check_deadline()  # a level file of a million levels takes minutes to read
    lines = [line.rstrip("\r") for line in text.split("\n")]
    while lines and not lines[0].strip():
        lines.pop(0)
    while lines and not lines[-1].strip():
        lines.pop()
    if not lines:
        raise ValueError("the level text is empty")
    height, width = len(lines), max(len(line) for line in lines)
    walls, targets, boxes, players = set(), [], [], []
    for r, line in enumerate(lines):
        for c, ch in enumerate(line.ljust(width)):
            if ch == "#":
                walls.add((r, c))
            elif ch in "@+":
                players.append((r, c))
            elif ch in "$*":
                boxes.append((r, c))
            elif ch not in "." + _FLOOR_CHARS:
                raise ValueError(
                    f"unexpected character {ch!r} at row {r}, column {c} of the level; use # @ + $ * . or space"
                )
            if ch in ".+*":
                targets.append((r, c))
    if len(players) != 1:
        raise ValueError(f"a level needs exactly one player (@ or +), found {len(players)}")
    return SokobanLevel(height, width, frozenset(walls), tuple(targets), tuple(boxes), players[0])


def format_level(level: SokobanLevel) -> str:
    """The level in standard notation, one line per grid row (no trailing newline)."""
    walls, targets, boxes = level.walls, set(level.targets), set(level.boxes)
    rows = []
    for r in range(level.height):
        row = []
        for c in range(level.width):
            cell = (r, c)
            if cell in walls:
                row.append("#")
            elif cell == level.player:
                row.append("+" if cell in targets else "@")
            elif cell in boxes:
                row.append("*" if cell in targets else "$")
            else:
                row.append("." if cell in targets else " ")
        rows.append("".join(row))
    return "\n".join(rows)


def parse_boxoban(text: str) -> list[SokobanLevel]:
    """Parse the contents of a Boxoban file: levels each introduced by a ``; N`` line."""
    levels: list[SokobanLevel] = []
    block: list[str] = []
    header: str | None = None

    def flush() -> None:
        if header is None:
            if any(line.strip() for line in block):
                raise ValueError("Boxoban text has level rows before the first '; N' header line")
            return
        if not any(line.strip() for line in block):
            raise ValueError(f"Boxoban level {header!r} has no rows")
        try:
            levels.append(parse_level("\n".join(block)))
        except ValueError as err:
            raise ValueError(f"Boxoban level {header!r}: {err}") from None

    for line in text.splitlines():
        if line.startswith(";"):
            flush()
            header, block = line[1:].strip(), []
        else:
            block.append(line)
    flush()
    if not levels:
        raise ValueError("no levels found: a Boxoban file has '; N' header lines, each followed by a level")
    return levels


def load_boxoban(path: str | pathlib.Path) -> list[SokobanLevel]:
    """Read every level of a Boxoban file (e.g. ``boxoban-levels/unfiltered/train/000.txt``)."""
    return parse_boxoban(pathlib.Path(path).read_text(encoding="utf-8"))


def format_boxoban(levels: Iterable[SokobanLevel]) -> str:
    """Levels as Boxoban file text (``; 0``, rows, blank line, ``; 1``, ...)."""
    return "".join(f"; {i}\n{format_level(level)}\n\n" for i, level in enumerate(levels))
