"""Exploratory probe: does a lake thought that lists the holes teach the thinking model true hole claims?

    python experiments/thinking_model/lake_holes_probe.py sft ARGS...   # ragen-train sft ARGS, holes listed

Runs ``ragen-train`` with the grounded lake thought extended by one sentence after the player and the goal, "The
holes are at (r, c), ...", every hole of the board in row order. The rest of the thought is the package's. When the
probe ran (plan4.md, "Addition: a lake-thought probe"; figures: results.md) the package's lake thought went on to name
the holes beside the player ("There is a hole to my left"), so those sentences followed from cells already listed, as
a Sokoban relation follows from the box and target it lists; since plan5.md it names none, so a rerun lists the holes
without them. The change lives only in this process (``ragen_train.thoughts._lake`` is rebound); the package's
templates stay as they are.
"""

from __future__ import annotations

import sys

from ragen_train import thoughts

PACKAGE_LAKE = thoughts._lake


def lake_with_holes(board: thoughts.Board, at: thoughts.CellText) -> list[str]:
    """The package's lake sentences with the board's holes listed after the first one."""
    first, *rest = PACKAGE_LAKE(board, at)
    holes = sorted(board.cells_of("hole"))
    if not holes:
        return [first, *rest]
    listed = f"The {'hole is' if len(holes) == 1 else 'holes are'} at {', '.join(at(h) for h in holes)}."
    return [first, listed, *rest]


def main(argv: list[str] | None = None) -> int:
    """Rebind the lake thought, then run ragen-train on the arguments (``sft ...``)."""
    args = sys.argv[1:] if argv is None else argv
    if not args or args[0] != "sft":
        print("usage: lake_holes_probe.py sft ARGS...", file=sys.stderr)
        return 2
    thoughts._lake = lake_with_holes
    from ragen_train.cli import main as run

    return run(args)


if __name__ == "__main__":
    sys.exit(main())
