"""Rule-based claim extraction for the grid games (Sokoban, FrozenLake).

The extractor favours precision: a claim is emitted only when a sentence links a thing to a cell,
a direction or a status through a short, known phrase ("the box is at (2, 3)", "there is a wall
above me", "pushing right puts the box on the target"). Questions, negations and speculation
("if I were at...", "maybe", "would") yield nothing. Verdicts are added later by ``verify``.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache

from ragen_eval.consistency.board import TERRAIN_KINDS
from ragen_eval.consistency.claims import Claim
from ragen_eval.consistency.lexicon import COORD, NUM, Lexicon, coord_value, lexicon_for, moves_in, symbol_names, to_int
from ragen_eval.consistency.segments import Segment, clauses, sentences

# Words allowed between a thing and its coordinate ("the box is currently located at (2, 3)").
_LINK_WORDS = frozenset("""
is are am 's 'm be being currently now still right exactly located situated positioned placed sitting sits sit
standing stands stand lying lies found probably likely think guess believe at in on the a an away cells steps
which that should must already also both here position cell square tile spot location coordinates coordinate pos
one another other g h s f directly immediately just diagonally up down left right above below under underneath
beneath top bottom upper lower corner side of from my it sitting stuck trapped two three four
""".split())
#: How far (characters) local checks look around a match, and how many object mentions ("of the box")
#: a coordinate may reach back over to its thing: both keep long texts linear.
_WINDOW = 80
_MAX_SKIPPED = 4
_LINK_PUNCT = frozenset(":=,-()@.$#*+")
# Rewrites applied to a gap before checking its words: "seems to be" -> "is", "to my left" -> "my left",
# a label after the thing ("box 1 at", "goal G is").
_GAP_REWRITES = (
    (re.compile(r"\b(?:appears?|seems?|happens?|ought)\s+to\s+be\b", re.IGNORECASE), " is "),
    (re.compile(r"\bto\s+(?=(?:the|my|its)\s+(?:left|right|top|bottom|upper|lower))", re.IGNORECASE), " "),
    (re.compile(r"^\s*(?:#?\d|[A-Z])\b(?=\s)"), " "),
)
_BASE_NOTE = re.compile(r"\(?\b(?:in\s+)?[01][- ]?(?:based|indexed)(?:\s+coordinates)?\)?", re.IGNORECASE)
_TOKEN = re.compile(r"[a-z']+|\d+|\S", re.IGNORECASE)
# What may sit between two coordinates of one list ("(1,1), (1,3) and (2,3)", "one at .. and another at").
_LIST_GAP = re.compile(r"\s*(?:,|;|&|\band\b|,\s*and\b|\bor\b)\s*(?:(?:the\s+)?(?:other|another)(?:\s+one)?|one)?"
                       r"\s*(?:(?:is\s+)?(?:at|in|on))?\s*", re.IGNORECASE)
# A coordinate followed by what is there: "(3,0) is a hole", "row 1 col 1 has the box".
_REVERSE_GAP = re.compile(r"\s*(?:,\s*)?(?:which|that)?\s*(?:is|am|has|contains|holds|=|:|-+>|there's|there\s+is|"
                          r"(?:is\s+)?located|"
                          r"(?:is\s+)?also)\s*(?:also\s+)?(?:a|an|the|my|where|some|one)?\s*", re.IGNORECASE)
_OBJECT_AT_GAP = re.compile(r"\s*,?\s*at\s*", re.IGNORECASE)
_APPOSITION_GAP = re.compile(r"\s*\(\s*(?:the\s+one\s+)?(?:at|in|on)?\s*", re.IGNORECASE)
_OBJECT_BEFORE = re.compile(r"(?:\b(?:of|for|from|to|than|beside|besides|near|towards?|onto|into|above|below|"
                            r"under|beneath|left|right|push|pushing|move|moving|past|around|behind)"
                            r"\s+(?:the\s+|a\s+|an\s+|my\s+)?)$", re.IGNORECASE)
#: A number right before a box mention ("Two boxes are on targets", "2 of the boxes are placed").
_COUNT_BEFORE = re.compile(rf"\b(?P<n>{NUM})\s+(?:of\s+the\s+)?$", re.IGNORECASE)
_NEGATION = re.compile(r"\b(?:not|no|never|neither|nor|nothing)\b|n't\b", re.IGNORECASE)
#: Moves already made: their result is the state the prompt shows, not a prediction.
_PAST = re.compile(r"\b(?:were|was|moved|went|stepped|walked)\b|\bi\s+pushed\b", re.IGNORECASE)
_HEDGES = r"maybe|might|perhaps|possibly|could|would"
#: Hedged outcomes are no predictions ("moving up might put me at ..."); "if I move up, I will be" is one.
_HEDGE = re.compile(rf"\b(?:{_HEDGES}|probably)\b", re.IGNORECASE)
_SPECULATION = re.compile(rf"\b(?:if|{_HEDGES}|suppose|supposing|assume|assuming|"
                          r"imagine|whether|unless|hypothetically|wonder|let's\s+check|want|wanted|need|needs)\b",
                          re.IGNORECASE)

# Longer words first, and a word's end after each: "upper" once matched as "up", "underneath" as "under".
_VERTICAL = r"(?:upward|upper|up|downward|down|above|below|underneath|under|beneath|north|south|lower|top|bottom)"
_HORIZONTAL = r"(?:left|right|west|east)"
_DIR_WORD = rf"(?:(?:{_VERTICAL}|{_HORIZONTAL})\b)"
_DIR_PHRASE = (rf"(?:(?P<prep>to|on|at|in|towards?)\s+(?:the|my|its)\s+)?(?P<d1>{_DIR_WORD})"
               rf"(?:(?:\s*-\s*|\s+and\s+(?:to\s+|on\s+)?(?:the\s+)?|(?<=upper|lower)\s+|(?<=top)\s+|(?<=bottom)\s+)"
               rf"(?P<d2>{_DIR_WORD}))?(?:\s+(?:side|corner))?")
_COPULA = (r"(?:\s*(?:,\s*)?(?:which\s+|that\s+)?(?:is|are|'s|am|'m|sits?|lies|lie|stands?|located|situated|"
           r"appears\s+to\s+be|seems\s+to\s+be|should\s+be|must\s+be))")
_ADVERBS = r"(?:\s+(?:currently|still|now|probably|also|likely|definitely|located|situated|somewhere|further|farther|" \
           r"slightly|a\s+bit|then|again|exactly|positioned|placed))*"
_DIRECTION_NAMES = {"up": "up", "above": "up", "north": "up", "upward": "up", "upper": "up", "top": "up",
                    "down": "down", "below": "down", "under": "down", "underneath": "down", "beneath": "down",
                    "south": "down", "downward": "down", "lower": "down", "bottom": "down",
                    "left": "left", "west": "left", "right": "right", "east": "right"}
_MOVE_SEQ = (r"(?P<moves>(?:up|down|left|right|north|south|east|west|upwards?|downwards?)"
             r"(?:\s+(?:once|twice|thrice|two\s+times|three\s+times|\d+\s+times|x\s?\d|again))?"
             r"(?:\s*(?:,|and|then|,\s*then|and\s+then|->|\|\|)\s*(?:up|down|left|right|north|south|east|west)"
             r"(?:\s+(?:once|twice|thrice|two\s+times|three\s+times|\d+\s+times|x\s?\d|again))?)*)")
def _renamed(pattern: str, prefix: str) -> str:
    """``pattern`` with every named group prefixed, so it can appear twice in one regex."""
    return pattern.replace("(?P<", f"(?P<{prefix}")


_MOTION = re.compile(rf"\b(?:after\s+(?:i\s+)?|if\s+i\s+|once\s+i\s+|when\s+i\s+)?(?:move|moving|go|going|goes|"
                     rf"step|stepping|push|pushing|walk|walking|head|heading)\s+(?:the\s+box\s+|it\s+)?{_MOVE_SEQ}\b"
                     rf"|\bafter\s+{_renamed(_MOVE_SEQ, 'after_')}\b", re.IGNORECASE)
_PLAN_REFERENCE = re.compile(r"^(?:so\s+|and\s+)?(?:that|this|these(?:\s+\w+)?\s+moves|doing\s+so|after\s+that|"
                             r"after\s+this|after\s+(?:the\s+|these\s+|those\s+|\w+\s+)?(?:\w+\s+)?"
                             r"(?:moves|pushes|steps|actions)|then)\b"
                             r"|\b(?:i|the\s+box|it)\s+(?:will|'ll)\s+(?:then\s+)?(?:be|end\s+up|land)\b"
                             r"|\bi'll\s+(?:then\s+)?(?:be|end\s+up|land)\b", re.IGNORECASE)
_RESULT = re.compile(r"\b(?:will|'ll|should|puts?|takes?|brings?|moves?|lands?|land|ends?\s+up|gets?|leads?|"
                     r"places?|reach(?:es)?|goes|go|solves?|completes?|pushing|pushes)\b|\bto\s+(?=[(\[]|row)"
                     r"|\bonto\b", re.IGNORECASE)
_SOLVED = re.compile(r"\b(?:solves?|solved|completes?|completed)\b(?:\s+the\s+(?:puzzle|level|game))?|"
                     r"\ball\s+(?:the\s+)?boxes\b", re.IGNORECASE)


@dataclass(frozen=True)
class _Mention:
    kind: str
    start: int
    end: int
    text: str
    is_object: bool


@lru_cache(maxsize=None)
def _patterns(lex: Lexicon) -> dict[str, re.Pattern[str]]:
    """Sentence patterns built on a game's vocabulary (compiled once per lexicon)."""
    thing = lex.thing.pattern
    subject, other = _renamed(thing, "a_"), _renamed(thing, "b_")
    at1 = rf"(?:\s*(?:,\s*)?at\s+(?P<coord>{_renamed(COORD.pattern, 'c1_')})\s*,?)?"
    at2 = rf"(?:\s*(?:,\s*)?at\s+(?P<coord2>{_renamed(COORD.pattern, 'c2_')})\s*,?)?"
    copula = rf"(?P<copula>{_COPULA}(?P<neg>\s+not|n't)?{_ADVERBS})?"
    distance = rf"(?:(?P<num>{NUM})\s*(?:cells?|squares?|steps?|spaces?|tiles?|rows?|columns?|positions?)?\s+)?"
    label = r"(?:\s+\(?[GSHFXOP@$.#*+\u221a]\)?(?=[\s,]))?"
    relation = (rf"(?P<subject>{subject}){label}{at1}{copula}{at2}(?:,?\s*which\s+is)?"
                rf"\s*(?P<mod>directly|straight|immediately|right|just|diagonally|exactly|somewhere)?\s*{distance}"
                rf"{_DIR_PHRASE}(?:\s*(?:of|from)?\s*(?:the\s+|a\s+|an\s+)?(?P<object>{other})"
                rf"(?:\s*,?\s*at\s+(?P<coord3>{_renamed(COORD.pattern, 'c3_')}))?)?"
                rf"(?:\s+and\s+(?:to\s+|on\s+)?(?:the\s+)?(?P<d3>{_DIR_WORD}))?")
    there = (rf"(?:\bthere(?:'s|\s+is|\s+are)\s+(?:a|an|the|one|another|some)?|\band\s+(?:a|an|another))\s*"
             rf"(?P<subject>{subject})\s*"
             rf"(?P<mod>directly|straight|immediately|right|just|diagonally)?\s*{distance}"
             rf"{_DIR_PHRASE}(?:\s*(?:of|from)?\s*(?:the\s+|a\s+|an\s+)?(?P<object>{other}))?")
    reverse = (rf"(?:^|,\s*|\band\s+)(?P<mod>directly|immediately|right|just)?\s*{_DIR_PHRASE}"
               rf"(?:\s*(?:of|from)?\s*(?:the\s+)?(?P<object>{other}))?\s+(?:is|has|lies|sits|there's|there\s+is|"
               rf"is\s+blocked\s+by)\s+(?:a|an|the|some)?\s*(?P<subject>{subject})")
    near = (r"\s*(?:right|just|directly)?\s*(?:next\s+to|adjacent\s+to|beside|besides|touching|neighbou?ring|"
            rf"alongside)\s+(?:a|an|the|my)?\s*(?P<object>{other})"
            r"(?:\s*(?:,\s*)?(?:on|to)\s+(?:the|my)\s+(?P<side>left|right)|\s+(?P<side2>above|below))?")
    adjacent = rf"(?P<subject>{subject}){at1}{copula}{near}"
    there_adjacent = rf"\bthere(?:'s|\s+is|\s+are)\s+(?:a|an|the|some)?\s*(?P<subject>{subject}){near}"
    return {name: re.compile(p, re.IGNORECASE) for name, p in
            (("relation", relation), ("there", there), ("reverse", reverse), ("adjacent", adjacent),
             ("there_adjacent", there_adjacent))}


def _before(text: str, pos: int) -> str:
    """The few words before ``pos``: look-behind checks stay local, so long texts stay linear."""
    return text[max(0, pos - _WINDOW):pos]


def _kind(match: re.Match[str], prefix: str, lex: Lexicon) -> str | None:
    return next((k for k in lex.kinds if match.group(f"{prefix}{k}") is not None), None)


def _mentions(text: str, lex: Lexicon) -> list[_Mention]:
    out = []
    for m in lex.thing.finditer(text):
        is_object = m.group().lower() in ("me", "myself") or bool(_OBJECT_BEFORE.search(_before(text, m.start())))
        out.append(_Mention(lex.kind_of(m), m.start(), m.end(), m.group(), is_object))
    return out


def _is_link(gap: str, mentions: Sequence[_Mention], offset: int) -> bool:
    """Whether ``gap`` (starting at ``offset``) holds only linking words and skipped object mentions."""
    if len(gap) > _WINDOW:
        return False
    for mention in sorted(mentions, key=lambda m: -m.start):
        if offset <= mention.start and mention.end <= offset + len(gap):
            gap = gap[:mention.start - offset] + " " + gap[mention.end - offset:]
    gap = _BASE_NOTE.sub(" ", gap)
    for pattern, replacement in _GAP_REWRITES:
        gap = pattern.sub(replacement, gap)
    tokens = _TOKEN.findall(gap.lower())
    return len(tokens) <= 10 and all(t in _LINK_WORDS or t in _LINK_PUNCT for t in tokens)


def _cell(match: re.Match[str], base: int) -> tuple[int, int]:
    return coord_value(match, base)


def _positions(seg: Segment, lex: Lexicon, base: int, kinds: frozenset[str] | None = None
               ) -> Iterator[tuple[str, tuple[int, int], int, int]]:
    """(kind, cell, start, end) for each coordinate that a thing is linked to in ``seg``."""
    text = seg.text
    mentions = _mentions(text, lex)
    starts, ends = [m.start for m in mentions], [m.end for m in mentions]
    previous: tuple[re.Match[str], str] | None = None
    for cm in COORD.finditer(text):
        cell = _cell(cm, base)
        kind, start = None, cm.start()
        if previous is not None and _LIST_GAP.fullmatch(text[previous[0].end():cm.start()]):
            kind, start = previous[1], previous[0].start()
        if kind is None:
            nearest = bisect.bisect_right(ends, cm.start())
            for mention in reversed(mentions[max(0, nearest - _MAX_SKIPPED):nearest]):
                gap = text[mention.end:cm.start()]
                if len(gap) > _WINDOW or COORD.search(gap):
                    break
                opens = mention.start <= _WINDOW and not text[:mention.start].strip(" ,;:")
                labelled = re.fullmatch(r"\s*[:=]\s*", gap) is not None or (mention.text.lower() == "me" and opens)
                if mention.is_object and _OBJECT_AT_GAP.fullmatch(gap):
                    kind, start = mention.kind, mention.start  # "below the box at (2, 3)": the box's cell
                    break
                if mention.is_object and not (_APPOSITION_GAP.fullmatch(gap) or labelled):
                    continue
                if _is_link(gap, mentions, mention.end) or _APPOSITION_GAP.fullmatch(gap):
                    kind, start = mention.kind, mention.start
                break
        if kind is not None and (kinds is None or kind in kinds):
            yield kind, cell, start, cm.end()
            host = _player_standing_on(text, start, mentions)
            if host is not None and kind != "player" and (kinds is None or "player" in kinds):
                yield "player", cell, host, cm.end()
        previous = (cm, kind) if kind is not None else None
        following = bisect.bisect_left(starts, cm.end())
        if following < len(mentions):
            thing = mentions[following]
            gap = text[cm.end():thing.start]
            if len(gap) <= _WINDOW and _REVERSE_GAP.fullmatch(gap) and thing.kind != kind \
                    and (kinds is None or thing.kind in kinds):
                yield thing.kind, cell, cm.start(), thing.end


def _player_standing_on(text: str, start: int, mentions: Sequence[_Mention]) -> int | None:
    """Start of "I am (standing) on/at the" before a thing at ``start`` ("I'm at the start (0,0)"): the
    player shares that cell."""
    lead = re.search(r"(?:\bi\s+am|\bi'm|\bthe\s+player\s+is)\s+(?:now\s+|currently\s+|standing\s+|still\s+)*"
                     r"(?:on|at|in)\s+(?:a|an|the)\s+$", _before(text, start), re.IGNORECASE)
    return lead.start() if lead else None


def _direction(*words: str | None) -> str | None:
    names = {_DIRECTION_NAMES[w.lower()] for w in words if w}
    vertical = [n for n in names if n in ("up", "down")]
    horizontal = [n for n in names if n in ("left", "right")]
    if len(vertical) > 1 or len(horizontal) > 1 or not names:
        return None
    return "-".join(vertical + horizontal)


def _mode(subject: str, mod: str | None, num: str | None) -> str | None:
    if num:
        return str(to_int(num))
    if subject in TERRAIN_KINDS:
        return "1"
    mod = (mod or "").lower()
    if mod in ("right", "just", "immediately"):
        return "1"
    if mod in ("directly", "straight", "diagonally", "exactly"):
        return "line"
    return None


def _relation_claim(subject: str, obj: str | None, direction: str | None, mode: str | None,
                    start: int, end: int, pins: tuple[tuple[int, int] | None, tuple[int, int] | None] = (None, None)
                    ) -> Claim | None:
    obj = obj or "player"
    if direction is None or (subject == obj and None in pins):
        return None
    tail = f",{mode}" if mode else ""
    a, b = (kind if cell is None else f"{kind}@{cell[0]}:{cell[1]}" for kind, cell in zip((subject, obj), pins))
    return Claim(f"rel({a},{b},{direction}{tail})", start=start, end=end)


def _pinned(text: str | None, base: int) -> tuple[int, int] | None:
    """The cell a relation names for one of its things ("the box at (8, 6)"), or None."""
    match = COORD.search(text) if text else None
    return _cell(match, base) if match else None


def _relations(seg: Segment, lex: Lexicon, coordinate_base: int) -> Iterator[Claim]:
    pats = _patterns(lex)
    text, base = seg.text, seg.start
    for name in ("adjacent", "there_adjacent"):
        for m in pats[name].finditer(text):
            subject = _kind(m, "a_", lex)
            if subject is None:
                continue
            if name == "adjacent" and (m.group("neg") or not (m.group("copula") or m.group("coord")
                                                               or m.group("subject").lower() in ("i'm", "i am"))):
                continue
            obj = _kind(m, "b_", lex)
            side = m.group("side") or m.group("side2")
            if side:
                claim = _relation_claim(subject, obj, _direction(side), "1", base + m.start(), base + m.end())
            else:
                claim = Claim(f"adj({subject},{obj})", start=base + m.start(), end=base + m.end())
            if claim is not None:
                yield claim
    for name in ("relation", "there", "reverse"):
        for m in pats[name].finditer(text):
            subject = _kind(m, "a_", lex)
            if subject is None:
                continue
            if name == "relation":
                ended_with_me = m.group("subject").lower() in ("i'm", "i am")
                lead = _before(text, m.start())
                opens_clause = (m.start() <= len(lead) and not lead.strip(" ,")) or re.search(
                    r"\b(?:and|with(?:\s+the|\s+a)?)\s*$", lead, re.IGNORECASE)
                if m.group("neg") or not (m.group("copula") or m.group("coord") or ended_with_me or opens_clause):
                    continue
            after = text[m.end():m.end() + _WINDOW]
            if m.group("d2") is None and re.match(r"\s*(?:next|adjacent|beside)", text[m.end("d1"):m.end("d1") + 20]):
                continue
            # "two rows up and three columns right" is an offset the grammar cannot state; "of it" has no referent
            if re.match(rf"\s+and\s+{NUM}\s+(?:columns?|rows?|cells?|steps?)|\s*(?:of|from)\s+(?:it|them|that)\b",
                        after, re.IGNORECASE):
                continue
            obj = _kind(m, "b_", lex)
            if (m.group("prep") or "").lower() in ("at", "in") and obj is None:
                continue  # "at the bottom right" names a place on the grid, not a direction from anything
            groups = m.groupdict()
            direction = _direction(m.group("d1"), m.group("d2"), groups.get("d3"))
            mode = _mode(subject, m.group("mod"), groups.get("num"))
            bare = name == "reverse" and obj is None and not re.match(r"(?:to|on|towards?)\b", m.group().lstrip(" ,"),
                                                                     re.IGNORECASE)
            if bare or (mode is None and re.match(r",?\s*(?:diagonally\s+)?adjacent\b", after, re.IGNORECASE)):
                mode = "1"
            pins = (None, None)
            if name == "relation" and obj is not None:  # cells named for both things pin the relation to them
                pins = (_pinned(m.group("coord") or m.group("coord2"), coordinate_base),
                        _pinned(m.group("coord3"), coordinate_base))
                pins = pins if None not in pins else (None, None)
            claim = _relation_claim(subject, obj, direction, mode, base + m.start(), base + m.end(), pins)
            if claim is not None:
                yield claim


def _statuses(seg: Segment, lex: Lexicon) -> Iterator[Claim]:
    text, base = seg.text, seg.start
    thing = lex.thing
    for m in thing.finditer(text):
        subject = lex.kind_of(m)
        rest = text[m.end():m.end() + _WINDOW]
        link = re.match(rf"(?:\s*(?:,\s*)?at\s+{COORD.pattern}\s*,?)?{_COPULA}?(?P<neg>\s+not|n't)?"
                        r"(?:\s+(?:already|now|currently|still|finally|standing|sitting|stuck|trapped|pushed|also))*\s+"
                        r"(?:(?P<on>on|onto|at|in|into)\s+(?:the|a|an|its|their|one)?\s*"
                        r"(?:(?:top|bottom|upper|lower)[- ]?(?:left|right)?[- ]?)?(?P<what>\w+)"
                        r"|(?P<placed>placed|in\s+place))\b", rest, re.IGNORECASE)
        if link is None or link.group("neg") or re.search(r"\b(?:all|both|every|not|no)\s+(?:the\s+|of\s+the\s+)?$",
                                                          _before(text, m.start()), re.IGNORECASE):
            continue
        what = (link.group("what") or "").lower()
        end = base + m.end() + link.end()
        count = _COUNT_BEFORE.search(_before(text, m.start()))
        if subject == "box" and (link.group("placed") or what in ("target", "targets", "goal", "goals", "dock")):
            if count:  # "2 boxes are on targets" counts them; once read as "some box is on a target"
                yield Claim(f"placed({to_int(count.group('n'))})", start=base + m.start() - len(count.group(0)),
                            end=end)
            else:
                yield Claim("on(box,target)", start=base + m.start(), end=end)
        elif subject == "box" and what == "corner":
            yield Claim("corner(box)", start=base + m.start(), end=end)
        elif subject == "player" and what in ("target", "goal", "hole", "start") and lex.game == "sokoban":
            if what in ("target", "goal"):
                yield Claim("on(player,target)", start=base + m.start(), end=end)
        elif subject == "player" and what in ("goal", "hole", "gift", "treasure") and lex.game == "frozenlake":
            yield Claim(f"on(player,{'hole' if what == 'hole' else 'goal'})", start=base + m.start(), end=end)
    if lex.game == "sokoban":
        placed = re.search(r"\b(?:all|both|every)\s+(?:the\s+|of\s+the\s+)?(?:boxes|box|crates?)\s+(?:are|is)\s+"
                           r"(?:now\s+|already\s+)?(?:on|placed|in\s+place)\b|\b(?:puzzle|level)\s+is\s+"
                           r"(?:now\s+|already\s+)?solved\b", text, re.IGNORECASE)
        if placed and not _NEGATION.search(text[max(0, placed.start() - 8):placed.end()]):
            yield Claim("all_placed", start=base + placed.start(), end=base + placed.end())


def _predictions(seg: Segment, lex: Lexicon, base: int, default_moves: Sequence[str],
                 carried: tuple[str, ...] = ()) -> tuple[list[Claim], list[Claim], tuple[str, ...]] | None:
    """(predictions, current-state claims, moves) if ``seg`` predicts the result of moves, else None.

    ``carried``: the moves of a prediction in the previous clause when this one follows "then"
    ("moving left pushes the box to (3,1), then I'm at (3,2)"); its own leading moves are appended.
    """
    text = seg.text
    motion = _MOTION.search(text)
    reference = _PLAN_REFERENCE.search(text)
    leading = re.match(rf"\s*(?:(?:move|go|push|step)\s+)?{_renamed(_MOVE_SEQ, 'lead_')}\b", text, re.IGNORECASE)
    needs_result = True
    if carried and motion is None:
        own = tuple(moves_in(leading.group("lead_moves"))) if leading else ()
        moves, consequent_at, needs_result = carried + own, leading.end() if leading else 0, False
    elif motion is not None:
        moves = tuple(moves_in(motion.group("moves") or motion.group("after_moves") or ""))
        consequent_at = motion.end()
    elif reference is not None and default_moves:
        moves, consequent_at = tuple(default_moves), reference.start()
    else:
        return None
    consequent = text[consequent_at:]
    if not moves or (needs_result and not _RESULT.search(consequent)) or _PAST.search(text):
        return None  # "I moved left, which put me at (3, 3)" is a claim about the state shown, read as one
    if _NEGATION.search(consequent) or _HEDGE.search(text):
        return [], [], moves  # "moving up will not solve it", "moving up might put me at ...": nothing checkable
    pushes = bool(re.search(r"\bpush", text, re.IGNORECASE))
    tag = ",".join(moves)
    sub = Segment(consequent, seg.start + consequent_at)
    predicted: list[Claim] = []
    current: list[Claim] = []
    mentions = _mentions(consequent, lex)
    for cm in COORD.finditer(consequent):
        cell = coord_value(cm, base)
        nearest = [m for m in mentions if m.end <= cm.start()]
        lands_on = nearest and re.search(r"\b(?:me|i|be)\s+(?:on|onto|in|into|at)\s+(?:the|a|an)\s+$",
                                         consequent[:nearest[-1].start], re.IGNORECASE)
        if lands_on:
            nearest = [m for m in nearest if m.kind == "player"] or [_Mention("player", 0, 0, "", False)]
        if nearest and nearest[-1].kind not in ("player", "box"):
            continue  # "the hole at (2,0) will be to my left": a fixed thing, read as a current claim
        before = [m for m in nearest if m.kind in ("player", "box")]
        if before:
            kind = before[-1].kind
        elif re.search(r"\bit\b", consequent[:cm.start()], re.IGNORECASE) and pushes:
            kind = "box"
        else:
            kind = "player"
        span_start = sub.start + (before[-1].start if before else cm.start())
        predicted.append(Claim(f"after({tag}|at({kind},{cell[0]},{cell[1]}))", start=span_start,
                               end=sub.start + cm.end()))
    for kind, cell, start, end in _positions(sub, lex, base, frozenset(lex.kinds) - {"player", "box"}):
        current.append(Claim(f"at({kind},{cell[0]},{cell[1]})", start=sub.start + start, end=sub.start + end))
    low = consequent.lower()
    if lex.game == "sokoban":
        on_target = next((m for m in mentions if m.kind == "target" and re.search(
            r"\b(?:on|onto|in)\s+(?:the|a|its|their)?\s*$", consequent[:m.start], re.IGNORECASE)), None)
        if on_target is not None and (pushes or any(m.kind == "box" for m in mentions)):
            predicted.append(Claim(f"after({tag}|on(box,target))", start=sub.start + on_target.start,
                                   end=sub.start + on_target.end))
        solved = _SOLVED.search(consequent)
        if solved:
            predicted.append(Claim(f"after({tag}|all_placed)", start=sub.start + solved.start(),
                                   end=sub.start + solved.end()))
    else:
        goal = re.search(r"\b(?:reach(?:es)?|onto|on|at|to)\s+(?:the\s+)?(?:goal|gift|treasure)\b", low)
        hole = re.search(r"\b(?:into|in|onto)\s+(?:a|the)\s+hole\b|\bfall", low)
        if goal:
            predicted.append(Claim(f"after({tag}|on(player,goal))", start=sub.start + goal.start(),
                                   end=sub.start + goal.end()))
        if hole:
            predicted.append(Claim(f"after({tag}|on(player,hole))", start=sub.start + hole.start(),
                                   end=sub.start + hole.end()))
    if not predicted and not current:
        return None if needs_result is False else (predicted, current, moves)
    return predicted, current, moves


def extract_grid_claims(think: str, *, game: str, coordinate_base: int = 0, default_moves: Sequence[str] = (),
                        symbols: Mapping[str, str] | None = None) -> list[Claim]:
    """Claims (without verdicts) that ``think`` makes about a Sokoban or FrozenLake state.

    ``coordinate_base`` is the convention the prompt declared; cells in the claims are 0-based.
    ``symbols`` is the protocol's symbol map (None: the game's defaults); each symbol also names its thing.
    ``default_moves`` (the turn's answer) is what "after these moves" / "that brings me to" refers to.
    Duplicate claims (same canonical form) are kept once, at their first occurrence.
    """
    if coordinate_base not in (0, 1):
        raise ValueError(f"coordinate_base must be 0 or 1, got {coordinate_base!r}")
    lex = lexicon_for(game, symbol_names(game, symbols))
    found: list[Claim] = []
    for sentence in sentences(think or ""):
        if sentence.question:
            continue
        carried: tuple[str, ...] = ()
        for seg in clauses(sentence):
            predicted = _predictions(seg, lex, coordinate_base, default_moves,
                                     carried if "then" in seg.lead else ())
            carried = ()
            if predicted is not None:
                found.extend(predicted[0] + predicted[1])
                carried = predicted[2]
                continue
            if _SPECULATION.search(seg.text):
                continue
            for kind, cell, start, end in _positions(seg, lex, coordinate_base):
                found.append(Claim(f"at({kind},{cell[0]},{cell[1]})", start=seg.start + start,
                                   end=seg.start + end))
            found.extend(_relations(seg, lex, coordinate_base))
            found.extend(_statuses(seg, lex))
    unique: dict[str, Claim] = {}
    for claim in sorted(found, key=lambda c: c.start):
        claim.text = think[claim.start:claim.end]
        unique.setdefault(claim.canonical, claim)
    return list(unique.values())
