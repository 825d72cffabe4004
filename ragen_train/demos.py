"""Demonstration episodes for the SFT warm start, played through the text protocol.

Each demonstration is a real :class:`~ragen_envs.text.TextEpisode`: the responses are written by a
scripted player in the protocol's ``<think>...</think><answer>...</answer>`` format, with a
templated thought (:data:`THOUGHT_STYLES`), and the environment judges them exactly as it
judges a model. Two players:

- ``oracle``: :func:`ragen_envs.text.players.oracle_actions`, the same player as the harness's
  ``oracle`` agent (so the SFT warm start imitates the leaderboard's oracle row).
- ``format``: :func:`ragen_envs.text.players.random_actions`, uniformly random valid actions, so a
  model from scratch learns the format, the action names and the turn structure without being
  handed the policy.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from ragen_envs.config_dicts import coerce_config, non_default_fields, require_ints
from ragen_envs.progress import Progress
from ragen_envs.splits import SPLIT_OFFSETS, SPLIT_SIZE, LevelSplitter
from ragen_envs.text import ProtocolConfig, TextEpisode, format_reply, oracle_actions, random_actions

from ragen_train.game_settings import check_game_settings
from ragen_train.thoughts import templated_thought

DEMO_MODES = ("oracle", "format")
#: ``describe``: a templated sentence naming the positions the model sees; ``templated``: a short
#: reasoning of true, checkable claims (where things are, how the goal lies, what the moves will do;
#: :mod:`ragen_train.thoughts`); ``grounded``: ``templated`` without what the moves will do, so every claim
#: is about the board the prompt shows; ``none``: an empty ``<think></think>`` (the protocol's format, with
#: the answer as the only thing to learn).
THOUGHT_STYLES = ("describe", "templated", "grounded", "none")


@dataclass(frozen=True)
class DemoConfig:
    """Which demonstrations to play: the game, the player, how many and from which seeds."""

    env: str = "bandit"
    """Preset name or Gymnasium id of the game (``bandit``, ``frozenlake``, ``simple_sokoban``, ...)."""
    mode: str = "format"
    """``oracle`` (certificate/planner play) or ``format`` (random valid actions)."""
    num_episodes: int = 256
    """Episodes to play."""
    seed: int = 0
    """Seed of the demo set: picks the level seeds and the format player's random actions."""
    successful_only: bool = False
    """Keep only episodes that end in success (sensible for ``oracle`` on games with slipping)."""
    protocol: ProtocolConfig = field(default_factory=ProtocolConfig)
    """The text protocol (a dict of ``ProtocolConfig`` fields is read into one); default: RAGEN's."""
    env_config: dict[str, Any] = field(default_factory=dict)
    """Game config fields overriding the preset's."""
    thought: str = "describe"
    """What goes inside ``<think>`` when the protocol asks for it; one of :data:`THOUGHT_STYLES`."""

    def __post_init__(self) -> None:
        if self.mode not in DEMO_MODES:
            raise ValueError(f"mode must be one of {DEMO_MODES}, got {self.mode!r}")
        if self.thought not in THOUGHT_STYLES:
            raise ValueError(f"thought must be one of {THOUGHT_STYLES}, got {self.thought!r}")
        # a misspelt game, game field or protocol field fails here, before any run directory is made
        check_game_settings(self.env, self.env_config, self.protocol)
        object.__setattr__(self, "protocol", coerce_config(ProtocolConfig, self.protocol))  # checked just above
        require_ints(self, ("num_episodes",))
        require_ints(self, ("seed",), minimum=0)

    def to_dict(self) -> dict[str, Any]:
        """JSON-friendly form (``protocol``: the fields that differ from the defaults)."""
        return {**asdict(self), "protocol": non_default_fields(self.protocol)}


@dataclass
class Demo:
    """One played demonstration: the full chat (system, user, assistant, ...) and the episode record."""

    messages: list[dict[str, str]]
    record: dict[str, Any]


def play_demos(config: DemoConfig) -> list[Demo]:
    """Play ``config.num_episodes`` demonstrations (fewer kept if ``successful_only`` drops some).

    Level seeds are drawn from ``np.random.default_rng(config.seed)`` in the train split's range,
    so a demo set never shares levels with the val/test splits of ``ragen_envs.splits``.
    """
    return list(iter_demos(config))


def iter_demos(config: DemoConfig) -> Iterator[Demo]:
    """Generator form of :func:`play_demos`."""
    seeds = level_seeds(config)
    for index, level_seed in enumerate(seeds):
        demo = play_demo(config, index, level_seed)
        if demo is not None:
            yield demo


def level_seeds(config: DemoConfig) -> list[int]:
    """The level seeds of ``config``'s demonstrations, in play order: distinct seeds of the train
    split (by range and by level content, see :mod:`ragen_envs.splits`) drawn from ``config.seed``."""
    splitter = LevelSplitter(config.env, config.env_config or None)
    rng = np.random.default_rng(config.seed)
    seeds: list[int] = []
    seen: set[int] = set()
    # a level's split is known only once it is generated: minutes for tens of thousands of 10x10 rooms
    with Progress(f"train-split level seeds of {config.env}", config.num_episodes) as progress:
        while len(seeds) < config.num_episodes:
            # about 80% of levels are train levels; draw a little more than what is missing
            for seed in rng.integers(0, SPLIT_SIZE, size=config.num_episodes - len(seeds) + 16):
                seed = SPLIT_OFFSETS["train"] + int(seed)
                if seed not in seen and len(seeds) < config.num_episodes and splitter.belongs("train", seed):
                    seeds.append(seed)
                    progress.advance()
                seen.add(seed)
    return seeds


def play_demo(config: DemoConfig, index: int, level_seed: int) -> Demo | None:
    """Play demonstration ``index`` of ``config`` on ``level_seed``; None when ``successful_only`` drops it.

    The format player's actions come from a generator seeded by ``(config.seed, index)``, so any
    demonstration can be replayed alone (a resumed SFT run regenerates its data from the index).
    """
    episode = TextEpisode(config.env, level_seed, config.protocol, config.env_config or None)
    play_episode(episode, config.mode, np.random.default_rng([config.seed, index]), config.thought)
    if config.successful_only and not episode.success:
        return None
    return Demo(messages=episode.history, record=episode.record())


def play_episode(episode: TextEpisode, mode: str, rng: np.random.Generator, thought: str = "describe") -> None:
    """Play ``episode`` to the end with the ``oracle`` or ``format`` player, in place."""
    if mode not in DEMO_MODES:
        raise ValueError(f"mode must be one of {DEMO_MODES}, got {mode!r}")
    while not episode.done:
        actions = oracle_actions(episode) if mode == "oracle" else random_actions(episode, rng)
        episode.step(render_response(episode, actions, thought))


def render_response(episode: TextEpisode, actions: Sequence[str], thought: str = "describe") -> str:
    """The templated reply: a thought (see :data:`THOUGHT_STYLES`), then the answer."""
    config = episode.config
    if not config.think:
        text = None
    elif thought == "none":
        text = ""
    elif thought in ("templated", "grounded"):
        text = templated_thought(episode.game.state_dict(), actions, config.coordinate_base,
                                 outcome=thought == "templated")
    else:
        text = f"{describe_state(episode)} I will go {', '.join(actions)}."
    return format_reply(actions, config.action_separator, text)


def describe_state(episode: TextEpisode) -> str:
    """One templated sentence naming what the observation shows (positions in the prompt's coordinates)."""
    state = episode.game.state_dict()
    base = episode.config.coordinate_base

    def at(cell: Sequence[int]) -> str:
        return f"({cell[0] + base}, {cell[1] + base})"

    game = state.get("game")
    if game == "sokoban":
        boxes = ", ".join(at(b) for b in state["boxes"])
        targets = ", ".join(at(t) for t in state["targets"])
        return f"I am at {at(state['player'])}, the box is at {boxes} and the target at {targets}."
    if game == "frozenlake":
        return f"I am at {at(state['player'])} and the goal is at {at(state['goal'])}."
    if game == "bandit":
        return f"The arms are {' and '.join(arm['name'] for arm in state['arms'])}."
    raise ValueError(f"no state description for game {game!r}")
