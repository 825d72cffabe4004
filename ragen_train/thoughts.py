"""Templated thoughts for oracle demonstrations: short, true, and checkable by ``ragen_eval.consistency``.

A templated thought says where things are, how the goal lies from the player (or from the box to
push), and what this turn's moves will do (left out with ``outcome=False``), in phrases the consistency rules read as claims
(``at``, ``rel``, ``after`` and the Bandit ``risk``/``reward`` forms of docs/consistency.md). Every
claim is computed from the true state before the turn, so a model trained on these demonstrations
sees thoughts that match the board. Predictions are stated only when the outcome is certain
(Sokoban, a lake without slipping). A lake thought does not name the holes beside the player: tiny
models trained on such sentences stated them falsely (experiments/thinking_model/plan5.md).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ragen_eval.consistency.board import Board, Cell

#: Writes a 0-based cell as the prompt shows it: "(r, c)" in its coordinate base.
CellText = Callable[[Sequence[int]], str]

# (d_row sign, d_col sign) -> how a thing in that direction is named from its reference point
_LOOSE = {(-1, 0): "above", (1, 0): "below", (0, -1): "left of", (0, 1): "right of",
          (-1, -1): "up and to the left of", (-1, 1): "up and to the right of",
          (1, -1): "down and to the left of", (1, 1): "down and to the right of"}


_COUNTS = ("No", "One", "Two", "Three", "Four", "Five", "Six", "Seven", "Eight", "Nine")


def _sign(x: int) -> int:
    return (x > 0) - (x < 0)


def _where(thing: Cell, reference: Cell, reference_name: str) -> str:
    """``thing``'s direction from ``reference`` in the relation phrases the rules read (``rel`` claims):
    on a shared row or column "directly left of the box", else the quadrant "down and to the left of me"."""
    dr, dc = _sign(thing[0] - reference[0]), _sign(thing[1] - reference[1])
    lead = "directly " if 0 in (dr, dc) else ""
    return f"{lead}{_LOOSE[(dr, dc)]} {reference_name}"


def _after(board: Board, actions: Sequence[str]) -> Board:
    for action in actions:
        board = board.move(action.lower())
    return board


def _nearest(cells: Sequence[Cell], origin: Cell) -> Cell:
    return min(cells, key=lambda c: (abs(c[0] - origin[0]) + abs(c[1] - origin[1]), c))


#: Games whose states have a thought template (those ragen_eval.consistency can check claims about).
TEMPLATED_GAMES = ("sokoban", "frozenlake", "bandit")


def templated_thought(state: Mapping[str, Any], actions: Sequence[str], coordinate_base: int = 0, *,
                      outcome: bool = True) -> str:
    """The thought before playing ``actions`` from ``state`` (a game's ``state_dict()``), with cells in
    the prompt's ``coordinate_base``; ``outcome=False`` leaves out what the moves will do (the sentence
    after the plan), so every claim is about the board as the prompt shows it. Raises ValueError for a
    game with no template."""
    game = state.get("game")
    if game not in TEMPLATED_GAMES:
        raise ValueError(f"no templated thought for game {game!r}; templates exist for {list(TEMPLATED_GAMES)}")
    if game == "bandit":
        return _bandit(state, actions)
    board = Board.from_state(state)

    def at(cell: Sequence[int]) -> str:
        return f"({cell[0] + coordinate_base}, {cell[1] + coordinate_base})"

    plan = f"I will go {', '.join(actions)}."
    if game == "sokoban":
        return " ".join([f"I am at {at(board.player)}.", *_sokoban(board, actions, at), plan,
                         *(_sokoban_outcome(board, actions, at) if outcome else [])])
    return " ".join([*_lake(board, at), plan, *(_lake_outcome(board, actions, at) if outcome else [])])


def _sokoban(board: Board, actions: Sequence[str], at: CellText) -> list[str]:
    boxes = sorted(board.cells_of("box"))
    loose = sorted(board.cells_of("box") - board.cells_of("target"))
    free = sorted(board.cells_of("target") - board.cells_of("box"))
    if not loose or not free:  # every box placed: the episode is over, but say so
        return [f"The {'box is' if len(boxes) == 1 else 'boxes are'} on {'the target' if len(boxes) == 1 else 'targets'}."]
    # boxes already placed are counted, not listed, so a 4-box room's thought stays short
    listed = [f"The {'box is' if len(loose) == 1 else 'boxes are'} at {', '.join(at(b) for b in loose)}.",
              f"The {'target is' if len(free) == 1 else 'targets are'} at {', '.join(at(t) for t in free)}."]
    placed = len(boxes) - len(loose)
    if placed:
        listed.append(f"{_COUNTS[placed]} {'box is' if placed == 1 else 'boxes are'} on {'a target' if placed == 1 else 'targets'}.")
    moved = sorted(board.cells_of("box") - _after(board, actions).cells_of("box"))
    box = moved[0] if moved and moved[0] in loose else _nearest(loose, board.player)
    target = _nearest(free, box)
    name = "the box" if len(loose) == 1 else f"the box at {at(box)}"
    return [*listed, f"The target {'' if len(free) == 1 else f'at {at(target)} '}is {_where(target, box, name)}."]


def _sokoban_outcome(board: Board, actions: Sequence[str], at: CellText) -> list[str]:
    after = _after(board, actions)
    moved = sorted(after.cells_of("box") - board.cells_of("box"))
    if after.finished:
        return [f"After these moves I will be at {at(after.player)}, and that solves the puzzle."]
    if not moved:
        return [f"After these moves I will be at {at(after.player)}."]
    box = moved[0]
    landing = "on the target" if box in after.cells_of("target") else f"at {at(box)}"
    return [f"After these moves I will be at {at(after.player)} and the box will be {landing}."]


def _lake(board: Board, at: CellText) -> list[str]:
    me, goal = board.player, next(iter(board.cells_of("goal")))
    return [f"I am at {at(me)} and the goal is at {at(goal)}.", f"The goal is {_where(goal, me, 'me')}."]


def _lake_outcome(board: Board, actions: Sequence[str], at: CellText) -> list[str]:
    if board.is_slippery:
        return []  # where a slippery move ends is not known before it is made
    after = _after(board, actions)
    if after.player in after.cells_of("goal"):
        return [f"After these moves I will reach the goal at {at(after.player)}."]
    return [f"After these moves I will be at {at(after.player)}."]


def _bandit(state: Mapping[str, Any], actions: Sequence[str]) -> str:
    arms = state.get("arms") or []
    chosen = next((a for a in arms if str(a["name"]).lower() == str(actions[0]).lower()), None) if actions else None
    if chosen is None:
        raise ValueError(f"the Bandit thought needs one of the arms as its action, got {list(actions)}")
    name = chosen["name"]
    out = []
    variances = [float(a["variance"]) for a in arms]
    if max(variances) > min(variances) and float(chosen["variance"]) in (max(variances), min(variances)):
        out.append(f"{name} is the {'riskier' if float(chosen['variance']) == max(variances) else 'safer'} arm")
    means = [float(a["expected_reward"]) for a in arms]
    if max(means) > min(means) and float(chosen["expected_reward"]) == max(means):
        out.append(f"{name} pays more on average" if not out else f"but {name} pays more on average")
    reason = (" " + ", ".join(out) + ".") if out else ""
    return f"The arms are {' and '.join(str(a['name']) for a in arms)}.{reason} I choose {name}."
