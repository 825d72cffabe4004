"""The games as a TRL ``environment_factory`` environment: the model plays by calling a tool.

TRL's ``GRPOTrainer(environment_factory=...)`` (TRL >= 1.16, transformers >= 5.2) takes a zero-argument
callable that builds an environment object. Per rollout, TRL calls its ``reset(**row)`` with the dataset
row's fields (a returned string is appended to the last user message), exposes its public methods as tools
in the prompt (their names, type hints and docstrings become the tool schema), runs every tool call the
model makes, and scores the finished rollout with its ``get_reward()``. :class:`GameToolEnv` follows that
contract over one :class:`ragen_envs.text.TextEpisode`:

- ``reset(ragen_seed=...)`` opens the level of that seed and returns the episode's first user message
  (rules, state, budget), with tool instructions in place of the ``<answer>`` format;
- ``act(actions)`` is the one tool: a call plays one turn with those action names, sent to the episode as
  the well-formed reply :func:`ragen_envs.text.parser.format_reply` writes, and returns the next user
  message (reward, state, budget left) or the final result;
- ``get_reward()`` is the episode's ``total_reward``. A rollout that stops calling ``act`` before the
  episode ends has the turns it left unplayed scored as empty replies (format errors, each with the
  protocol's penalty), as the text protocol scores a player who stops answering.

So a tool call earns exactly what the same actions earn as a reply in process. The text-protocol path,
where the model writes ``<think>..</think><answer>..</answer>`` replies, is
:class:`ragen_train.trl_env.GameRollout` (``rollout_func``). Tool calling needs a chat template that renders
tools and tool calls, and one TRL can parse replies with (Qwen2.5/Qwen3, Llama 3.1, ...; see
:func:`trl.chat_template_utils.add_response_schema`). See docs/integrations.md and
examples/trl_tools_bandit.py.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from functools import partial
from typing import Any

from ragen_envs.config_dicts import coerce_config
from ragen_envs.seeding import as_seed
from ragen_envs.text import ProtocolConfig, TextEpisode
from ragen_envs.text.parser import format_reply

#: Dataset column holding each rollout's level seed; TRL passes it to ``reset``.
SEED_COLUMN = "ragen_seed"

#: The protocol's answer-format text and per-turn hint, rewritten for play by tool calls. A caller's
#: ``protocol`` overrides these like any other field.
_TOOL_FORMAT = ("Play by calling the tool `act` with a list of action names, in order (at most "
                "{max_actions_per_turn} per call). Each call is one turn.")
TOOL_PROTOCOL: dict[str, str] = {
    "format_think": _TOOL_FORMAT,
    "format_no_think": _TOOL_FORMAT,
    "turn_template": ("Turn {turn} of {max_turns} ({turns_left} left, this one included). State:\n{observation}\n"
                      "Actions left in the episode: {actions_left} (up to {turn_actions} this turn). "
                      "Valid actions: {actions}.\nCall act."),
}


def tool_protocol(protocol: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """:data:`TOOL_PROTOCOL` under the caller's protocol fields (theirs win)."""
    return {**TOOL_PROTOCOL, **dict(protocol or {})}


def tool_dataset(seeds: Sequence[int], protocol: Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
    """Dataset rows (``datasets.Dataset.from_list``), one per seed: the protocol's system message and an
    empty user turn, which ``reset`` fills with the episode's first message; the seed in :data:`SEED_COLUMN`."""
    system = coerce_config(ProtocolConfig, tool_protocol(protocol)).system_prompt
    return [{"prompt": [{"role": "system", "content": system}, {"role": "user", "content": ""}],
             SEED_COLUMN: as_seed(seed)} for seed in seeds]


def with_tool_template(tokenizer: Any) -> Any:
    """``tokenizer`` (ChatML, as :mod:`ragen_train.tiny` builds them) with Qwen2.5's chat template, which
    renders tools and tool calls and whose replies TRL parses; returned for chaining.

    A real tool-calling checkpoint (Qwen2.5/Qwen3 Instruct, Llama 3.1, ...) brings its own template and
    needs none of this.
    """
    from trl.chat_template_utils import qwen2_5_chat_template

    tokenizer.chat_template = qwen2_5_chat_template
    return tokenizer


class GameToolEnv:
    """One ragen episode per rollout, played by tool calls: ``environment_factory=GameToolEnv.factory("bandit")``.

    ``env``, ``protocol`` and ``env_config`` are those of :class:`ragen_envs.text.TextEpisode`; the protocol
    starts from :data:`TOOL_PROTOCOL`. TRL exposes every public method except ``reset`` and ``get_reward`` as a
    tool, so this class has exactly one (``act``); what the caller reads besides (``episode``, ``record``)
    are properties.
    """

    def __init__(self, env: str = "bandit", protocol: Mapping[str, Any] | None = None,
                 env_config: Mapping[str, Any] | None = None) -> None:
        self._env = env
        self._protocol = tool_protocol(protocol)
        self._env_config = None if env_config is None else dict(env_config)
        # Fail on a bad env, protocol or config when TRL probes the factory, not at the first rollout.
        TextEpisode(env, 0, self._protocol, self._env_config).close()
        self._episode: TextEpisode | None = None

    @classmethod
    def factory(cls, env: str, protocol: Mapping[str, Any] | None = None,
                env_config: Mapping[str, Any] | None = None) -> Callable[[], GameToolEnv]:
        """The zero-argument callable TRL's ``environment_factory`` takes; checks the settings once, now."""
        cls(env, protocol, env_config)
        return partial(cls, env, protocol, env_config)

    @property
    def episode(self) -> TextEpisode:
        """The episode of the current rollout."""
        if self._episode is None:
            raise RuntimeError("no episode yet: TRL calls reset() at the start of every rollout")
        return self._episode

    @property
    def record(self) -> dict[str, Any]:
        """The episode record (docs/protocol.md), as ``ragen-eval`` writes it."""
        return self.episode.record()

    def reset(self, ragen_seed: int | None = None, **row: Any) -> str:
        """Open the level of ``ragen_seed`` (the dataset's :data:`SEED_COLUMN`); return the first user message."""
        if ragen_seed is None:
            raise ValueError(f"each dataset row needs a {SEED_COLUMN!r} column (the level seed); build the dataset "
                             "with ragen_train.trl_tools.tool_dataset(seeds)")
        if self._episode is not None:
            self._episode.close()
        self._episode = TextEpisode(self._env, as_seed(ragen_seed), self._protocol, self._env_config)
        return self._episode.messages[-1]["content"]

    def act(self, actions: list[str]) -> str:
        """Carry out actions in the game, in order; one call is one turn.

        Args:
            actions: Action names exactly as the game lists them, for example ["Up", "Left"].

        Returns:
            The game's answer: the turn's reward and the new state, or how the episode ended.
        """
        episode = self.episode
        if episode.done:
            raise ValueError(f"the episode is over ({episode.end_reason}); no more actions are taken")
        names = [actions] if isinstance(actions, str) else [str(a) for a in actions]
        config = episode.config
        episode.step(format_reply(names, config.action_separator, thought="" if config.think else None))
        if episode.done:
            return (f"The episode is over ({episode.end_reason}). Total reward: {episode.total_reward:g}. "
                    "Do not call act again.")
        return episode.messages[-1]["content"]

    def get_reward(self) -> float:
        """The episode's total reward; turns left unplayed are scored as empty replies first."""
        episode = self.episode
        while not episode.done:
            episode.step("")
        return float(episode.total_reward)
