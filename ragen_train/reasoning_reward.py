"""The reasoning reward: opt-in per-turn terms that judge the thought, not only the outcome.

Two terms, added to a turn's game reward (and format penalty) where the rollout assembles it:

- **format**: ``format_coef`` when the reply is well formed and its ``<think>`` holds text, else 0.
- **consistency**: ``consistency_coef x (true - false) / checkable`` over the thought's claims about
  the state, as :func:`ragen_eval.consistency.score_turn` finds and checks them (the code that scores
  ``ragen-eval`` runs); 0 when the thought makes no checkable claim. Normalised by the claim count,
  so it pays for being right, not for saying more.

Both coefficients 0 (the default) leave the reward outcome-only.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ragen_eval.consistency import score_turn
from ragen_eval.consistency.claims import GAMES


@dataclass(frozen=True)
class ReasoningTerms:
    """One turn's reasoning reward, by term (already multiplied by their coefficients)."""

    format: float = 0.0
    consistency: float = 0.0

    @property
    def total(self) -> float:
        """The sum the turn's reward gains."""
        return self.format + self.consistency


def reasoning_terms(turn: Mapping[str, Any], *, format_coef: float = 0.0, consistency_coef: float = 0.0,
                    coordinate_base: int = 0, symbols: Mapping[str, str] | None = None) -> ReasoningTerms:
    """The reasoning reward of one turn record (docs/interfaces.md) under the prompt's ``coordinate_base``
    and ``symbols`` (the protocol's). A game the consistency rules do not know gets no consistency term."""
    think = (turn.get("think") or "").strip()
    fmt = format_coef if think and turn.get("format_ok") else 0.0
    consistency = 0.0
    state = turn.get("state_before") or {}
    if consistency_coef and think and state.get("game") in GAMES:
        score = score_turn(turn, game=state["game"], coordinate_base=coordinate_base, symbols=symbols)
        if score["n_claims"]:
            consistency = consistency_coef * (score["n_true"] - score["n_false"]) / score["n_claims"]
    return ReasoningTerms(float(fmt), float(consistency))
