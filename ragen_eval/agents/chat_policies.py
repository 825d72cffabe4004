"""Random and oracle play from the chat alone: the built-in agents behind ``ragen-eval serve``.

Over HTTP a server sees only the messages, never the live episode, so these agents read what a
model reads. :func:`read_chat` pulls the valid actions, the budget left and the current state out of
the text protocol's default turn template (``ragen_envs.text.prompts.DEFAULT_TURN_TEMPLATE``, read
backwards by :func:`template_regexes`, so a reworded template is followed automatically), in time
linear in the chat's length; the oracle then rebuilds the game from the state text and plans on it:

* Sokoban: the grid (RAGEN's symbols) becomes a level in standard notation, which the Sokoban solver
  solves optimally from the current position; the turn plays the first moves of that solution.
* FrozenLake: the grid gives the lake and the player's cell; slipping and its probability come from
  the rules text (printed exactly, e.g. ``1/3``). The turn is planned by the same function as the
  in-process oracle's (:func:`ragen_envs.frozen_lake.planning.plan_turn`), so both play alike.
* Bandit: each arm name is looked up in the name pools to tell the low-risk arm from the high-risk
  one; payoffs are read from the rules when they are revealed, else the game's default payoffs.

What this cannot see it does not guess: a custom template, the ``coords``-only format, a custom
symbol vocabulary or fixed arm names make :func:`read_chat` or the planner raise ``ValueError``,
and the agent answers with an empty ``<answer>`` (scored as a format error) whose thought says why.
Every answer is a pure function of the request (messages, ``seed``), so a retried request gets the
same answer and a run through injected faults scores exactly like a clean run.
"""

from __future__ import annotations

import asyncio
import bisect
import hashlib
import json
import re
import string
from dataclasses import dataclass
from fractions import Fraction
from typing import TYPE_CHECKING

import numpy as np

from ragen_envs.text.parser import format_reply

from ragen_eval.agents.base import Completion, SamplingParams

if TYPE_CHECKING:
    from ragen_envs.text import TextEpisode

#: What each field of a turn template matches when the template is read backwards.
_FIELD_PATTERNS = {"observation": r".*?", "actions": r"[^\n]*?", "format_hint": r"[^\n]*"}
_NUMBER_FIELDS = ("turn", "max_turns", "turns_left", "actions_left", "turn_actions", "max_actions_per_turn",
                  "max_actions_per_episode")


#: The field that may span lines and any text; the template is split around it (see :func:`template_regexes`).
_FREE_FIELD = "observation"


def template_regexes(template: str) -> tuple[re.Pattern[str], re.Pattern[str] | None]:
    """Regexes for text rendered from ``template``: the part before ``{observation}`` and the part after.

    One regex with a lazy ``.*?`` for the observation would be tried from every place the head
    matches and each try would scan to the end of the text: quadratic in a long chat. Split in two,
    each part only holds fields bounded by a line, and :func:`_last_turn` joins them in linear time.
    Without an observation field the second regex is None. Fields get one named group each.
    """
    halves: list[list[str]] = [[]]
    seen: set[str] = set()
    for literal, name, _, _ in string.Formatter().parse(template):
        halves[-1].append(re.escape(literal))
        if name is None:
            continue
        if name == _FREE_FIELD and len(halves) == 1:
            halves.append([])
            continue
        pattern = r"\d+" if name in _NUMBER_FIELDS else _FIELD_PATTERNS.get(name, r".*?")
        halves[-1].append(f"(?:{pattern})" if name in seen else f"(?P<{name}>{pattern})")
        seen.add(name)
    head = re.compile("".join(halves[0]), re.DOTALL)
    return head, (re.compile("".join(halves[1]), re.DOTALL) if len(halves) == 2 else None)


def _last_turn(text: str, head: re.Pattern[str], tail: re.Pattern[str] | None) -> dict[str, str] | None:
    """The fields of the last turn block in ``text`` (the observation is what lies between head and tail)."""
    if tail is None:
        last = None
        for last in head.finditer(text):
            pass
        return last.groupdict() if last is not None else None
    tails = list(tail.finditer(text))
    if not tails:
        return None
    last_head = None
    for match in head.finditer(text, endpos=tails[-1].start()):
        last_head = match
    if last_head is None:
        return None
    # The observation ends where the first tail after the head begins, as a lazy match would end it.
    starts = [match.start() for match in tails]
    after = tails[bisect.bisect_left(starts, last_head.end())]
    return {**last_head.groupdict(), _FREE_FIELD: text[last_head.end():after.start()], **after.groupdict()}


_SEPARATOR_RE = re.compile(r'separated by "([^"]+)"')


@dataclass(frozen=True)
class ChatView:
    """What the latest user message says about the game (read from the protocol's default templates)."""

    action_names: tuple[str, ...]
    observation: str
    turn: int  # 1-based
    max_turns: int
    actions_left: int
    turn_actions: int  # the most actions this turn can use
    think: bool
    separator: str
    intro: str  # the first user message: rules, legend, format, budget

    @property
    def turns_left(self) -> int:
        """Turns left including this one."""
        return self.max_turns - self.turn + 1


def read_chat(messages: list[dict[str, str]]) -> ChatView:
    """Read a :class:`ChatView` from a chat in the text protocol's default format; ValueError if it is not one."""
    from ragen_envs.text.prompts import DEFAULT_TURN_TEMPLATE

    users = [m.get("content") or "" for m in messages if m.get("role") == "user"]
    if not users:
        raise ValueError("the chat has no user message")
    fields = _last_turn(users[-1], *template_regexes(DEFAULT_TURN_TEMPLATE))
    if fields is None:
        raise ValueError("the last user message has no turn in the protocol's default turn template")
    missing = [k for k in ("observation", "actions", "turn", "max_turns", "actions_left", "turn_actions")
               if fields.get(k) is None]
    if missing:
        raise ValueError(f"the default turn template no longer shows {missing}; the chat policies need them")
    names = tuple(name.strip() for name in fields["actions"].split(","))
    if not all(names):
        raise ValueError(f"cannot read the valid actions from {fields['actions']!r}")
    intro = users[0]
    separator = _SEPARATOR_RE.search(intro)
    hint = fields.get("format_hint")
    return ChatView(
        action_names=names,
        observation=fields["observation"],
        turn=int(fields["turn"]),
        max_turns=int(fields["max_turns"]),
        actions_left=int(fields["actions_left"]),
        turn_actions=int(fields["turn_actions"]),
        think="<think>" in (hint if hint is not None else intro),
        separator=separator.group(1) if separator else "||",
        intro=intro,
    )


def format_answer(view: ChatView, actions: list[str], thought: str) -> str:
    """An answer in the chat's own format (think or no-think, its separator)."""
    return format_reply(actions, view.separator, thought if view.think else None)


def _cannot_read(reason: str) -> str:
    return f"<think>I cannot read this chat: {reason}</think><answer></answer>"


def request_rng(messages: list[dict[str, str]], seed: int | None, index: int) -> np.random.Generator:
    """An RNG fixed by the request's content, its ``seed`` and the choice index."""
    digest = hashlib.sha256(json.dumps(messages, sort_keys=True, ensure_ascii=False).encode()).digest()
    words = [int.from_bytes(digest[i:i + 4], "little") for i in range(0, 16, 4)]
    return np.random.default_rng([*words, 0 if seed is None else seed & 0xFFFFFFFF, index])


class ChatRandomAgent:
    """1 to ``turn_actions`` uniformly random valid actions per turn, read from the chat."""

    def __init__(self) -> None:
        self.name = "random"

    async def act(self, messages: list[dict[str, str]], *, n: int = 1, sampling: SamplingParams = SamplingParams(),
                  episode: TextEpisode | None = None) -> list[Completion]:
        """``n`` random answers; the same request always gets the same answers."""
        # On a worker thread: a server's event loop must stay free for other requests and /health.
        return await asyncio.to_thread(self._answer, messages, n, sampling)

    def _answer(self, messages: list[dict[str, str]], n: int, sampling: SamplingParams) -> list[Completion]:
        try:
            view = read_chat(messages)
        except ValueError as exc:
            return [Completion(text=_cannot_read(str(exc)), finish_reason="stop") for _ in range(n)]
        out = []
        for i in range(n):
            rng = request_rng(messages, sampling.seed, i)
            k = int(rng.integers(1, max(view.turn_actions, 1) + 1))
            chosen = [view.action_names[j] for j in rng.integers(0, len(view.action_names), size=k)]
            out.append(Completion(text=format_answer(view, chosen, "random play"), finish_reason="stop"))
        return out

    async def aclose(self) -> None:
        """Nothing to release."""


class ChatOracleAgent:
    """Optimal play planned on the state rebuilt from the chat's observation text."""

    def __init__(self) -> None:
        self.name = "oracle"

    async def act(self, messages: list[dict[str, str]], *, n: int = 1, sampling: SamplingParams = SamplingParams(),
                  episode: TextEpisode | None = None) -> list[Completion]:
        """``n`` copies of the optimal answer for the state shown in the chat."""
        # On a worker thread: a hard Sokoban search must not stall a server's other requests and /health.
        text = await asyncio.to_thread(self._answer, messages)
        return [Completion(text=text, finish_reason="stop") for _ in range(n)]

    @staticmethod
    def _answer(messages: list[dict[str, str]]) -> str:
        try:
            view = read_chat(messages)
            return format_answer(view, plan_from_chat(view), "optimal play from the state shown")
        except ValueError as exc:
            return _cannot_read(str(exc))

    async def aclose(self) -> None:
        """Nothing to release."""


def plan_from_chat(view: ChatView) -> list[str]:
    """The optimal action names for this turn, from the state text in ``view``."""
    from ragen_envs.frozen_lake.text import ACTION_NAMES as FROZEN_LAKE_ACTIONS
    from ragen_envs.sokoban import ACTION_NAMES as SOKOBAN_ACTIONS

    if view.action_names == tuple(SOKOBAN_ACTIONS):
        return _sokoban_plan(view)
    if view.action_names == tuple(FROZEN_LAKE_ACTIONS):
        return _frozenlake_plan(view)
    return _bandit_plan(view)




def _grid_lines(observation: str, symbols: set[str]) -> list[str]:
    """The leading lines of ``observation`` made only of single-character ``symbols`` (the grid part)."""
    lines = []
    for line in observation.split("\n"):
        if line and set(line) <= symbols:
            lines.append(line)
        elif lines:
            break
    if not lines:
        raise ValueError("the observation has no grid in the default symbols (is the format 'coords'?)")
    return lines


def _sokoban_plan(view: ChatView) -> list[str]:
    from ragen_envs.sokoban import ACTION_NAMES, parse_level, solve
    from ragen_envs.sokoban.text_view import RAGEN_SYMBOLS, STANDARD_SYMBOLS

    to_standard = {RAGEN_SYMBOLS[kind]: STANDARD_SYMBOLS[kind] for kind in RAGEN_SYMBOLS}
    rows = _grid_lines(view.observation, set(to_standard))
    level = parse_level("\n".join("".join(to_standard[ch] for ch in row) for row in rows))
    # The solver's default budget, the one a loaded level's certificate is found with: a smaller one
    # (200,000 nodes) failed 13 of the first 200 DeepMind Boxoban test levels. A search that long
    # (seconds) runs on a worker thread, so it delays only its own request.
    result = solve(level)
    if not result.solution:
        raise ValueError(f"the Sokoban solver found no solution from this state ({result.status.value})")
    return [ACTION_NAMES[a] for a in result.solution[:max(view.turn_actions, 1)]]


def _frozenlake_plan(view: ChatView) -> list[str]:
    from ragen_envs.frozen_lake.level import FrozenLakeLevel
    from ragen_envs.frozen_lake.planning import plan_turn
    from ragen_envs.frozen_lake.text import ACTION_NAMES, DEFAULT_SYMBOLS

    letters = {DEFAULT_SYMBOLS["frozen"]: "F", DEFAULT_SYMBOLS["hole"]: "H", DEFAULT_SYMBOLS["goal"]: "G",
               DEFAULT_SYMBOLS["player"]: "S"}
    over = {DEFAULT_SYMBOLS["player_in_hole"], DEFAULT_SYMBOLS["player_on_goal"]}
    rows = _grid_lines(view.observation, set(letters) | over)
    if any(ch in over for row in rows for ch in row):
        raise ValueError("the game is already over in the state shown")
    level = FrozenLakeLevel(tuple("".join(letters[ch] for ch in row) for row in rows))
    is_slippery = "not slippery" not in view.intro
    success_rate = 1.0
    if is_slippery:
        # The rules print the probability exactly ("1/3", "0.8"), so the plan matches the in-process oracle's.
        match = re.search(r"goes the way you chose with probability (\d+(?:\.\d+)?(?:/\d+)?)", view.intro)
        if match is None:
            raise ValueError("the rules do not say how slippery the ice is")
        try:
            success_rate = float(Fraction(match.group(1)))
        except (ValueError, ZeroDivisionError) as exc:
            raise ValueError(f"cannot read the slip probability {match.group(1)!r}") from exc
    plan = plan_turn(level, level.start, is_slippery=is_slippery, success_rate=success_rate,
                     turn_actions=view.turn_actions, actions_left=view.actions_left, turns_left=view.turns_left)
    return [ACTION_NAMES[a] for a in plan]


def _bandit_plan(view: ChatView) -> list[str]:
    from ragen_envs.bandit.config import BanditConfig
    from ragen_envs.bandit.names import NAME_POOLS

    if len(view.action_names) != 2:
        raise ValueError("the chat oracle plays two-armed bandits only (which risky arm is which is not shown)")
    low = {name.lower() for pool in NAME_POOLS.values() for name in pool.low_risk}
    high = {name.lower() for pool in NAME_POOLS.values() for name in pool.high_risk}
    kinds = ["low" if name.lower() in low else "high" if name.lower() in high else None for name in view.action_names]
    if None in kinds or kinds[0] == kinds[1]:
        raise ValueError(f"arm names {list(view.action_names)} are not one low-risk and one high-risk pool name")
    defaults = BanditConfig()
    payoff = {"low": defaults.low_risk_reward, "high": defaults.high_risk_reward * defaults.high_risk_prob}
    for i, name in enumerate(view.action_names):
        # With ``reveal_payoffs`` the rules say "NAME: pays X every time" or "pays X with probability P".
        revealed = re.search(rf"^\s*{re.escape(name)}: pays ([-0-9.e+]+)(?: with probability ([0-9.e+-]+))?",
                             view.intro, re.MULTILINE)
        if revealed:
            payoff[kinds[i]] = float(revealed.group(1)) * float(revealed.group(2) or 1.0)
    best = max(range(2), key=lambda i: payoff[kinds[i]])
    return [view.action_names[best]]
