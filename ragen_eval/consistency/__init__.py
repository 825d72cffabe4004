"""Thought-state consistency: do the claims in an agent's ``<think>`` match the true game state?

``score_turn`` / ``score_episode`` extract atomic claims (positions, relations, status,
predictions, Bandit arms and their properties) with rules, check each against the state, and compare the
plan in the thought with the answer; ``aggregate`` turns scores into run-level metrics and
``positions_by_object`` / ``relations_by_subject`` split their position and relation claims by
the thing placed. The
optional LLM judge lives in :mod:`ragen_eval.consistency.judge`. See docs/consistency.md.
"""

from ragen_eval.consistency.claims import Claim
from ragen_eval.consistency.scoring import (aggregate, positions_by_object, relations_by_subject, score_episode,
                                           score_turn)

__all__ = ["Claim", "aggregate", "positions_by_object", "relations_by_subject", "score_episode", "score_turn"]
