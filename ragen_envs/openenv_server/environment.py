"""`TextGameEnvironment`: every registered game as an OpenEnv ``Environment``, one episode per session.

A thin adapter over :class:`ragen_envs.text.TextEpisode`: ``reset`` opens an episode through the
server's :class:`~ragen_envs.server.policy.ClientPolicy` (so what a client may ask is checked there,
as on ``python -m ragen_envs.server``), ``step`` hands the reply to ``TextEpisode.step`` and turns its
record into an observation. Nothing here plays a turn itself.

By default an observation carries only the chat messages that are new to the client (``chat="new"``):
the opening chat on reset, then on each step the messages that follow the model's reply; the turn and
episode records come only when a reset asks for them (``records=True``). OpenEnv serialises every answer
twice (``model_dump``, then the envelope's JSON), object by object: the growing chat was most of an
answer's bytes, and the records' game states (every wall of a Sokoban room, before and after each
turn, then all of it again in the episode record) most of its serialising work (docs/benchmarks.md).
An observation is built and dumped without pydantic's per-field work (:func:`_construct`,
:meth:`GameObservation.model_dump`): its values are plain JSON built for that answer, and OpenEnv
encodes the envelope's JSON itself.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from openenv.core.env_server.interfaces import Environment
from openenv.core.env_server.types import Action, EnvironmentMetadata, Observation, State
from pydantic import Field

from ragen_envs.server.policy import ClientPolicy, PolicyError
from ragen_envs.text.episode import MAX_REPLY_CHARS, TextEpisode, content_text
from ragen_envs.text.parser import format_reply

#: Most action names one ``actions`` list may carry (the protocol executes at most a few per turn).
MAX_ACTION_NAMES = 64
#: What an observation's ``messages`` holds: the messages new to the client, or the whole chat.
CHAT_MODES = ("new", "full")


class GameAction(Action):
    """One turn: exactly one of the model's raw ``reply``, a TextArena-style ``message`` (the same
    text under the name TextArena's clients use), or ``actions`` (names, sent as the well-formed
    reply :func:`~ragen_envs.text.parser.format_reply` writes). ``step`` checks that there is exactly
    one: a pydantic validator's error here would end the session (OpenEnv cannot serialise its context)."""

    reply: str | None = Field(default=None, max_length=MAX_REPLY_CHARS,
                              description="the model's reply, e.g. '<think>..</think><answer>Up || Left</answer>'")
    message: str | None = Field(default=None, max_length=MAX_REPLY_CHARS,
                                description="the same as reply, under TextArena's field name")
    actions: list[str] | None = Field(default=None, max_length=MAX_ACTION_NAMES,
                                      description="action names, played as a well-formed reply")


class GameObservation(Observation):
    """Where the episode stands after a reset or a step.

    ``reward`` (OpenEnv's field) is the turn's reward plus its format penalty, what ``ragen-train``
    credits to the turn (0 on reset). With ``chat="new"`` the client keeps the chat: it appends its
    reply and then ``messages`` after each step.
    """

    messages: list[dict[str, Any]] = Field(
        default_factory=list,
        description="chat 'new': on reset the opening chat, on a step the messages after the model's reply "
                    "(append the reply, then these); chat 'full': the whole chat to send the model now")
    chat: str = Field(default="new", description="what messages holds: 'new' or 'full' (the reset's chat)")
    text: str | None = Field(default=None, description="the newest user turn's text (the state); None once done")
    info: dict[str, Any] = Field(default_factory=dict,
                                 description="env, seed, turn, success, actions_left, format_errors, total_reward, end_reason, ...")
    turn: dict[str, Any] | None = Field(
        default=None, description="the turn record of docs/protocol.md (steps of a reset with records=True)")
    record: dict[str, Any] | None = Field(
        default=None, description="the episode record once done (with records=True; its certificate only with "
                                  "--reveal-certificate)")
    certificate: Any = Field(default=None, description="the level's certificate, only with --reveal-certificate")

    def model_dump(self, *, exclude: Any = None, **kwargs: Any) -> dict[str, Any]:
        """pydantic's ``model_dump``, but OpenEnv's call for every answer (top-level names in ``exclude``,
        nothing else) returns the field values as they are: the environment built them for this answer
        from plain JSON, and OpenEnv only encodes the envelope around them, so pydantic's serialiser would
        walk and copy every message and info entry (about 3 us a turn) to produce the same JSON."""
        if kwargs or not (exclude is None or isinstance(exclude, (set, frozenset))):
            return super().model_dump(exclude=exclude, **kwargs)
        values = self.__dict__.copy()
        for name in exclude or ():
            values.pop(name, None)
        return values


class GameState(State):
    """``episode_id`` and ``step_count`` (turns played) with the episode's env, seed and outcome."""

    env: str | None = None
    seed: int | None = None
    done: bool = False
    success: bool = False
    total_reward: float = 0.0


def _construct(**fields: Any) -> GameObservation:
    """``GameObservation.model_construct(**fields)`` given every field, in about 2 us instead of 5-8.

    Every value is built by the environment from the episode's plain-JSON records, so pydantic's
    validation would re-check (and copy) what cannot be wrong; ``model_construct`` skips it but still
    walks every field's aliases and defaults in Python. This sets the four attributes it sets for a model
    like this one (no aliases, ``extra="forbid"``, no private attributes): the values, the fields given,
    no extras, no private values.
    """
    observation = GameObservation.__new__(GameObservation)
    object.__setattr__(observation, "__dict__", fields)
    object.__setattr__(observation, "__pydantic_fields_set__", set(fields))
    object.__setattr__(observation, "__pydantic_extra__", None)
    object.__setattr__(observation, "__pydantic_private__", None)
    return observation


@dataclass(frozen=True)
class ServerSettings:
    """What the operator fixed when starting the server (see ``python -m ragen_envs.openenv_server -h``)."""

    env: str = "sokoban"
    policy: ClientPolicy = field(default_factory=ClientPolicy)
    reveal_certificate: bool = False
    metadata: EnvironmentMetadata | None = None


class TextGameEnvironment(Environment[GameAction, GameObservation, GameState]):
    """One session's game. ``reset(seed=7)`` plays the server's default env; ``env``, ``protocol``,
    ``env_config`` and ``levels`` (a level file's name) pick another, within the server's policy."""

    SUPPORTS_CONCURRENT_SESSIONS = True

    def __init__(self, settings: ServerSettings | None = None) -> None:
        super().__init__()
        self.settings = settings or ServerSettings()
        self._episode: TextEpisode | None = None
        self._episode_id: str | None = None
        self._chat = "new"
        self._records = False
        self._sent = 0  # messages of the chat the client holds (with chat "new")

    def reset(self, seed: int | None = None, episode_id: str | None = None, env: str | None = None,
              protocol: Mapping[str, Any] | None = None, env_config: Mapping[str, Any] | None = None,
              levels: str | None = None, chat: str | None = None, records: bool = False,
              **kwargs: Any) -> GameObservation:
        """Open a new episode (closing this session's previous one); unknown arguments are refused.

        ``chat`` is what each observation's ``messages`` holds: ``"new"`` (the default where the episode's
        context is ``full``) or ``"full"`` (the default under the sliding contexts ``last_k`` and ``single``,
        whose chat is rewritten every turn, so only ``"full"`` is allowed there). ``records=True`` adds the
        turn record to every step's observation and the episode record to the last."""
        if kwargs:
            raise PolicyError(400, f"unknown reset argument(s) {sorted(kwargs)}; "
                                   "known: seed, episode_id, env, protocol, env_config, levels, chat, records")
        if chat is not None and chat not in CHAT_MODES:
            raise PolicyError(400, f"chat must be one of {list(CHAT_MODES)}, got {chat!r}")
        if not isinstance(records, bool):
            raise PolicyError(400, f"records must be true or false, got {records!r}")
        name = self.settings.env if env is None else env
        episode = self.settings.policy.open_episode(name, seed, protocol, env_config, levels)
        context = episode.config.context
        if chat == "new" and context != "full":
            episode.close()
            raise PolicyError(400, f"chat 'new' needs context 'full': context {context!r} rewrites the chat every "
                                   "turn; reset with chat 'full'")
        self.close()
        self._episode = episode
        self._chat = chat or ("new" if context == "full" else "full")
        self._records = records
        self._sent = 0
        self._episode_id = episode_id
        return self._observation(reward=0.0, turn=None)

    def step(self, action: GameAction, timeout_s: float | None = None, **kwargs: Any) -> GameObservation:
        """Play one turn of this session's episode."""
        episode = self._episode
        if episode is None:
            raise PolicyError(409, "no episode in this session: send reset first")
        if episode.done:
            raise PolicyError(409, f"the episode already ended ({episode.end_reason}); send reset for a new one")
        given = [name for name in ("reply", "message", "actions") if getattr(action, name) is not None]
        if len(given) != 1:
            raise PolicyError(400, f"send exactly one of 'reply', 'message' or 'actions', got {given or 'none'}")
        if action.actions is not None:
            reply = format_reply(action.actions, episode.config.action_separator,
                                 thought="" if episode.config.think else None)
        else:
            reply = action.reply if action.reply is not None else action.message
        turn = episode.step(reply)
        return self._observation(reward=turn["reward"] + turn["penalty"], turn=turn)

    async def step_async(self, action: GameAction, timeout_s: float | None = None, **kwargs: Any) -> GameObservation:
        """A turn is bounded, sub-millisecond work: played on the event loop, without a thread hop."""
        return self.step(action, timeout_s, **kwargs)

    def _observation(self, reward: float, turn: dict[str, Any] | None) -> GameObservation:
        episode = self._episode
        assert episode is not None
        if self._chat == "full" or turn is None:
            messages = episode.messages
            self._sent = len(messages)
        else:
            # The client holds the chat up to its reply (sent before, plus the reply it appended); only what
            # follows is built, not the whole chat again.
            messages = episode.history_from(self._sent + 1)
            self._sent += 1 + len(messages)
        reveal = self.settings.reveal_certificate
        record = None
        if episode.done and self._records:
            record = episode.record()
            if not reveal:
                record["certificate"] = None
        return _construct(
            metadata={},
            done=episode.done,
            reward=reward,
            messages=messages,
            chat=self._chat,
            text=None if episode.done else content_text(messages[-1]["content"]),
            info={
                "env": episode.env_name,
                "seed": episode.seed,
                "turn": episode.turn,
                "action_names": list(episode.game.action_names),
                "actions_left": episode.actions_left,
                "max_actions_per_turn": episode.config.max_actions_per_turn,
                "success": episode.success,
                "format_errors": [] if turn is None else list(turn["format_errors"]),
                "total_reward": episode.total_reward,
                "end_reason": episode.end_reason,
            },
            turn=turn if self._records else None,
            record=record,
            certificate=episode.certificate if reveal else None,
        )

    @property
    def state(self) -> GameState:
        """The session's episode id, turns played, env, seed and outcome (read from the episode when asked,
        so a turn pays nothing for it)."""
        episode = self._episode
        if episode is None:
            return GameState()
        return GameState(episode_id=self._episode_id, step_count=episode.turn, env=episode.env_name,
                         seed=episode.seed, done=episode.done, success=episode.success,
                         total_reward=episode.total_reward)

    def get_metadata(self) -> EnvironmentMetadata:
        """The server's metadata: name, description and one environment card per preset."""
        return self.settings.metadata or super().get_metadata()

    def close(self) -> None:
        """Close the episode's env (it holds no outside resource; the call keeps Gymnasium's contract)."""
        if self._episode is not None:
            self._episode.close()
