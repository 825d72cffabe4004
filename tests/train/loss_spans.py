"""The runs of tokens a loss mask trains on, for tests of how SFT lays out a demonstration."""

from __future__ import annotations

from collections.abc import Sequence


def trained_spans(input_ids: Sequence[int], loss_mask: Sequence[int]) -> list[list[int]]:
    """Each maximal run of tokens whose mask is 1, in order."""
    spans: list[list[int]] = []
    current: list[int] = []
    for token, keep in zip(input_ids, loss_mask, strict=True):
        if keep:
            current.append(token)
        elif current:
            spans.append(current)
            current = []
    if current:
        spans.append(current)
    return spans
