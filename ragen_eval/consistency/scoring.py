"""Score turns and episodes for thought-state consistency, and aggregate scores over a run."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ragen_eval.consistency.bandit_claims import extract_bandit_claims
from ragen_eval.consistency.board import Board
from ragen_eval.consistency.claims import GAMES, KINDS, Claim
from ragen_eval.consistency.grid_claims import extract_grid_claims
from ragen_eval.consistency.lexicon import MOVE_WORDS
from ragen_eval.consistency.plans import answer_actions, extract_plan, plans_agree
from ragen_eval.consistency.verify import Predictor, check_bandit, check_grid


def _predictor(turn: Mapping[str, Any], before: Board) -> Predictor:
    """Boards after a move sequence: the recorded ``state_after`` when the moves are exactly the
    executed ones, else the game's rules from ``state_before`` when the outcome is certain."""
    executed = tuple(MOVE_WORDS.get(str(a).strip().lower(), str(a).strip().lower())
                     for a in turn.get("actions_executed") or ())
    after = turn.get("state_after")
    infos = turn.get("infos") or []

    def predict(moves: tuple[str, ...]) -> Board | None:
        if after is not None and moves == executed:
            return Board.from_state(after)
        certain = not before.is_slippery
        if before.is_slippery and executed[:len(moves)] == moves and len(infos) >= len(moves):
            certain = not any(info.get("slipped", True) for info in infos[:len(moves)])
        if not certain:
            return None
        board = before
        try:
            for move in moves:
                board = board.move(move)
        except ValueError:
            return None
        return board

    return predict


def claim_verdicts(claims: Sequence[Claim], state: Mapping[str, Any], turn: Mapping[str, Any]) -> list[Claim]:
    """Set each claim's verdict (and cells) against ``state``; claims outside the grammar get None."""
    if state.get("game") == "bandit":
        for claim in claims:
            try:
                claim.verdict = check_bandit(claim.canonical, state.get("arms") or [])
            except ValueError:
                claim.verdict = None
        return list(claims)
    board = Board.from_state(state)
    predict = _predictor(turn, board)
    for claim in claims:
        try:
            claim.verdict, claim.cells = check_grid(claim.canonical, board, predict)
        except (ValueError, IndexError):
            claim.verdict, claim.cells = None, []
    return list(claims)


def score_turn(turn: Mapping[str, Any], *, game: str, coordinate_base: int = 0,
               symbols: Mapping[str, str] | None = None) -> dict[str, Any]:
    """Consistency of one turn record (schema in docs/interfaces.md) with the state it saw.

    ``coordinate_base`` and ``symbols`` are the protocol's (``record["protocol"]``): cells in the
    thought are read in that base, and the legend's symbols ("X", "O") name the things they stand for.

    Reads ``think`` (falling back to provider ``reasoning``), ``state_before``, ``state_after``,
    ``actions_executed``, ``infos`` and the answer. Vague or unparseable text gives zero claims,
    never an error; a missing or malformed ``state_before`` raises ValueError.
    """
    if game not in GAMES:
        raise ValueError(f"unknown game {game!r}; expected one of {GAMES}")
    state = turn.get("state_before")
    if not isinstance(state, Mapping):
        raise ValueError("turn has no state_before dict to check claims against")
    if state.get("game") != game:
        raise ValueError(f"turn's state_before is a {state.get('game')!r} state, but game={game!r} was given")
    think = turn.get("think") or turn.get("reasoning") or ""
    answer = answer_actions(turn, game)
    if game == "bandit":
        names = [str(arm.get("name", "")) for arm in state.get("arms") or []]
        claims = extract_bandit_claims(think, names)
        plan = extract_plan(think, game=game, arm_names=names)
    else:
        claims = extract_grid_claims(think, game=game, coordinate_base=coordinate_base, default_moves=answer,
                                     symbols=symbols)
        plan = extract_plan(think, game=game)
    claims = claim_verdicts(claims, state, turn)
    checked = [c for c in claims if c.verdict is not None]
    n_true = sum(c.verdict is True for c in checked)
    return {
        "claims": [c.to_dict() for c in claims],
        "n_claims": len(checked),
        "n_true": n_true,
        "n_false": len(checked) - n_true,
        "n_unverifiable": len(claims) - len(checked),
        "claim_accuracy": n_true / len(checked) if checked else None,
        "hallucinated": (len(checked) > n_true) if checked else None,
        "plan": plan,
        "answer_actions": answer,
        "plan_agrees": plans_agree(plan, answer) if plan is not None else None,
    }


def score_episode(record: Mapping[str, Any]) -> dict[str, Any]:
    """Score every turn of an episode record; returns ``{"turns": [...], **aggregate(turns)}``. Turns of a
    game outside :data:`GAMES` (one added later, with no claim vocabulary here) are left out, unscored."""
    turns = record.get("turns")
    if not isinstance(turns, Sequence):
        raise ValueError("episode record has no 'turns' list")
    protocol = record.get("protocol") or {}
    base, symbols = int(protocol.get("coordinate_base", 0)), protocol.get("symbols")
    scored = []
    for index, turn in enumerate(turns):
        state = turn.get("state_before")
        if not isinstance(state, Mapping):
            raise ValueError(f"turn {index} of the episode has no state_before dict")
        game = str(state.get("game"))
        if game not in GAMES:  # a game with no claim vocabulary here: nothing its thoughts say is checkable
            continue
        scored.append(score_turn(turn, game=game, coordinate_base=base, symbols=symbols))
    return {"turns": scored, **aggregate(scored)}


def _ratio(num: int, den: int) -> float | None:
    return num / den if den else None


def aggregate(scores: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Run-level metrics from turn scores (or episode scores, whose turns are pooled).

    ``claims_per_turn``: checkable claims per turn; ``claim_accuracy``: true / checkable claims;
    ``hallucination_rate``: share of turns with a checkable claim that have at least one false
    claim; ``turns_with_claims``: share of turns with at least one checkable claim;
    ``plan_answer_agreement``: share of turns whose thought commits to a plan that agrees with the
    answer; ``by_kind``: claim count and accuracy per claim kind. Ratios are None when undefined.
    """
    turns = [t for s in scores for t in (s["turns"] if "turns" in s else [s])]
    n_claims = sum(t["n_claims"] for t in turns)
    n_true = sum(t["n_true"] for t in turns)
    with_claims = [t for t in turns if t["n_claims"]]
    planned = [t for t in turns if t.get("plan_agrees") is not None]
    by_kind = {}
    for kind in KINDS:
        verdicts = [c["verdict"] for t in turns for c in t["claims"] if c["kind"] == kind and c["verdict"] is not None]
        by_kind[kind] = {"n_claims": len(verdicts), "claim_accuracy": _ratio(sum(verdicts), len(verdicts))}
    return {
        "n_turns": len(turns),
        "n_claims": n_claims,
        "n_true": n_true,
        "n_false": n_claims - n_true,
        "n_unverifiable": sum(t["n_unverifiable"] for t in turns),
        "claims_per_turn": _ratio(n_claims, len(turns)),
        "claim_accuracy": _ratio(n_true, n_claims),
        "hallucination_rate": _ratio(sum(bool(t["n_false"]) for t in with_claims), len(with_claims)),
        "turns_with_claims": _ratio(len(with_claims), len(turns)),
        "plan_answer_agreement": _ratio(sum(bool(t["plan_agrees"]) for t in planned), len(planned)),
        "turns_with_plan": _ratio(len(planned), len(turns)),
        "by_kind": by_kind,
    }


def positions_by_object(scores: Sequence[Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    """Checkable position claims (``at(OBJECT, r, c)``) per object they place (player, box, target, goal, ...), from
    turn scores or episode scores: ``{object: {"n_claims", "claim_accuracy"}}``, objects sorted; which of a room's
    objects a thought misreads, where ``aggregate``'s ``by_kind`` pools them."""
    return _by_subject(scores, "at(")


def relations_by_subject(scores: Sequence[Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    """Checkable relation claims (``rel(SUBJECT, REFERENCE, ...)``) per subject they place (target, goal, hole, ...),
    from turn scores or episode scores, in :func:`positions_by_object`'s form: which relations a thought gets wrong
    ("the goal is below me" against "there is a hole to my left")."""
    return _by_subject(scores, "rel(")


def _by_subject(scores: Sequence[Mapping[str, Any]], form: str) -> dict[str, dict[str, Any]]:
    turns = [t for s in scores for t in (s["turns"] if "turns" in s else [s])]
    verdicts: dict[str, list[bool]] = {}
    for claim in (c for t in turns for c in t["claims"]):
        if claim["canonical"].startswith(form) and claim["verdict"] is not None:
            thing = claim["canonical"][len(form):].split(",")[0].partition("@")[0]  # a pinned thing is still a thing
            verdicts.setdefault(thing, []).append(claim["verdict"])
    return {thing: {"n_claims": len(found), "claim_accuracy": _ratio(sum(found), len(found))}
            for thing, found in sorted(verdicts.items())}
