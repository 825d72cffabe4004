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

With ``detour_turns`` a Sokoban demonstration opens with a detour (:func:`detour_moves`): turns that walk
the player over free floor and back, pushing nothing, kept as history but out of the loss, so the
turns trained on read the board behind longer histories than oracle play alone writes.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from ragen_envs.config_dicts import coerce_config, non_default_fields, require_ints
from ragen_envs.progress import Progress
from ragen_envs.registration import get_preset
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
    detour_turns: int = 0
    """Sokoban only: open each demonstration with up to this many turns (0 to this, drawn per demonstration) of a
    walk over free floor that pushes nothing and returns to the start, kept as history but out of the loss."""
    answer_space: bool = False
    """Write every answer after a space (``<answer> Tiger</answer>``), so an action's name is spelled in the tokens
    it has in the prompt and the thought, where it follows a space; the parser reads the same actions."""

    def __post_init__(self) -> None:
        if self.mode not in DEMO_MODES:
            raise ValueError(f"mode must be one of {DEMO_MODES}, got {self.mode!r}")
        if self.thought not in THOUGHT_STYLES:
            raise ValueError(f"thought must be one of {THOUGHT_STYLES}, got {self.thought!r}")
        # a misspelt game, game field or protocol field fails here, before any run directory is made
        check_game_settings(self.env, self.env_config, self.protocol)
        object.__setattr__(self, "protocol", coerce_config(ProtocolConfig, self.protocol))  # checked just above
        require_ints(self, ("num_episodes",))
        require_ints(self, ("seed", "detour_turns"), minimum=0)
        if not isinstance(self.answer_space, bool):
            raise ValueError(f"answer_space must be true or false, got {self.answer_space!r}")
        # A demonstration is one growing chat, as ragen-eval feeds the model only with the full history.
        if self.protocol.context != "full":
            raise ValueError(f"protocol.context must be 'full' for demonstrations (each is one growing chat, as "
                             f"training builds it), got {self.protocol.context!r}")
        # the game is known by its state (docs/interfaces.md), so one level is drawn to ask
        if self.detour_turns and TextEpisode(self.env, 0, None, self.env_config or None).game.state_dict().get(
                "game") != "sokoban":
            raise ValueError(f"detour_turns is for Sokoban games; {self.env!r} is not one")

    def to_dict(self) -> dict[str, Any]:
        """JSON-friendly form (``protocol``: the fields that differ from the defaults; ``detour_turns`` and
        ``answer_space`` only when set, so the config of a run without them reads as it did before they existed, and
        it still resumes)."""
        values = {**asdict(self), "protocol": non_default_fields(self.protocol)}
        for name in ("detour_turns", "answer_space"):
            if not values[name]:
                del values[name]
        return values

    @property
    def observation(self) -> str:
        """What the demonstrations show the model: the protocol's ``observation``, else the preset's, else text."""
        try:
            preset = get_preset(self.env).protocol.get("observation")
        except ValueError:  # a Gymnasium id registered outside the presets: text, as TextEpisode plays it
            preset = None
        return self.protocol.observation or preset or "text"


@dataclass
class Demo:
    """One played demonstration: the full chat (system, user, assistant, ...) and the episode record."""

    messages: list[dict[str, str]]
    record: dict[str, Any]

    @property
    def context_turns(self) -> int:
        """How many of the first replies are a detour (history, out of the loss): the record's ``detour_turns``."""
        return int(self.record.get("detour_turns", 0))


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
    rng = np.random.default_rng([config.seed, index])
    detour = detour_moves(episode, int(rng.integers(0, config.detour_turns + 1)), rng) if config.detour_turns else []
    for actions in detour:
        episode.step(render_response(episode, actions, config.thought, config.answer_space))
    play_episode(episode, config.mode, rng, config.thought, config.answer_space)
    if config.successful_only and not episode.success:
        return None
    record = episode.record() | ({"detour_turns": len(detour)} if config.detour_turns else {})
    return Demo(messages=episode.history, record=record)


#: Sokoban's moves, their (row, column) steps and the move that undoes each.
_STEPS = {"Up": (-1, 0), "Down": (1, 0), "Left": (0, -1), "Right": (0, 1)}
_BACK = {"Up": "Down", "Down": "Up", "Left": "Right", "Right": "Left"}


def detour_moves(episode: TextEpisode, turns: int, rng: np.random.Generator) -> list[list[str]]:
    """A walk over free floor from the player's cell and back, pushing nothing, as ``turns`` turns of 1 to the
    protocol's per-turn budget moves each (fewer turns where the budget is short or the player is boxed in; ``[]``
    for none).

    The walk's length and its split into turns are drawn from ``rng``; it spends at most half of the episode's action
    budget and leaves one turn at least, so the oracle plays on from the start position, where the level's
    certificate still holds.
    """
    config, state = episode.config, episode.game.state_dict()
    per_turn = config.max_actions_per_turn
    turns = min(turns, config.max_turns - episode.turn - 1)  # cut first: the walk must fit the turns it gets
    most = min(turns * per_turn, episode.actions_left // 2) // 2 * 2  # moves, out and back: an even count
    turns = min(turns, most)  # each turn sends one move at least
    if turns < 1:
        return []
    blocked = {tuple(cell) for cell in state["walls"]} | {tuple(cell) for cell in state["boxes"]}
    row, col = state["player"]
    out: list[str] = []
    for _ in range(int(rng.integers(max(1, (turns + 1) // 2), most // 2 + 1))):
        free = [m for m, (dr, dc) in _STEPS.items() if (row + dr, col + dc) not in blocked]
        if not free:
            break
        move = free[int(rng.integers(len(free)))]
        out.append(move)
        row, col = row + _STEPS[move][0], col + _STEPS[move][1]
    walk = out + [_BACK[m] for m in reversed(out)]
    turns = min(turns, len(walk))
    counts = [1] * turns  # each turn sends one move at least; the rest go to turns with room, one at a time
    for _ in range(len(walk) - turns):
        open_turns = [k for k, n in enumerate(counts) if n < per_turn]
        counts[open_turns[int(rng.integers(len(open_turns)))]] += 1
    cuts = np.cumsum([0, *counts])
    return [walk[a:b] for a, b in zip(cuts[:-1], cuts[1:])]


def play_episode(episode: TextEpisode, mode: str, rng: np.random.Generator, thought: str = "describe",
                 answer_space: bool = False) -> None:
    """Play ``episode`` to the end with the ``oracle`` or ``format`` player, in place (replies by
    :func:`render_response`)."""
    if mode not in DEMO_MODES:
        raise ValueError(f"mode must be one of {DEMO_MODES}, got {mode!r}")
    while not episode.done:
        actions = oracle_actions(episode) if mode == "oracle" else random_actions(episode, rng)
        episode.step(render_response(episode, actions, thought, answer_space))


def render_response(episode: TextEpisode, actions: Sequence[str], thought: str = "describe",
                    answer_space: bool = False) -> str:
    """The templated reply: a thought (see :data:`THOUGHT_STYLES`), then the answer (after a space with
    ``answer_space``, see :attr:`DemoConfig.answer_space`)."""
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
    reply = format_reply(actions, config.action_separator, text)
    if not answer_space:
        return reply
    head, tag, answer = reply.rpartition("<answer>")
    return f"{head}{tag} {answer}"


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
