"""The games as a verifiers (0.4, ``verifiers.v1``) taskset and multi-turn environment.

A :class:`GameTaskset` yields one task per level: the levels of a named split, in the order
``ragen_envs.split_seeds`` walks them, so ``vf-eval ... -n 64`` plays the levels that
``ragen-eval --episodes 64`` plays. A task's prompt is the episode's opening chat (system prompt and
first user message of :class:`ragen_envs.text.TextEpisode`).

:class:`GameEnv` plays a task as verifiers' textarena environment plays its games: the game is the
user. It opens the agent's interaction with the task's prompt, hands each reply to
``TextEpisode.step`` and sends the episode's next user message back, until the episode ends. Parsing,
rewards, the format penalty and the end of the episode are the episode's; the adapter only moves text
between the two. The trace gets the reward ``ragen_reward`` (the episode's ``total_reward``), the
metrics ``success``, ``format_errors`` (turns whose reply broke the format), ``num_turns`` and
``num_actions``, and the whole episode record in ``trace.info["ragen_record"]``.

The agent's default harness is verifiers' ``null`` harness (a plain chat loop, no tools) in the
``subprocess`` runtime: the games need neither a sandbox nor a shell. See docs/integrations.md.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator, Mapping
from typing import Any, Literal

import verifiers.v1 as vf
from pydantic import Field, model_validator
from verifiers.v1.types import AssistantMessage

from ragen_envs.splits import SPLIT_OFFSETS, SPLIT_SIZE, LevelSplitter
from ragen_envs.text import TextEpisode

#: The taskset id verifiers imports this package by (``vf-eval ragen_verifiers``).
TASKSET_ID = __name__.split(".")[0]


def _episode(env: str, seed: int, protocol: Mapping[str, Any], env_config: Mapping[str, Any]) -> TextEpisode:
    """The episode of one level; a protocol that shows the model less than the whole chat, or pictures, is
    refused."""
    episode = TextEpisode(env, seed, config=dict(protocol), env_config=dict(env_config))
    if episode.config.context != "full":
        # A verifiers interaction only appends to the chat, so it cannot drop past turns.
        raise ValueError(f"protocol context must be 'full' for verifiers, got {episode.config.context!r}")
    if not all(isinstance(message["content"], str) for message in episode.messages):
        # A task's prompt is text: image observations (visual_* presets, observation=image) would pass the
        # config and fail on the first task.
        raise ValueError(f"{env} shows the model pictures; the verifiers tasks are text: use a text preset or "
                         "observation=text")
    return episode


class GameTaskData(vf.TaskData):
    """One level: what :class:`GameEnv` rebuilds the episode from."""

    env: str
    """Preset name or registered id."""
    seed: int
    """The level's seed (``env.reset(seed=...)``)."""
    protocol: dict[str, Any] = {}
    """``ProtocolConfig`` fields that differ from the defaults."""
    env_config: dict[str, Any] = {}
    """Game config overrides on top of the preset's."""


class GameTask(vf.Task[GameTaskData, vf.State, vf.TaskConfig]):
    """A level to play; scoring is recorded by :class:`GameEnv` from the episode."""


class GameTasksetConfig(vf.TasksetConfig):
    """Which levels, under ``--env.taskset.*``."""

    env: str = "sokoban"
    """Preset name or registered id (``ragen-eval ls`` lists them)."""
    split: Literal["train", "val", "test"] = "test"
    """Named seed split, as ``ragen-eval --split``."""
    seed_start: int = Field(0, ge=0, lt=SPLIT_SIZE)
    """Index in the split's seed range where the walk starts, as ``ragen-eval --seed-start``."""
    protocol: dict[str, Any] = {}
    """``ProtocolConfig`` fields, as ``ragen-eval --protocol``; ``context`` must stay ``full``."""
    env_config: dict[str, Any] = {}
    """Game config overrides, as ``ragen-eval --env-config``."""

    @model_validator(mode="after")
    def _plays(self) -> GameTasksetConfig:
        """Fail on a bad env, protocol or game config here, before any task is built."""
        _episode(self.env, SPLIT_OFFSETS[self.split] + self.seed_start, self.protocol, self.env_config).close()
        return self


class GameTaskset(vf.Taskset[GameTask, GameTasksetConfig]):
    """The levels of one split, without end: bound a run with ``-n`` (``num_tasks``)."""

    INFINITE = True

    def load(self) -> Iterator[GameTask]:
        """One task per level of the split, the first ones first (``split_seeds``' order)."""
        config = self.config
        splitter = LevelSplitter(config.env, config.env_config)
        start = config.seed_start
        while True:
            (seed,) = splitter.seeds(config.split, 1, start)
            start = seed - SPLIT_OFFSETS[config.split] + 1
            episode = _episode(config.env, seed, config.protocol, config.env_config)
            system, user = episode.messages
            episode.close()
            data = GameTaskData(name=f"{config.env}:{seed}", prompt=user["content"], system_prompt=system["content"],
                                env=config.env, seed=seed, protocol=config.protocol, env_config=config.env_config)
            yield GameTask(data, config.task)


class GameEnvConfig(vf.EnvConfig):
    """The one seat, ``agent`` (``--env.agent.*``): a plain chat loop on the local machine by default."""

    # network_notice off: the runtime's network rules would be added to the prompt, which the protocol fixes.
    agent: vf.AgentConfig = vf.AgentConfig(harness={"id": "null"}, runtime={"type": "subprocess"},
                                           network_notice=False)


class GameEnv(vf.Env[GameEnvConfig]):
    """Plays one level: the episode answers each reply with its next user message until it ends."""

    async def run(self, task: GameTask, agents: vf.Agents) -> None:
        """One episode; the reward and record come from the :class:`TextEpisode`."""
        data = task.data
        # Level generation (the Sokoban solver) can take a while; keep the event loop free.
        episode = await asyncio.to_thread(_episode, data.env, data.seed, data.protocol, data.env_config)
        async with agents.agent.interaction(task) as interaction:
            segment = await interaction.turn()
            while not segment.terminated:
                # The raw reply (Segment.last_reply strips it): the episode scores what the model wrote.
                reply = next(m for m in reversed(segment.messages) if isinstance(m, AssistantMessage))
                calls = interaction.trace.calls
                episode.step(reply.content or "", finish_reason=calls[-1].finish_reason if calls else None,
                             reasoning=reply.reasoning_content)
                if episode.done:
                    break
                segment = await interaction.turn(episode.messages[-1]["content"])
        episode.close()
        record = episode.record()
        trace = interaction.trace
        trace.record_reward("ragen_reward", episode.total_reward)
        trace.record_metrics({
            "success": float(episode.success),
            "format_errors": float(sum(not turn["format_ok"] for turn in record["turns"])),
            "num_turns": float(episode.turn),
            "num_actions": float(episode.num_actions),
        })
        trace.info["ragen_record"] = record


def load_environment(env: str = "sokoban", *, split: str = "test", seed_start: int = 0,
                     protocol: Mapping[str, Any] | None = None,
                     env_config: Mapping[str, Any] | None = None) -> GameEnv:
    """A :class:`GameEnv` over the levels of ``env``, through verifiers' own ``vf.load_environment``.

    The arguments are :class:`GameTasksetConfig`'s fields; ``env.taskset`` iterates the tasks.
    """
    taskset = {"id": TASKSET_ID, "env": env, "split": split, "seed_start": seed_start,
               "protocol": dict(protocol or {}), "env_config": dict(env_config or {})}
    return vf.load_environment(vf.resolve_env_config({"taskset": taskset}))
