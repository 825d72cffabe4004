"""Sokoban as text: the symbol vocabulary, the rules, the legend and the observation formats."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ragen_envs.symbols import merge_symbols

# Cell codes of the observation grid (gym-sokoban's numbering, plus 6 for the player on a target).
WALL, FLOOR, TARGET, BOX_ON_TARGET, BOX, PLAYER, PLAYER_ON_TARGET = range(7)

#: Symbol kinds in cell-code order.
SYMBOL_KINDS: tuple[str, ...] = ("wall", "floor", "target", "box_on_target", "box", "player", "player_on_target")

#: RAGEN's vocabulary for Sokoban grids.
RAGEN_SYMBOLS: dict[str, str] = {"wall": "#", "floor": "_", "target": "O", "box_on_target": "√", "box": "X",
                                 "player": "P", "player_on_target": "S"}

#: The standard level notation as a vocabulary (``_`` in place of a space so rows stay visible).
STANDARD_SYMBOLS: dict[str, str] = {"wall": "#", "floor": "_", "target": ".", "box_on_target": "*", "box": "$",
                                    "player": "@", "player_on_target": "+"}

#: Named vocabularies (the TextGame's ``symbol_sets``); the first is the default.
SYMBOL_SETS: Mapping[str, Mapping[str, str]] = {"ragen": RAGEN_SYMBOLS, "standard": STANDARD_SYMBOLS}

_DESCRIPTIONS = {"wall": "wall", "floor": "empty floor", "target": "target (an empty goal square)",
                 "box_on_target": "box on a target", "box": "box", "player": "you (the player)",
                 "player_on_target": "you, standing on a target"}


def symbol_table(symbols: Mapping[str, str] | None) -> tuple[str, ...]:
    """The characters of each cell code: RAGEN's vocabulary with ``symbols`` overriding some kinds, checked by
    :func:`ragen_envs.symbols.merge_symbols`."""
    merged = merge_symbols("Sokoban", RAGEN_SYMBOLS, symbols)
    return tuple(merged[k] for k in SYMBOL_KINDS)


def grid_text(codes: Sequence[int], width: int, table: Sequence[str]) -> str:
    """Rows of symbols, one line per grid row."""
    chars = [table[c] for c in codes]
    return "\n".join("".join(chars[i:i + width]) for i in range(0, len(chars), width))


def coords_text(codes: Sequence[int], height: int, width: int, base: int) -> str:
    """Each object with its (row, col): player, boxes, targets, and the walls inside the border."""
    player, boxes, placed, targets, walls = None, [], [], [], []
    for i, code in enumerate(codes):
        r, c = divmod(i, width)
        cell = f"({r + base}, {c + base})"
        if code in (PLAYER, PLAYER_ON_TARGET):
            player = cell + (" (on a target)" if code == PLAYER_ON_TARGET else "")
        if code == BOX:
            boxes.append(cell)
        if code == BOX_ON_TARGET:
            placed.append(cell)
        if code in (TARGET, BOX_ON_TARGET, PLAYER_ON_TARGET):
            targets.append(cell)
        if code == WALL and 0 < r < height - 1 and 0 < c < width - 1:
            walls.append(cell)
    lo, hi_r, hi_c = base, height - 1 + base, width - 1 + base
    lines = [f"grid: {height} rows x {width} columns, rows {lo}..{hi_r}, columns {lo}..{hi_c}; "
             f"the outer rows and columns are walls",
             f"player at {player}"]
    lines += [f"box at {cell}" for cell in boxes]
    lines += [f"box on target at {cell}" for cell in placed]
    lines += [f"target at {cell}" for cell in targets]
    lines.append("inner walls at " + (", ".join(walls) if walls else "none"))
    return "\n".join(lines)


def legend_text(table: Sequence[str], base: int) -> str:
    """What each symbol means, and how rows and columns are numbered."""
    lines = [f"{table[i]} = {_DESCRIPTIONS[kind]}" for i, kind in enumerate(SYMBOL_KINDS)]
    lines.append(f"Positions are (row, col) counted from {base} at the top-left cell; row grows downwards, "
                 "col grows to the right.")
    return "\n".join(lines)


def rules_text(step: float, on: float, off: float, success: float) -> str:
    """The rules of Sokoban in a few plain sentences."""
    return (
        "You are in a warehouse seen from above, drawn as a grid. Goal: push every box onto a target.\n"
        "Up, Down, Left and Right move you one cell. Walking into a box pushes it one cell further the same "
        "way, but only if that cell is free floor or an empty target; boxes never move into walls or other "
        "boxes. You cannot pull a box, so a box pushed into a corner that is not a target is stuck for good.\n"
        f"Rewards: {step:+g} per move, {on:+g} when a box lands on a target, {off:+g} when a box leaves one, "
        f"{success:+g} when the last box is placed, which ends the game."
    )
