"""Cut a thought into sentences and clauses, keeping character offsets into the original text."""

from __future__ import annotations

import re
from dataclasses import dataclass

# A sentence ends at . ! ? ; or a line break, but not inside a number such as 0.25 or (2.5).
_SENTENCE_END = re.compile(r"[.!?;]+(?=\s|$)|\n+|(?<=[a-z][.!?])(?=[A-Z])")
# Clause breaks inside a sentence: "..., but ...", "... so ...", "..., then ...", "... because ...".
_CLAUSE_BREAK = re.compile(r",?\s+\b(?:but|so|because|since|whereas|while|although|though|however)\b,?\s+"
                           r"|,\s*(?:and\s+)?then\b\s*|\s+and\s+then\s+|\s+then\s+|\s*[-\u2013\u2014]{1,2}\s+",
                           re.IGNORECASE)


@dataclass(frozen=True)
class Segment:
    """A piece of the thought: its text and where it starts in the full thought."""

    text: str
    start: int
    question: bool = False
    lead: str = ""  # the clause break just before this piece (", then", " but "), lower-cased


def _pieces(text: str, offset: int, breaker: re.Pattern[str]) -> list[tuple[str, int, str]]:
    pieces, last = [], 0
    for match in breaker.finditer(text):
        pieces.append((text[last:match.start()], offset + last, match.group()))
        last = match.end()
    pieces.append((text[last:], offset + last, ""))
    return pieces


def _trimmed(text: str, start: int) -> tuple[str, int]:
    stripped = text.lstrip()
    start += len(text) - len(stripped)
    return stripped.rstrip(), start


# Long runs of blanks are masked (same length, so offsets hold) before any pattern sees them: no
# claim spans such a run, and patterns with several optional-blank parts would otherwise go quadratic.
_LONG_BLANKS = re.compile(r"[^\S\n]{9,}")


def sentences(text: str) -> list[Segment]:
    """Sentences of ``text``; a sentence that ends with '?' is flagged as a question."""
    text = _LONG_BLANKS.sub(lambda m: " " + "\x00" * (len(m.group()) - 1), text)
    out = []
    for piece, start, ender in _pieces(text, 0, _SENTENCE_END):
        body, begin = _trimmed(piece, start)
        if body:
            out.append(Segment(body, begin, question="?" in ender))
    return out


def clauses(sentence: Segment) -> list[Segment]:
    """Clauses of one sentence (split at but/so/then/because...), each keeping the question flag."""
    out = []
    lead = ""
    for piece, start, breaker in _pieces(sentence.text, sentence.start, _CLAUSE_BREAK):
        body, begin = _trimmed(piece, start)
        if body:
            out.append(Segment(body, begin, sentence.question, lead))
        lead = breaker.strip().lower()
    return out
