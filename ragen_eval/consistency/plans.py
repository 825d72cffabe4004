"""Plan-answer agreement: the actions a thought commits to versus the actions in ``<answer>``."""

from __future__ import annotations

import re
from collections.abc import Sequence

from ragen_eval.consistency.lexicon import MOVE, MOVE_WORDS, moves_in
from ragen_eval.consistency.segments import sentences

_COUNT = r"(?:\s+(?:once|twice|thrice|two\s+times|three\s+times|\d+\s+times|x\s?\d|again|first|now))?"
_TRAIL = (r"(?:\s+(?:to|onto|into|towards?)\s+(?:the\s+)?"
          r"(?:[(\[][^)\]]*[)\]]|row\s+\d+(?:\s*,?\s*col(?:umn)?\s+\d+)?|\w+))?")
_SEP_WORD = r"(?:,|;|->|\|\||and|then|followed\s+by|after\s+that)"
_SEP = rf"\s*{_SEP_WORD}(?:\s*{_SEP_WORD}){{0,2}}\s*(?:(?:move|go|push|step|head|walk)\s+)?"
_SEQ = rf"(?P<seq>{MOVE}{_COUNT}{_TRAIL}(?:{_SEP}{MOVE}{_COUNT}{_TRAIL})*)"
_VERB = r"(?:move|go|push|step|head|walk|press|play|take|choose|pick|select|try)(?:\s+the\s+box)?\s+"
# "I'll move up", "I should go left then up"; "plan: up, left"; a bare "Push down." / "Going up, up."
_COMMITS = tuple(re.compile(p, re.IGNORECASE) for p in (
    rf"\b(?:i'll|i\s+will|i\s+should|i'd(?:\s+better)?|i\s+need\s+to|i\s+must|i'm\s+going\s+to|"
    rf"i\s+am\s+going\s+to|let\s+me|let's|i\s+choose\s+to|i\s+decide\s+to|i\s+plan\s+to|i\s+go|i\s+move|"
    rf"i\s+push|best\s+(?:is\s+)?to|better\s+to|we\s+should|we\s+need\s+to|it's\s+best\s+to|instead\s+i)\s+"
    rf"(?:first\s+|just\s+|now\s+|then\s+)?"
    rf"(?:{_VERB})?{_SEQ}",
    rf"\bthen\s+(?:i\s+(?:will\s+|'ll\s+)?)?(?:move|go|push|step|head|walk)\s+{_SEQ}",
    rf"\b(?:plan|route|moves?|actions?|answer|path|sequence|decision|next\s+move|best\s+move)\s*(?:is|:|would\s+be|"
    rf"will\s+be|=)\s*{_SEQ}",
    rf"^(?:so,?\s+|then,?\s+|thus,?\s+|therefore,?\s+|ok(?:ay)?,?\s+|first,?\s+|next,?\s+|now,?\s+)?"
    rf"(?:(?:move|go|push|step|head|walk|moving|going|pushing)(?:\s+the\s+box)?\s+)?{_SEQ}\s*[.!]?\s*$",
))
_UNCOMMITTED = re.compile(r"\b(?:if|not|n't|never|could|might|maybe|perhaps|whether|instead\s+of|rather\s+than|"
                          r"want|wanted|would)\b", re.IGNORECASE)
_CHOOSE = r"(?:choose|chose|choosing|pick|picking|select|selecting|go\s+with|going\s+with|go\s+for|pull|pulling|take|" \
          r"answer|answer\s+is|i'll\s+take|my\s+choice\s+is|bet\s+on)"


def extract_plan(think: str, *, game: str, arm_names: Sequence[str] = ()) -> list[str] | None:
    """The action sequence ``think`` last commits to (lower-case names), or None if it commits to none.

    A later commitment replaces an earlier one; one that starts with "then" extends it. For Bandit
    the plan is the one arm the thought says it will pick.
    """
    if game == "bandit":
        return _bandit_plan(think, arm_names)
    plan: list[str] | None = None
    for sentence in sentences(think or ""):
        if sentence.question:
            continue
        matches = sorted((m for pattern in _COMMITS for m in pattern.finditer(sentence.text)),
                         key=lambda m: m.start())
        for m in matches:
            head = sentence.text[max(0, m.start() - 40):m.start("seq")]
            if _UNCOMMITTED.search(re.split(r"[.,;]", head)[-1]):
                continue
            moves = moves_in(m.group("seq"))
            if not moves:
                continue
            extends = re.search(r"\bthen\b", sentence.text[max(0, m.start("seq") - 40):m.start("seq")], re.IGNORECASE)
            plan = plan + moves if extends and plan else moves
    return plan


def _bandit_plan(think: str, arm_names: Sequence[str]) -> list[str] | None:
    names = [n.lower() for n in arm_names if n]
    if not names:
        return None
    arms = "|".join(re.escape(n) for n in sorted(names, key=len, reverse=True))
    pattern = re.compile(rf"\b{_CHOOSE}\s*:?\s+(?:the\s+|with\s+the\s+)?({arms})\b"
                         rf"|^\s*({arms})\s*(?:it\s+is)?[.!]?\s*$", re.IGNORECASE)
    plan = None
    for sentence in sentences(think or ""):
        if sentence.question:
            continue
        for m in pattern.finditer(sentence.text):
            head = sentence.text[max(0, m.start() - 60):m.start()]
            if _UNCOMMITTED.search(head[-30:]) or re.search(r"\b(?:not|n't|never)\b", m.group(), re.IGNORECASE):
                continue
            plan = [(m.group(1) or m.group(2)).lower()]
    return plan


def answer_actions(turn: dict, game: str) -> list[str]:
    """The answer's actions in lower case: ``actions_parsed`` if the record has it, else split ``answer``."""
    parsed = turn.get("actions_parsed")
    if parsed is None:
        answer = turn.get("answer") or ""
        parsed = [a for a in re.split(r"\|\||,|\n", answer) if a.strip()]
    out = []
    for action in parsed:
        word = str(action).strip().lower()
        out.append(word if game == "bandit" else MOVE_WORDS.get(word, word))
    return out


def plans_agree(plan: Sequence[str], answer: Sequence[str]) -> bool:
    """Agreement: one sequence is a prefix of the other (a thought may plan beyond this turn), both non-empty."""
    if not plan or not answer:
        return False
    k = min(len(plan), len(answer))
    return list(plan[:k]) == list(answer[:k])
