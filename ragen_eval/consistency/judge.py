"""LLM-judge mode: ask any harness Agent to extract claims with verdicts, and compare with the rules.

The judge sees the true state (in the coordinate convention the agent's prompt declared) and the
thought, and answers JSON in the same canonical claim grammar the rule-based extractor uses
(:mod:`ragen_eval.consistency.claims`), so the two can be matched claim by claim::

    result = await judge_turn(agent, turn, game="sokoban", coordinate_base=0)
    stats = agreement([rule_score], [result])

Judge replies are parsed leniently (code fences, prose around the JSON, trailing commas, Python
literals); a reply that yields nothing usable gives ``claims == []`` and an ``error``, never an
exception, so one bad reply cannot end an evaluation.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from ragen_eval.agents.base import Agent, SamplingParams
from ragen_eval.consistency.claims import GAMES, claim_kind, normalise_canonical

JUDGE_SAMPLING = SamplingParams(temperature=0.0, max_tokens=1024)

_INSTRUCTIONS = """You check whether an agent's reasoning is consistent with the true state of a game.
List every atomic, checkable claim the THOUGHT asserts about the state, and say whether it is true.
Ignore questions, negated statements, hypotheticals ("if I were at ..."), and vague remarks.
Write each claim in this grammar (cells are (row, col), {base_word}, as in the state below):
  at(KIND,r,c)           a KIND is at cell (r, c)
  rel(A,B,DIR)           an A lies in direction DIR of a B (loosely); rel(A,B,DIR,line) on the same line;
                         rel(A,B,DIR,n) exactly n cells away. DIR: up, down, left, right, up-left,
                         up-right, down-left, down-right. "me"/"I" is the player. When the thought
                         names both things' cells, pin them: rel(target@r:c,box@r:c,DIR).
  adj(A,B)               an A is orthogonally next to a B
  on(A,B)                e.g. on(box,target), on(player,goal)
  all_placed             every box is on a target
  placed(n)              exactly n boxes are on targets
  corner(box)            a box has walls on two orthogonal sides
  after(m1,m2,...|CLAIM) CLAIM holds after the moves m1, m2, ... (up/down/left/right)
  risk(ARM,high|low)     ARM has the highest/lowest variance (Bandit)
  reward(ARM,high|low)   ARM has the highest/lowest expected reward (Bandit)
  arms(A,B,...)          the arms are A, B, ... (Bandit; a list of the arms, in the order stated)
KIND is one of: {kinds}.
Answer with JSON only: {{"claims": [{{"text": "<quoted span>", "claim": "<canonical>", "verdict": true|false}}]}}"""

_KINDS = {"sokoban": "player, box, target, wall, floor", "frozenlake": "player, goal, hole, start, frozen",
          "bandit": "(arm names as given)"}


def state_text(state: Mapping[str, Any], coordinate_base: int = 0) -> str:
    """The true state as the judge reads it, with coordinates shifted to ``coordinate_base``."""
    game = state.get("game")
    if game == "bandit":
        lines = [f"- {arm['name']}: expected reward {arm['expected_reward']}, variance {arm['variance']}"
                 for arm in state.get("arms") or []]
        return "Bandit arms (in the order shown):\n" + "\n".join(lines)
    if game not in ("sokoban", "frozenlake"):
        raise ValueError(f"cannot describe state of game {game!r}")

    def cell(rc: Sequence[int]) -> str:
        return f"({rc[0] + coordinate_base}, {rc[1] + coordinate_base})"

    keys = ("player", "boxes", "targets") if game == "sokoban" else ("player", "start", "goal", "holes")
    lines = [f"{game} grid, {state['height']} rows x {state['width']} cols:", *state.get("rows", [])]
    for key in keys:
        value = state[key]
        cells = [value] if value and isinstance(value[0], int) else value
        lines.append(f"{key}: " + ", ".join(cell(c) for c in cells))
    if game == "sokoban":
        lines.append("walls: every '#' in the grid")
    return "\n".join(lines)


def judge_messages(state: Mapping[str, Any], think: str, *, game: str, coordinate_base: int = 0,
                   actions: Sequence[str] = ()) -> list[dict[str, str]]:
    """The chat sent to the judge for one turn."""
    if game not in GAMES:
        raise ValueError(f"unknown game {game!r}; expected one of {GAMES}")
    base_word = "1-based" if coordinate_base == 1 else "0-based"
    system = _INSTRUCTIONS.format(base_word=base_word, kinds=_KINDS[game])
    user = (f"STATE:\n{state_text(state, coordinate_base)}\n\nACTIONS TAKEN THIS TURN: "
            f"{', '.join(actions) or 'none'}\n\nTHOUGHT:\n{think}")
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]


def _json_candidates(text: str) -> list[str]:
    fenced = re.findall(r"```(?:json)?\s*(.*?)```", text, re.DOTALL | re.IGNORECASE)
    spans = []
    for opener, closer in (("{", "}"), ("[", "]")):
        start, end = text.find(opener), text.rfind(closer)
        if 0 <= start < end:
            spans.append(text[start:end + 1])
    return fenced + spans + [text]


def _load(candidate: str) -> Any:
    cleaned = re.sub(r",\s*([}\]])", r"\1", candidate.strip())
    try:
        return json.loads(cleaned)
    except json.JSONDecodeError:
        pass
    try:
        return ast.literal_eval(re.sub(r"\btrue\b", "True", re.sub(r"\bfalse\b", "False",
                                                                   re.sub(r"\bnull\b", "None", cleaned))))
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return None


def _verdict(value: Any) -> bool | None:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "false", "yes", "no", "correct", "incorrect"):
        return value.strip().lower() in ("true", "yes", "correct")
    return None


def parse_judge_reply(text: str) -> tuple[list[dict[str, Any]], int, bool]:
    """(claims, entries dropped, whether any claim list was found) from a judge reply.

    Each claim has text, canonical, kind and verdict (None if the judge gave none).

    Entries whose claim is not in the grammar are dropped and counted. Falls back to scanning for
    ``"claim": "...", "verdict": ...`` pairs when no JSON document can be recovered.
    """
    entries: list[Any] | None = None
    for candidate in _json_candidates(text or ""):
        data = _load(candidate)
        if isinstance(data, Mapping) and isinstance(data.get("claims"), list):
            entries = data["claims"]
            break
        if isinstance(data, list):
            entries = data
            break
    found = entries is not None
    if entries is None:
        entries = [{"claim": c, "verdict": v} for c, v in
                   re.findall(r"[\"']claim[\"']\s*:\s*[\"']([^\"']+)[\"'][^{}]*?[\"']verdict[\"']\s*:\s*"
                              r"[\"']?(true|false|null)", text or "", re.IGNORECASE)]
    claims, dropped = [], 0
    for entry in entries:
        canonical = normalise_canonical(entry.get("claim", "")) if isinstance(entry, Mapping) else None
        if canonical is None:
            dropped += 1
            continue
        claims.append({"text": str(entry.get("text", "")), "canonical": canonical, "kind": claim_kind(canonical),
                       "verdict": _verdict(entry.get("verdict"))})
    return claims, dropped, found or bool(entries)


async def judge_turn(agent: Agent, turn: Mapping[str, Any], *, game: str, coordinate_base: int = 0,
                     sampling: SamplingParams = JUDGE_SAMPLING) -> dict[str, Any]:
    """Ask ``agent`` for the claims and verdicts of one turn record.

    Returns ``{"claims": [...], "dropped": int, "raw": str, "error": str | None}``; a failed
    request or an unusable reply sets ``error`` and leaves ``claims`` empty.
    """
    state = turn.get("state_before")
    if not isinstance(state, Mapping):
        raise ValueError("turn has no state_before dict to judge against")
    think = turn.get("think") or turn.get("reasoning") or ""
    if not think.strip():
        return {"claims": [], "dropped": 0, "raw": "", "error": None}
    messages = judge_messages(state, think, game=game, coordinate_base=coordinate_base,
                              actions=[str(a) for a in turn.get("actions_executed") or []])
    completions = await agent.act(messages, n=1, sampling=sampling)
    reply = completions[0] if completions else None
    if reply is None or reply.error:
        return {"claims": [], "dropped": 0, "raw": "", "error": reply.error if reply else "no completion"}
    claims, dropped, found = parse_judge_reply(reply.text)
    error = None
    if not found:
        error = "reply holds no claim list"
    elif not claims and dropped:
        error = f"no usable claims ({dropped} outside the grammar)"
    return {"claims": claims, "dropped": dropped, "raw": reply.text, "error": error}


def agreement(rule_scores: Sequence[Mapping[str, Any]], judge_results: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """How far rule-based and judge scoring agree, over paired turns.

    ``verdict_agreement``: share of claims both found (same canonical form, both with a verdict)
    on which they give the same verdict; ``cohen_kappa``: the same, corrected for chance;
    ``claim_overlap``: |both| / |either| (Jaccard) of the claim sets. None where undefined.
    """
    if len(rule_scores) != len(judge_results):
        raise ValueError(f"{len(rule_scores)} rule scores but {len(judge_results)} judge results; pair them by turn")
    both = rule_only = judge_only = 0
    pairs: list[tuple[bool, bool]] = []
    for rule, judge in zip(rule_scores, judge_results):
        rule_claims = {c["canonical"]: c["verdict"] for c in rule["claims"]}
        judge_claims = {c["canonical"]: c["verdict"] for c in judge["claims"]}
        shared = set(rule_claims) & set(judge_claims)
        both += len(shared)
        rule_only += len(set(rule_claims) - shared)
        judge_only += len(set(judge_claims) - shared)
        pairs += [(rule_claims[c], judge_claims[c]) for c in sorted(shared)
                  if rule_claims[c] is not None and judge_claims[c] is not None]
    agree = sum(a == b for a, b in pairs)
    n = len(pairs)
    kappa = None
    if n:
        observed = agree / n
        p_rule, p_judge = sum(a for a, _ in pairs) / n, sum(b for _, b in pairs) / n
        expected = p_rule * p_judge + (1 - p_rule) * (1 - p_judge)
        kappa = 1.0 if expected == 1 else (observed - expected) / (1 - expected)
    either = both + rule_only + judge_only
    return {"n_turns": len(rule_scores), "claims_both": both, "claims_rule_only": rule_only,
            "claims_judge_only": judge_only, "claim_overlap": both / either if either else None,
            "verdicts_compared": n, "verdict_agreement": agree / n if n else None, "cohen_kappa": kappa}


def judge_metrics(rule_turns: Sequence[Mapping[str, Any]], judge_turns: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Rule/judge agreement over paired turns, plus the judge's own claim counts.

    Turns whose judgement failed (``error`` set) are left out of the pairing, since an empty
    claim list there says nothing about the thought; ``judge_errors`` counts them.
    """
    if len(rule_turns) != len(judge_turns):
        raise ValueError(f"{len(rule_turns)} rule-scored turns but {len(judge_turns)} judged turns")
    kept = [(r, j) for r, j in zip(rule_turns, judge_turns) if not j.get("error")]
    stats = agreement([r for r, _ in kept], [j for _, j in kept])
    verdicts = [c["verdict"] for _, j in kept for c in j["claims"] if c.get("verdict") is not None]
    return {**stats, "judge_errors": len(judge_turns) - len(kept),
            "judge_claims_per_turn": len(verdicts) / len(kept) if kept else None,
            "judge_claim_accuracy": sum(verdicts) / len(verdicts) if verdicts else None}
