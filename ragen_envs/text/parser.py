"""Parse a model's reply: ``<think>...</think><answer>A || B || C</answer>``.

:func:`parse_response` never raises for any reply: whatever does not follow the format becomes a
format error with a reason. Each reason starts with a fixed kind (the text before the first ``:``)
so that evaluators can count failure categories; :data:`ERROR_KINDS` lists them.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

#: Every kind of format error, i.e. what ``error.split(":")[0]`` can be.
ERROR_KINDS = (
    "not a string",
    "truncated",
    "too long",
    "missing <think>",
    "missing </think>",
    "nested <think>",
    "more than one <think>",
    "missing <answer>",
    "missing </answer>",
    "nested <answer>",
    "more than one <answer>",
    "<answer> before <think>",
    "empty answer",
    "unknown action",
)

# Tags are matched case-insensitively and may carry inner spaces ("< /Answer >"); one linear scan
# finds them all, so 100 KB of garbage costs a single pass. The slash and its spaces are one optional
# group: two ``\s*`` around an optional ``/`` could split a run of spaces every possible way, and a
# "<" followed by 40,000 spaces took 25 s.
_TAG = re.compile(r"<\s*(?:(/)\s*)?(think|answer)\s*>", re.IGNORECASE)
# The common, well-formed shape with no other "<" anywhere: its parse is unambiguous, so the general
# tag scan below is skipped (it is most replies, and the scan dominates the cost of a turn).
_CANONICAL = re.compile(r"[^<]*(?:<think>([^<]*)</think>[^<]*)?<answer>([^<]*)</answer>[^<]*")
# Decoration models put around an action name: quotes, brackets, markdown emphasis, punctuation.
_DECORATION = " \t\r\n\"'`*_.,;:!?()[]{}"


@dataclass(frozen=True)
class ParsedResponse:
    """The outcome of parsing one reply.

    ``actions``/``action_names`` hold what the turn executes (at most ``max_actions``) and are empty
    whenever ``format_ok`` is False; ``dropped`` holds the answer items beyond the per-turn limit.
    ``think`` is the text inside ``<think>`` or, when the reply has none, the provider reasoning
    passed as ``reasoning`` (then ``think_from_reasoning`` is True).
    """

    think: str | None
    answer: str | None
    actions: tuple[int, ...]
    action_names: tuple[str, ...]
    dropped: tuple[str, ...]
    format_ok: bool
    errors: tuple[str, ...]
    think_from_reasoning: bool = False

    def to_dict(self) -> dict[str, Any]:
        """JSON-friendly form (tuples become lists)."""
        return {key: list(value) if isinstance(value, tuple) else value for key, value in asdict(self).items()}


@dataclass(frozen=True)
class _Tag:
    start: int
    end: int
    closing: bool
    kind: str


def normalize_action(token: str) -> str:
    """The lookup key of one answer item: NFKC, decoration stripped, spaces collapsed, case-folded."""
    token = unicodedata.normalize("NFKC", token).strip(_DECORATION)
    return " ".join(token.split()).casefold()


def action_lookup(action_names: Sequence[str], aliases: Mapping[str, int] | None = None) -> dict[str, int]:
    """Normalised spelling -> action id, from the canonical names and the game's aliases."""
    lookup = {normalize_action(name): i for i, name in enumerate(action_names)}
    for alias, index in (aliases or {}).items():
        if not 0 <= index < len(action_names):
            raise ValueError(f"alias {alias!r} points to action {index}, outside 0..{len(action_names) - 1}")
        lookup.setdefault(normalize_action(alias), index)
    return lookup


def _find_block(tags: Sequence[_Tag], kind: str, errors: list[str]) -> tuple[_Tag | None, _Tag | None]:
    """The first open tag of ``kind`` and its close; reports nesting, a missing close and extra blocks."""
    opening = next((t for t in tags if not t.closing), None)
    if opening is None:
        return None, None
    after = [t for t in tags if t.start > opening.start]
    closing = next((t for t in after if t.closing), None)
    if closing is None:
        errors.append(f"missing </{kind}>")
        return opening, None
    if any(not t.closing for t in after if t.start < closing.start):
        errors.append(f"nested <{kind}>: a second <{kind}> opens before the first one closes")
    elif any(t.start > closing.start for t in after):
        errors.append(f"more than one <{kind}>: only one block is allowed")
    return opening, closing


def parse_response(
    text: Any,
    action_names: Sequence[str] = (),
    aliases: Mapping[str, int] | None = None,
    *,
    max_actions: int = 5,
    think: bool = True,
    separator: str = "||",
    reasoning: str | None = None,
    max_chars: int | None = None,
    finish_reason: str | None = None,
    lookup: Mapping[str, int] | None = None,
) -> ParsedResponse:
    """Parse ``text`` into think text, answer and action ids; never raises for any ``text``.

    Args:
        text: the model's reply.
        action_names: canonical action names; index ``i`` is action ``i``.
        aliases: extra spellings -> action id (the game's ``action_aliases()``).
        max_actions: items used from the answer; later ones go to ``dropped``.
        think: require a ``<think>`` block (or ``reasoning``); False accepts ``<answer>`` alone.
        separator: what separates actions inside ``<answer>``.
        reasoning: provider-side reasoning, used as the think text when the reply has no ``<think>``.
        max_chars: replies longer than this are a "too long" format error.
        finish_reason: ``"length"`` (cut off by the token limit) is a "truncated" format error.
        lookup: a prebuilt :func:`action_lookup` (saves rebuilding it on every call).

    Bad arguments other than ``text`` (e.g. ``max_actions < 1``) raise ``ValueError``.
    """
    if max_actions < 1:
        raise ValueError(f"max_actions must be at least 1, got {max_actions}")
    if not separator or not separator.strip():
        raise ValueError(f"separator must be a non-blank string, got {separator!r}")
    if lookup is None:
        lookup = action_lookup(action_names, aliases)
    if not isinstance(text, str):
        return ParsedResponse(None, None, (), (), (), False, (f"not a string: got {type(text).__name__}",))

    errors: list[str] = []
    if finish_reason == "length":
        errors.append("truncated: the reply hit the length limit")
    if max_chars is not None and len(text) > max_chars:
        errors.append(f"too long: {len(text)} characters, limit {max_chars}")
    think_error_at = len(errors)  # a missing <think> is reported before the answer's problems
    canonical = _CANONICAL.fullmatch(text)
    if canonical is not None:
        think_text, answer_text = canonical.group(1), canonical.group(2).strip()
    else:
        think_text, answer_text = _scan_blocks(text, errors)
    think_from_reasoning = False
    if think_text is None and reasoning and reasoning.strip():
        think_text, think_from_reasoning = reasoning, True
    if think and think_text is None:
        errors.insert(think_error_at, "missing <think>")

    names: list[str] = []
    ids: list[int] = []
    dropped: list[str] = []
    if answer_text is not None:
        items = [item.strip() for item in answer_text.split(separator) if item.strip(_DECORATION)]
        if not items:
            errors.append("empty answer: no action inside <answer>")
        kept, dropped = items[:max_actions], items[max_actions:]
        for item in kept:
            index = lookup.get(item.casefold())
            if index is None:
                index = lookup.get(normalize_action(item))
            if index is None:
                errors.append(f"unknown action: {item[:40]!r}")
            else:
                ids.append(index)
                names.append(action_names[index])
    if errors:
        ids, names = [], []
    think_out = think_text.strip() if think_text is not None else None
    return ParsedResponse(
        think=think_out,
        answer=answer_text,
        actions=tuple(ids),
        action_names=tuple(names),
        dropped=tuple(dropped),
        format_ok=not errors,
        errors=tuple(errors),
        think_from_reasoning=think_from_reasoning,
    )


def _scan_tags(text: str) -> list[_Tag]:
    tags = []
    for match in _TAG.finditer(text):
        tags.append(_Tag(match.start(), match.end(), bool(match.group(1)), match.group(2).lower()))
    return tags


def _scan_blocks(text: str, errors: list[str]) -> tuple[str | None, str | None]:
    """Think and answer text of any reply (None where absent or malformed), reporting structure errors.

    The answer text is None unless its block is well formed, so a broken block never yields actions.
    """
    tags = _scan_tags(text)
    think_tags = [t for t in tags if t.kind == "think"]
    think_text: str | None = None
    span = (0, 0)  # the think block; answer tags inside it are part of the thoughts, not the answer
    if think_tags and think_tags[0].closing:
        # A chat template that opens <think> for the model: the reply starts inside the block.
        first_close = think_tags[0]
        think_text, span = text[: first_close.start], (0, first_close.end)
        if len(think_tags) > 1:
            errors.append("more than one <think>: only one block is allowed")
    elif think_tags:
        opening, closing = _find_block(think_tags, "think", errors)
        if closing is None:
            think_text, span = text[opening.end :], (opening.start, len(text))
        else:
            think_text, span = text[opening.end : closing.start], (opening.start, closing.end)

    answer_tags = [t for t in tags if t.kind == "answer" and not span[0] <= t.start < span[1]]
    known_errors = len(errors)
    opening, closing = _find_block(answer_tags, "answer", errors)
    if opening is None:
        errors.append("missing <answer>")
        return think_text, None
    if closing is None or len(errors) > known_errors:
        return think_text, None
    if think_tags and opening.start < span[0]:
        errors.append("<answer> before <think>: the thoughts must come first")
    return think_text, text[opening.end : closing.start].strip()


def format_reply(actions: Sequence[str], separator: str = "||", thought: str | None = None) -> str:
    """A well-formed reply that :func:`parse_response` reads back as ``actions``.

    ``thought=None`` writes the no-think format (``<answer>`` alone). Used by every scripted
    player: the oracle replies, the harness's built-in agents and the trainer's demonstrations.
    """
    answer = f"<answer>{f' {separator} '.join(actions)}</answer>"
    return answer if thought is None else f"<think>{thought}</think>{answer}"
