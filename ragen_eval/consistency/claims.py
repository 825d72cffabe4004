"""Claims: what a thought asserts about the game, in one canonical string form.

Every extracted (or judge-reported, or hand-labelled) claim has a canonical form, so claims from
different sources can be matched by string equality. The grammar (0-based ``(row, col)`` cells):

- ``at(KIND,r,c)``: a KIND is at cell (r, c) (``at(box,2,3)``: some box is at (2, 3)).
- ``rel(A,B,DIR)``: some A lies in direction DIR of some B, loosely (``left``: a smaller column, any
  row). ``rel(A,B,DIR,line)``: on the same row/column/diagonal; ``rel(A,B,DIR,n)``: exactly n cells.
  DIR is up, down, left, right, up-left, up-right, down-left or down-right. A thing written ``A@r:c``
  is pinned to the cell the thought named for it (``rel(target@7:5,box@8:6,down-left)``).
- ``adj(A,B)``: some A is orthogonally next to some B.
- ``on(A,B)``: an A stands on a B (``on(box,target)``, ``on(player,goal)``, ``on(player,hole)``).
- ``all_placed``: every box is on a target. ``placed(n)``: exactly n boxes are on targets.
  ``corner(box)``: some box has walls on two orthogonal sides.
- ``after(a1,a2,...|CLAIM)``: CLAIM holds after the moves a1, a2, ... (a prediction).
- ``risk(ARM,high|low)``, ``reward(ARM,high|low)``: ARM has the highest/lowest variance or expected
  reward of the arms (Bandit).
- ``arms(A,B,...)``: the level's arms are exactly A, B, ... in any order (Bandit).
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field
from typing import Any

#: Claim kinds, as reported per claim and aggregated per kind.
KINDS = ("position", "relation", "status", "prediction", "bandit")
#: Games whose thoughts the rules (and the judge prompt) know how to read.
GAMES = ("sokoban", "frozenlake", "bandit")

_KIND_BY_HEAD = {"at": "position", "rel": "relation", "adj": "relation", "on": "status", "all_placed": "status",
                 "placed": "status", "corner": "status", "after": "prediction", "risk": "bandit", "reward": "bandit",
                 "arms": "bandit"}
_CANONICAL = re.compile(r"^(all_placed|(?:at|rel|adj|on|placed|corner|after|risk|reward|arms)\((.*)\))$")


@dataclass
class Claim:
    """One checkable assertion found in a thought.

    ``start``/``end`` index the think text (``text`` is that span); ``cells`` are the 0-based cells
    the claim refers to, for marking a transcript; ``verdict`` is True/False, or None when the
    claim cannot be checked (e.g. a prediction about a slippery move that was never executed).
    """

    canonical: str
    text: str = ""
    start: int = -1
    end: int = -1
    cells: list[list[int]] = field(default_factory=list)
    verdict: bool | None = None

    @property
    def kind(self) -> str:
        """position, relation, status, prediction or bandit (from the canonical form)."""
        return claim_kind(self.canonical)

    def to_dict(self) -> dict[str, Any]:
        """JSON form stored in scores and transcripts."""
        return {"kind": self.kind, **asdict(self)}


def claim_kind(canonical: str) -> str:
    """The kind of a canonical claim; raises ValueError if it is not in the grammar."""
    match = _CANONICAL.match(canonical)
    if match is None:
        raise ValueError(f"not a canonical claim: {canonical!r}")
    head = canonical.split("(", 1)[0]
    return _KIND_BY_HEAD[head]


def arm_key(name: str) -> str:
    """A Bandit arm's name as canonical claims write it: lower case, without spaces (``Savings Account`` ->
    ``savingsaccount``), so a rule-read, judge-reported or hand-labelled claim about it is the same string."""
    return re.sub(r"\s+", "", str(name)).lower()


def normalise_canonical(text: str) -> str | None:
    """Lower-case and strip spaces from a canonical claim; None if it is not in the grammar.

    Used on judge output, which may write ``at(box, 2, 3)`` or ``AT(Box,2,3)``.
    """
    compact = re.sub(r"\s+", "", str(text)).lower()
    try:
        claim_kind(compact)
    except ValueError:
        return None
    return compact
