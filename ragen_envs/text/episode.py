"""`TextEpisode`: one game played as a chat, turn by turn, with a JSON record of everything."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import asdict, is_dataclass
from typing import Any

import gymnasium as gym

from ragen_envs.config_dicts import coerce_config
from ragen_envs.images import encode_png, image_digest, image_part, styled_frame
from ragen_envs.registration import get_preset, make
from ragen_envs.seeding import as_seed
from ragen_envs.text.config import ProtocolConfig
from ragen_envs.text.jsonable import is_plain_json, plain_info, to_jsonable
from ragen_envs.text.parser import action_lookup, parse_response
from ragen_envs.text.prompts import observation_text, render_intro, render_turn
from ragen_envs.text_game import TextGame


#: The most characters of each model text an episode keeps, in the chat it sends back on later turns and in
#: its turn record (64 KiB of ASCII, far beyond what a turn's token budget lets a model write). A reply is
#: scored in full first; without the cut, one runaway reply would go back to the model on every later
#: turn (2 MB replies made request bodies grow from 1.9 KB to 8.4 MB by turn 5) and bloat every record.
MAX_REPLY_CHARS = 64 * 1024
#: The turn-record fields that hold model-written text of unbounded length, each cut to MAX_REPLY_CHARS.
MODEL_TEXT_FIELDS = ("response", "reasoning", "think", "answer")
#: The ``{observation}`` of a turn's text in ``image`` mode, where the picture stands in for the state text.
IMAGE_OBSERVATION_TEXT = "(the picture)"
# Where the image part goes in a turn's text; the text is split there into the parts before and after it.
_IMAGE_MARK = "\x00image\x00"


def make_env(env_name: str, env_config: Mapping[str, Any] | None = None, render_mode: str | None = None) -> gym.Env:
    """A game by preset name (``simple_sokoban``), preset id or any Gymnasium id whose env is a TextGame."""
    if not isinstance(env_name, str):
        raise TypeError(f"env_name must be a string, got {type(env_name).__name__}")
    if env_config is not None and not isinstance(env_config, Mapping):
        raise TypeError(f"env_config must be a mapping of config fields, got {type(env_config).__name__}")
    kwargs: dict[str, Any] = {} if render_mode is None else {"render_mode": render_mode}
    try:
        preset = get_preset(env_name)
    except ValueError:
        if env_name not in gym.registry:
            raise
        if env_config is not None:
            kwargs["config"] = dict(env_config)
        return gym.make(env_name, **kwargs)
    return make(preset.name, config=dict(env_config or {}), **kwargs)


def preset_protocol(env_name: str) -> dict[str, Any]:
    """The protocol defaults of the preset ``env_name`` names (e.g. ``observation`` of a visual preset); {} for
    a plain Gymnasium id."""
    try:
        return dict(get_preset(env_name).protocol)
    except ValueError:
        return {}


def message_content(text: str, png: bytes | None) -> str | list[dict[str, Any]]:
    """A user message's content: the text alone, or OpenAI content parts with the image where the state goes."""
    if png is None:
        return text
    before, _, after = text.partition(_IMAGE_MARK)
    parts: list[dict[str, Any]] = [{"type": "text", "text": before}] if before else []
    parts.append(image_part(png))
    if after:
        parts.append({"type": "text", "text": after})
    return parts


def content_text(content: Any) -> str:
    """The text of a message's content: a string as it is, the text parts of a content-part list joined."""
    if isinstance(content, list):
        return "".join(part.get("text", "") for part in content
                       if isinstance(part, dict) and part.get("type") == "text" and isinstance(part.get("text"), str))
    return content if isinstance(content, str) else ""


def _config_dict(game: Any, fallback: Mapping[str, Any] | None) -> dict[str, Any]:
    """The game's full config (so a replay does not depend on preset defaults), else the overrides given."""
    config = getattr(game, "config", None)
    if hasattr(config, "to_dict"):
        return to_jsonable(config.to_dict())
    if is_dataclass(config) and not isinstance(config, type):
        return to_jsonable(asdict(config))
    return to_jsonable(dict(fallback or {}))


def check_reply(response: Any, reasoning: Any = None) -> None:
    """TypeError unless ``response`` is a string and ``reasoning`` a string or None: what a turn takes."""
    if not isinstance(response, str):
        raise TypeError(f"response must be a string, got {type(response).__name__}")
    if reasoning is not None and not isinstance(reasoning, str):
        raise TypeError(f"reasoning must be a string or None, got {type(reasoning).__name__}")


class TextEpisode:
    """One episode of a game as a multi-turn chat.

    ``messages`` is the chat to send to the model now (context mode applied); ``step(response)`` parses
    the reply, applies its actions in order until the game ends or the action budget runs out, and
    returns the turn record. A reply that breaks the format executes no action and gets
    ``config.format_penalty``; ``finish_reason="length"`` counts as such a reply ("truncated"). A reply is
    scored in full, then kept (in the chat and in the record) cut to :data:`MAX_REPLY_CHARS`.
    """

    def __init__(
        self,
        env_name: str,
        seed: int,
        config: ProtocolConfig | Mapping[str, Any] | None = None,
        env_config: Mapping[str, Any] | None = None,
        *,
        render_mode: str | None = None,
    ) -> None:
        seed = as_seed(seed)
        config = coerce_config(ProtocolConfig, config)
        self.env_name = env_name
        self.seed = seed
        defaults = preset_protocol(env_name)
        if (config.observation or defaults.get("observation", "text")) != "text":
            # The picture of each turn is the env's rgb_array frame; a human window would return none.
            if render_mode not in (None, "rgb_array"):
                raise ValueError(f"image observations need render_mode None or 'rgb_array', got {render_mode!r}")
            render_mode = "rgb_array"
        self.env = make_env(env_name, env_config, render_mode)
        game = self.env.unwrapped
        if not isinstance(game, TextGame):
            raise TypeError(f"{env_name!r} builds a {type(game).__name__}, which does not implement TextGame")
        self.game: TextGame = game
        self.config = config.resolved({**game.text_defaults, **defaults})
        self.env_config = _config_dict(game, env_config)
        _, info = self.env.reset(seed=seed)
        self.level_seed = to_jsonable(info.get("level_seed"))
        self.certificate = to_jsonable(info.get("certificate"))
        self._lookup = action_lookup(game.action_names, game.action_aliases())
        self._intro = render_intro(game, self.config)
        self._state = game.state_dict()
        # Checked once here rather than converted every turn: state_dict() runs on every turn and a
        # conversion would cost as much as a game step. docs/interfaces.md asks for plain JSON.
        if not is_plain_json(self._state):
            raise TypeError(
                f"{type(game).__name__}.state_dict() must return plain JSON values (dict, list, str, int, float, "
                f"bool, None; no tuples or numpy types), got {self._state!r:.200}"
            )
        self._observation = observation_text(game, self.config)
        self._image = self._picture()
        self._responses: list[str] = []
        self._turns: list[dict[str, Any]] = []
        self.done = False
        self.success = False
        self.total_reward = 0.0
        self.num_actions = 0
        self.end_reason: str | None = None
        self._turn_texts = [self._turn_text(reward=None, errors=())]
        self._turn_images = [self._image]

    @property
    def turn(self) -> int:
        """Turns played so far."""
        return len(self._turns)

    @property
    def actions_left(self) -> int:
        """Actions the episode may still execute."""
        return self.config.max_actions_per_episode - self.num_actions

    def _picture(self) -> bytes | None:
        """The PNG of the current state in image and both modes, else None."""
        if self.config.observation == "text":
            return None
        frame = styled_frame(self.env.render(), self.config.image_size, self.config.image_style)
        return encode_png(frame)

    @property
    def image(self) -> bytes | None:
        """The PNG the model is shown of the current state (None in ``text`` mode)."""
        return self._image

    @property
    def history(self) -> list[dict[str, str]]:
        """Every message so far: system, the first user message, then assistant/user pairs."""
        return self._view(len(self._turn_texts))

    @property
    def messages(self) -> list[dict[str, str]]:
        """The chat to send now: full history, the last ``context_k`` turns, or the current state alone."""
        keep = {"full": len(self._turn_texts), "last_k": self.config.context_k, "single": 0}[self.config.context]
        return self._view(keep)

    def _view(self, past_turns: int) -> list[dict[str, str]]:
        # The rules always open the first user message kept, so every context mode still states them.
        first = max(0, len(self._turn_texts) - 1 - past_turns)
        return [{"role": "system", "content": self.config.system_prompt}, self._user_message(first, opening=True),
                *self._exchanges(first)]

    def history_from(self, start: int) -> list[dict[str, Any]]:
        """``history[start:]``, without building the messages before ``start`` (a server that sends each
        message once needs only the few its client does not hold yet)."""
        if start < 2:
            return self.history[start:]
        # history[2 + 2i] is reply i and history[3 + 2i] the user turn after it
        return self._exchanges((start - 2) // 2)[start % 2:]

    def _exchanges(self, first_reply: int) -> list[dict[str, Any]]:
        # Reply i, then the user turn it led to; a finished episode's last reply has no user turn after it.
        chat: list[dict[str, Any]] = []
        for index in range(first_reply, len(self._responses)):
            chat.append({"role": "assistant", "content": self._responses[index]})
            if index + 1 < len(self._turn_texts):
                chat.append(self._user_message(index + 1))
        return chat

    def _user_message(self, index: int, opening: bool = False) -> dict[str, Any]:
        # The opening user message of a view carries the rules before the turn's text.
        text = f"{self._intro}\n\n{self._turn_texts[index]}" if opening else self._turn_texts[index]
        return {"role": "user", "content": message_content(text, self._turn_images[index])}

    def _turn_text(self, reward: float | None, errors: tuple[str, ...]) -> str:
        shown = {"text": self._observation, "image": f"{IMAGE_OBSERVATION_TEXT}{_IMAGE_MARK}",
                 "both": f"{self._observation}{_IMAGE_MARK}"}[self.config.observation]
        return render_turn(
            self.game,
            self.config,
            turn=len(self._turns) + 1,
            actions_left=self.actions_left,
            last_reward=reward,
            last_errors=errors,
            observation=shown,
        )

    def step(self, response: str, finish_reason: str | None = None, reasoning: str | None = None) -> dict[str, Any]:
        """Play one turn with the model's ``response``; returns the turn record (see docs/protocol.md).

        ``finish_reason`` is the provider's ("length" makes the turn a "truncated" format error);
        ``reasoning`` is provider-side reasoning, used as the think text when the reply has none.
        """
        if self.done:
            raise RuntimeError(f"episode already finished ({self.end_reason}); start a new TextEpisode")
        check_reply(response, reasoning)
        config = self.config
        parsed = parse_response(
            response,
            self.game.action_names,
            lookup=self._lookup,
            max_actions=config.max_actions_per_turn,
            think=config.think,
            separator=config.action_separator,
            reasoning=reasoning,
            max_chars=config.max_response_chars,
            finish_reason=finish_reason,
        )
        executed: list[str] = []
        rewards: list[float] = []
        infos: list[dict[str, Any]] = []
        terminated = truncated = False
        for action, name in zip(parsed.actions, parsed.action_names):
            if self.num_actions >= config.max_actions_per_episode:
                break
            _, reward, terminated, truncated, info = self.env.step(action)
            self.num_actions += 1
            executed.append(name)
            rewards.append(float(reward))
            infos.append(plain_info(info))
            self.success = bool(info.get("success", False))
            if terminated or truncated:
                break
        reward = math.fsum(rewards)
        penalty = 0.0 if parsed.format_ok else float(config.format_penalty)
        self.total_reward += reward + penalty
        state_before, observation, image = self._state, self._observation, self._image
        if executed:  # without a step the state, and so its text, cannot have changed
            self._state = self.game.state_dict()
        record = {
            "turn": len(self._turns) + 1,
            "state_before": state_before,
            "observation": observation,
            **({} if image is None else {"image": image_digest(image)}),
            "response": response,
            "finish_reason": finish_reason,
            "reasoning": reasoning,
            "think": parsed.think,
            "answer": parsed.answer,
            "actions_parsed": list(parsed.action_names),
            "actions_executed": executed,
            "actions_dropped": list(parsed.dropped),
            "format_ok": parsed.format_ok,
            "format_errors": list(parsed.errors),
            "step_rewards": rewards,
            "infos": infos,
            "reward": reward,
            "penalty": penalty,
            "state_after": self._state,
            "done": False,
        }
        capped = {name: len(record[name]) for name in MODEL_TEXT_FIELDS
                  if isinstance(record[name], str) and len(record[name]) > MAX_REPLY_CHARS}
        for name in capped:
            record[name] = record[name][:MAX_REPLY_CHARS]
        if capped:
            record["capped"] = capped  # original lengths: the record and the chat hold only the prefix
        self._turns.append(record)
        self._responses.append(record["response"])
        self.end_reason = self._end_reason(terminated, truncated)
        self.done = record["done"] = self.end_reason is not None
        if executed:  # the picture follows the state to the end (``image``), the text only while it is shown
            self._image = self._picture()
        if not self.done:
            if executed:
                self._observation = observation_text(self.game, config)
            self._turn_texts.append(self._turn_text(reward + penalty, parsed.errors))
            self._turn_images.append(self._image)
        return record

    def _end_reason(self, terminated: bool, truncated: bool) -> str | None:
        if terminated:
            return "success" if self.success else "failure"
        if truncated:
            return "truncated"
        if self.num_actions >= self.config.max_actions_per_episode:
            return "max_actions"
        if len(self._turns) >= self.config.max_turns:
            return "max_turns"
        return None

    def close(self) -> None:
        """Close the env (a ``human`` render window, if any); the record stays available."""
        self.env.close()

    def record(self) -> dict[str, Any]:
        """The JSON-serialisable episode record (one line of a run's ``episodes.jsonl``)."""
        # The registered spec: the outer wrapper's ``spec`` deep-copies it on first use (about 100 us per episode)
        # only to add the wrapper stack, which the record does not hold.
        spec = self.env.unwrapped.spec
        return {
            "env": self.env_name,
            "env_id": spec.id if spec is not None else self.env_name,
            "env_config": self.env_config,
            "seed": self.seed,
            "level_seed": self.level_seed,
            "protocol": self.config.to_dict(),
            "certificate": self.certificate,
            "turns": list(self._turns),
            "success": self.success,
            "total_reward": self.total_reward,
            "num_turns": len(self._turns),
            "num_actions": self.num_actions,
            "end_reason": self.end_reason,
        }
