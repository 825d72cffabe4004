"""Arithmetic expressions over the numbers of a Countdown level: every way to combine them, exactly evaluated.

A template is a binary tree whose leaves are positions in the level's number list and whose nodes
are + - * /. The templates of ``k`` numbers use every position once (``k = 3``: 192, ``k = 4``: 7,680)
and are the game's actions; a level shows them written with its numbers.
"""

from __future__ import annotations

import functools
import itertools
from fractions import Fraction

OPERATORS = "+-*/"
_PRECEDENCE = {"+": 1, "-": 1, "*": 2, "/": 2}
Template = int | tuple[str, "Template", "Template"]


def _trees(positions: tuple[int, ...]) -> list[Template]:
    if len(positions) == 1:
        return [positions[0]]
    out: list[Template] = []
    for size in range(1, len(positions)):
        for left in itertools.combinations(positions, size):
            right = tuple(p for p in positions if p not in left)
            for a, b in itertools.product(_trees(left), _trees(right)):
                out += [(op, a, b) for op in OPERATORS]
    return out


@functools.cache
def templates(count: int) -> tuple[Template, ...]:
    """Every expression tree over positions ``0..count-1`` that uses each once, in a fixed order."""
    return tuple(_trees(tuple(range(count))))


def evaluate(template: Template, numbers: tuple[int, ...]) -> Fraction | None:
    """The exact value of ``template`` with ``numbers`` put in, or None where it divides by zero."""
    if isinstance(template, int):
        return Fraction(numbers[template])
    op, a, b = template
    left, right = evaluate(a, numbers), evaluate(b, numbers)
    if left is None or right is None or (op == "/" and right == 0):
        return None
    return {"+": left + right, "-": left - right, "*": left * right, "/": left / right if right else None}[op]


def write(template: Template, numbers: tuple[int, ...], space: str = " ", times: str = "*") -> str:
    """``template`` as text with the usual precedence: parentheses only where they change the order, and around
    a right operand of equal precedence (so distinct templates read differently)."""
    if isinstance(template, int):
        return str(numbers[template])
    op, a, b = template
    left, right = write(a, numbers, space, times), write(b, numbers, space, times)
    if not isinstance(a, int) and _PRECEDENCE[a[0]] < _PRECEDENCE[op]:
        left = f"({left})"
    if not isinstance(b, int) and _PRECEDENCE[b[0]] <= _PRECEDENCE[op]:
        right = f"({right})"
    return f"{left}{space}{times if op == '*' else op}{space}{right}"
