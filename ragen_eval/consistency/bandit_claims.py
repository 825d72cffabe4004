"""Rule-based claims about Bandit arms: which arms there are, which is riskier, which pays more on average."""

from __future__ import annotations

import bisect
import re
from collections.abc import Sequence

from ragen_eval.consistency.claims import Claim, arm_key
from ragen_eval.consistency.segments import sentences

_RISK_HIGH = (r"(?:riskier|riskiest|risky|more\s+risky|most\s+risky|high[- ]risk|higher[- ]risk|more\s+risk|"
              r"volatile|more\s+volatile|high[- ]variance|higher[- ]variance|more\s+variable|a\s+gamble|"
              r"the\s+gamble|uncertain)")
_RISK_LOW = (r"(?:safe|safer|safest|low[- ]risk|lower[- ]risk|less\s+risky|least\s+risky|reliable|more\s+reliable|"
             r"steady|stable|low[- ]variance|lower[- ]variance|guaranteed|consistent|predictable)")
_REWARD_NOUN = r"(?:reward|payoff|payout|return|value|pay|mean|average|ev)"
_REWARD_HIGH = (rf"(?:(?:higher|highest|better|larger|greater|bigger|more)\s+(?:expected\s+|average\s+|mean\s+)?"
                rf"{_REWARD_NOUN}s?|pays?\s+more|gives?\s+more|earns?\s+more|better\s+on\s+average|"
                rf"more\s+on\s+average|(?:expected\s+|average\s+|mean\s+)?{_REWARD_NOUN}s?\s+is\s+higher)")
_REWARD_LOW = (rf"(?:(?:lower|lowest|smaller|less|worse|poorer)\s+(?:expected\s+|average\s+|mean\s+)?"
               rf"{_REWARD_NOUN}s?|pays?\s+less|gives?\s+less|earns?\s+less|worse\s+on\s+average|"
               rf"less\s+on\s+average|(?:expected\s+|average\s+|mean\s+)?{_REWARD_NOUN}s?\s+is\s+lower)")
_PREDICATES = (("risk", "high", _RISK_HIGH), ("risk", "low", _RISK_LOW),
               ("reward", "high", _REWARD_HIGH), ("reward", "low", _REWARD_LOW))
_NOT_ASSERTED = re.compile(r"\b(?:not|n't|never|if|maybe|might|perhaps|could|would|whether|unless|wonder|"
                           r"cannot|can't|unsure)\b|\bor\b", re.IGNORECASE)
# Words allowed between an arm and its predicate: "dragon (arm) is probably the riskier (one)".
_LINK = re.compile(r"^(?:\s*(?:'s|is|seems|looks|sounds|appears|has|have|offers|gives|provides|pays|arm|option|choice|"
                   r"to|be|like|the|a|an|one|probably|likely|clearly|definitely|much|far|also|but|and|its|it|"
                   r"i|think|believe|guess|with)\b|\s*[,:])*\s*$", re.IGNORECASE)
#: Characters a predicate may sit from its arm ("dragon is, I think, clearly the riskier one").
_REACH = 120
_ANY_PREDICATE = re.compile(r"\b(?:" + "|".join(p for _, _, p in _PREDICATES) + r")\b", re.IGNORECASE)
# Between two listed arms: "A, B", "A and B", "A, and B", "A & B".
_LIST_BREAK = r"(?:\s*,\s*(?:and\s+)?|\s+(?:and|&)\s+)"


def extract_bandit_claims(think: str, arm_names: Sequence[str]) -> list[Claim]:
    """``arms``, ``risk`` and ``reward`` claims (without verdicts) that ``think`` makes about the level's arms.

    A predicate binds to the nearest arm name before it in the same sentence ("dragon is riskier
    but pays more" gives two claims about dragon), or to the arm "its" refers to. A sentence that
    lists the arms ("The arms are Tiger and Owl.", "Arms: Tiger, Owl.") gives one ``arms`` claim.
    """
    names = [str(n).lower() for n in arm_names if str(n).strip()]
    if not names:
        return []
    alternatives = "|".join(re.escape(n) for n in sorted(names, key=len, reverse=True))
    arms = re.compile(r"\b(" + alternatives + r")s?\b", re.IGNORECASE)
    # A listed item is one of the level's names (any case) or a capitalised word, so a wrong name ("Oak" for
    # Owl) is read as a claim and a description ("the arms are risky and safe") is not.
    item = rf"(?:\b(?i:{alternatives})\b|\b[A-Z][\w'-]*)"
    listing = re.compile(rf"\b(?i:arms)\s*(?:(?i:are)\s+|:\s*)(?P<list>{item}(?:{_LIST_BREAK}{item})+)$")
    found: dict[str, Claim] = {}
    for sentence in sentences(think or ""):
        if sentence.question:
            continue
        text = sentence.text
        listed = listing.search(text)
        if listed and not _NOT_ASSERTED.search(text[:listed.start("list")]):
            stated = re.split(_LIST_BREAK, listed.group("list"))
            canonical = "arms(" + ",".join(arm_key(name) for name in stated) + ")"
            start, end = sentence.start + listed.start("list"), sentence.start + listed.end("list")
            found.setdefault(canonical, Claim(canonical, think[start:end], start, end))
        mentions = list(arms.finditer(text))
        ends = [m.end() for m in mentions]
        for head, level, predicate in _PREDICATES:
            for pm in re.finditer(rf"\b{predicate}\b", text, re.IGNORECASE):
                nearest = bisect.bisect_right(ends, pm.start())
                if not nearest or pm.start() - mentions[nearest - 1].end() > _REACH:
                    continue
                arm = mentions[nearest - 1]
                between = _ANY_PREDICATE.sub(" ", text[arm.end():pm.start()])
                lead = text[max(0, arm.start() - _REACH):arm.start()]
                opening = max((m.end() for m in re.finditer(r"[,;:]|\b(?:but|and|while|whereas)\b", lead,
                                                              re.IGNORECASE)), default=0)
                if not _LINK.match(between) or _NOT_ASSERTED.search(lead[opening:] + text[arm.start():pm.end()]):
                    continue
                if re.match(r"\s*than\s+(?:the\s+)?" + arm.group(1), text[pm.end():], re.IGNORECASE):
                    continue
                canonical = f"{head}({arm_key(arm.group(1))},{level})"
                start, end = sentence.start + arm.start(), sentence.start + pm.end()
                found.setdefault(canonical, Claim(canonical, think[start:end], start, end))
    return sorted(found.values(), key=lambda c: c.start)
