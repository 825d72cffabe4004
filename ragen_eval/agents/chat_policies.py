"""Random and oracle play from the chat alone: the built-in agents behind ``ragen-eval serve``.

Over HTTP a server sees only the messages, never the live episode, so these agents read what a
model reads. :func:`read_chat` pulls the valid actions, the budget left and the current state out of
the text protocol's default turn template (``ragen_envs.text.prompts.DEFAULT_TURN_TEMPLATE``, read
backwards by :func:`template_regexes`, so a reworded template is followed automatically), in time
linear in the chat's length. The oracle then rebuilds the game from the state text with the game's
own ``from_text`` classmethod (found through the registered presets, never a game's private module)
and asks the in-process oracle's player, :func:`ragen_envs.text.players.oracle_turn`, for the turn:

* Sokoban: the grid (RAGEN's symbols) becomes a level, which the Sokoban solver solves optimally
  from the current position; the turn plays the first moves of that solution.
* FrozenLake: the grid gives the lake and the player's cell; slipping and its probability come from
  the rules text (printed exactly, e.g. ``1/3``).
* Bandit: each arm name is looked up in the name pools to tell the low-risk arm from the high-risk
  one; payoffs are read from the rules when they are revealed, else the game's default payoffs.
* Countdown: the numbers and the target; the answer is the first expression of them that hits it.
* Sudoku: the grid, its digits taken as givens and solved again; the turn fills cells of that solution.
* The 2x2 cube: the unfolded net; the turn plays the first turns of an optimal solution.

What this cannot see it does not guess: a custom template, the ``coords``-only format, a custom
symbol vocabulary or fixed arm names make :func:`read_chat` or the planner raise ``ValueError``,
and the agent answers with an empty ``<answer>`` (scored as a format error) whose thought says why.
Every answer is a pure function of the request (messages, ``seed``), so a retried request gets the
same answer and a run through injected faults scores exactly like a clean run.
"""

from __future__ import annotations

import asyncio
import bisect
import functools
import hashlib
import json
import re
import string
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import gymnasium as gym
import numpy as np
from gymnasium.envs.registration import load_env_creator

from ragen_envs.registration import PRESETS
from ragen_envs.text.episode import content_text
from ragen_envs.text.parser import format_reply
from ragen_envs.text.players import oracle_turn, random_turn
from ragen_envs.text.prompts import DEFAULT_TURN_TEMPLATE

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
    users = [content_text(m.get("content")) for m in messages if m.get("role") == "user"]
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
    """The random player (:func:`ragen_envs.text.players.random_turn`) on the actions and budget read from the chat."""

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
            plan = random_turn(len(view.action_names), view.turn_actions, request_rng(messages, sampling.seed, i))
            chosen = [view.action_names[j] for j in plan]
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
    """The optimal action names for this turn: the game rebuilt from the state text in ``view``, then
    :func:`ragen_envs.text.players.oracle_turn`, the in-process oracle's player."""
    for game_class in _game_classes():
        game = game_class.from_text(view.action_names, view.observation, view.intro)
        if game is not None:
            plan = oracle_turn(game, view.turn_actions, view.actions_left, view.turns_left)
            return [game.action_names[a] for a in plan]
    raise ValueError(f"no registered game reads a chat whose actions are {list(view.action_names)}")


@functools.cache
def _game_classes() -> tuple[Any, ...]:
    """The classes of the registered presets' games that can be rebuilt from a chat (``from_text``)."""
    classes = {load_env_creator(gym.spec(preset.env_id).entry_point) for preset in PRESETS}
    return tuple(sorted((c for c in classes if hasattr(c, "from_text")), key=lambda c: c.__qualname__))
