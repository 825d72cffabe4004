"""Capping the model text a run stores, so one runaway reply cannot bloat ``episodes.jsonl``.

A reply is scored in full before it is stored; only the stored copy is cut. A broken endpoint that
returns megabytes a turn would otherwise make every later step (the summary, leaderboards, ``show``)
read and re-parse all of it: 2 MB replies made a 40 MB ``episodes.jsonl`` and a 53 s summary.
"""

from __future__ import annotations

from typing import Any

#: The most characters of each model text field a turn record keeps (64 KiB of ASCII).
MAX_STORED_CHARS = 64 * 1024

#: The turn-record fields that hold model-written text of unbounded length.
MODEL_TEXT_FIELDS = ("response", "reasoning", "think", "answer")


def cap_stored_texts(record: dict[str, Any], max_chars: int = MAX_STORED_CHARS) -> dict[str, Any]:
    """Cut each model text field of each turn in ``record`` to its first ``max_chars`` characters, in place.

    A turn with a cut field gets ``"capped": {field: original length in characters}``, so readers can
    tell a stored prefix from a whole reply. Returns ``record``.
    """
    for turn in record.get("turns", ()):
        capped = {}
        for field in MODEL_TEXT_FIELDS:
            text = turn.get(field)
            if isinstance(text, str) and len(text) > max_chars:
                capped[field] = len(text)
                turn[field] = text[:max_chars]
        if capped:
            turn["capped"] = capped
    return record
