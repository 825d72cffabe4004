"""Mark a thought's claims inline, for per-episode transcripts."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

_MARKS = {True: "TRUE", False: "FALSE", None: "UNCHECKED"}


def mark_claims(think: str, claims: Sequence[Mapping[str, Any]], coordinate_base: int = 0) -> str:
    """``think`` with ``[TRUE at(box,2,2) cell (2,2)]``-style marks after each claim's span.

    ``claims`` are the dicts of a turn score. Cells are shown in ``coordinate_base`` (the
    convention the agent saw); the canonical form stays 0-based. Claims without a span are listed
    at the end.
    """
    inserts: list[tuple[int, str]] = []
    trailing: list[str] = []
    for claim in claims:
        cells = " ".join(f"({r + coordinate_base},{c + coordinate_base})" for r, c in claim.get("cells") or [])
        mark = f" [{_MARKS[claim.get('verdict')]} {claim['canonical']}{' cell ' + cells if cells else ''}]"
        end = claim.get("end", -1)
        if 0 <= end <= len(think):
            inserts.append((end, mark))
        else:
            trailing.append(mark.strip())
    out = think
    for end, mark in sorted(inserts, key=lambda x: x[0], reverse=True):
        out = out[:end] + mark + out[end:]
    return out + ("\n" + "\n".join(trailing) if trailing else "")
