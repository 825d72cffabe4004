"""Prompt templates and the functions that fill them in for any :class:`~ragen_envs.text_game.TextGame`.

The layout follows RAGEN's protocol (a system message; a first user message with the rules, the
legend, the action names, the answer format and the budget; then one user message per turn with the
state, the actions and budget left, and the reward of the last turn). The wording is our own and
every template is a field of :class:`~ragen_envs.text.config.ProtocolConfig`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from ragen_envs.text.budgets import turn_budget
from ragen_envs.text_game import TextGame

if TYPE_CHECKING:
    from ragen_envs.text.config import ProtocolConfig

DEFAULT_SYSTEM_PROMPT = (
    "You are an agent playing a turn-based text game. Read the rules and the state, reason about "
    "what your moves will do, and choose moves that earn as much reward as possible."
)

DEFAULT_INTRO_TEMPLATE = """{rules}

How to read the state:
{legend}

Valid actions: {actions}.

{format}

Budget: at most {max_turns} turn(s). Each turn you may send up to {max_actions_per_turn} action(s); \
further ones are ignored. At most {max_actions_per_episode} action(s) are carried out in the whole \
episode. Actions are applied in order and stop as soon as the game ends."""

DEFAULT_TURN_TEMPLATE = """Turn {turn} of {max_turns} ({turns_left} left, this one included). State:
{observation}
Actions left in the episode: {actions_left} (up to {turn_actions} this turn). Valid actions: {actions}.
{format_hint}"""

DEFAULT_REWARD_TEMPLATE = "Reward from your last turn: {reward}."

DEFAULT_FEEDBACK_TEMPLATE = "Your last reply could not be used ({errors}), so no action was taken."

DEFAULT_FORMAT_THINK = (
    "Reply with your reasoning inside <think></think>, then your action(s) inside <answer></answer>, "
    'separated by "{separator}". Example: <think>short reasoning here</think><answer>{example}</answer>. '
    "Write nothing after </answer>. A reply in any other shape is a format error: no action is taken "
    "and the turn is penalised."
)

DEFAULT_FORMAT_NO_THINK = (
    'Reply with your action(s) inside <answer></answer>, separated by "{separator}". '
    "Example: <answer>{example}</answer>. A reply in any other shape is a format error: no action is "
    "taken and the turn is penalised."
)

_FORMAT_FIELDS = frozenset({"separator", "example", "actions", "max_actions_per_turn"})
_BUDGET_FIELDS = frozenset({"max_turns", "max_actions_per_turn", "max_actions_per_episode"})

#: Template field name -> the placeholders it may use (checked when a ProtocolConfig is built).
TEMPLATE_FIELDS: dict[str, frozenset[str]] = {
    "system_prompt": frozenset(),
    "intro_template": frozenset({"rules", "legend", "actions", "format", "separator"}) | _BUDGET_FIELDS,
    "turn_template": frozenset(
        {"turn", "turns_left", "observation", "actions", "actions_left", "turn_actions", "format_hint"}
    )
    | _BUDGET_FIELDS,
    "reward_template": frozenset({"reward"}),
    "feedback_template": frozenset({"errors"}),
    "format_think": _FORMAT_FIELDS,
    "format_no_think": _FORMAT_FIELDS,
}


def format_number(value: float) -> str:
    """A reward as the model sees it: at most 4 decimals, no trailing zeros (``0.9``, ``-0.1``, ``10``)."""
    return f"{round(float(value), 4):g}"


def _resolved(game: TextGame, config: ProtocolConfig) -> ProtocolConfig:
    if None in (config.max_turns, config.max_actions_per_turn, config.max_actions_per_episode):
        return config.resolved(game.text_defaults)
    return config


def _action_list(game: TextGame) -> str:
    # A game with too many actions to list (Sudoku's placements) describes them with actions_text().
    describe = getattr(game, "actions_text", None)
    return describe() if describe is not None else ", ".join(game.action_names)


def _example_answer(names: Sequence[str], config: ProtocolConfig) -> str:
    count = max(1, min(2, config.max_actions_per_turn or 1, len(names)))
    return f" {config.action_separator} ".join(names[:count])


def observation_text(game: TextGame, config: ProtocolConfig) -> str:
    """The game's current state in the configured observation format and symbol vocabulary."""
    return game.observation_text(config.observation_format, config.symbols, config.coordinate_base)


def render_format(game: TextGame, config: ProtocolConfig) -> str:
    """The answer-format instructions (think or no-think variant) for this game's actions."""
    config = _resolved(game, config)
    template = config.format_think if config.think else config.format_no_think
    return template.format(
        separator=config.action_separator,
        example=_example_answer(game.action_names, config),
        actions=_action_list(game),
        max_actions_per_turn=config.max_actions_per_turn,
    )


def format_hint(config: ProtocolConfig) -> str:
    """The one-line reminder of the answer shape put at the end of every turn."""
    if config.think:
        return "Answer as <think>...</think><answer>...</answer>."
    return "Answer as <answer>...</answer>."


def _legend(game: TextGame, config: ProtocolConfig) -> str:
    """The game's legend, and in image and both modes its description of the picture (``image_legend``)."""
    legend = game.legend_text(config.symbols, config.coordinate_base)
    picture = getattr(game, "image_legend", "")  # optional: a game without pictures has none
    if config.observation in ("image", "both") and picture:
        return f"{legend}\n{picture}"
    return legend


def render_intro(game: TextGame, config: ProtocolConfig) -> str:
    """The rules, legend, actions, answer format and budget: the start of the first user message."""
    config = _resolved(game, config)
    return config.intro_template.format(
        rules=game.rules_text(),
        legend=_legend(game, config),
        actions=_action_list(game),
        format=render_format(game, config),
        separator=config.action_separator,
        max_turns=config.max_turns,
        max_actions_per_turn=config.max_actions_per_turn,
        max_actions_per_episode=config.max_actions_per_episode,
    )


def render_prompt(game: TextGame, config: ProtocolConfig) -> list[dict[str, str]]:
    """The system message and the first user message's introduction (without the first state)."""
    return [
        {"role": "system", "content": config.system_prompt},
        {"role": "user", "content": render_intro(game, config)},
    ]


def render_turn(
    game: TextGame,
    config: ProtocolConfig,
    *,
    turn: int,
    actions_left: int,
    last_reward: float | None = None,
    last_errors: Sequence[str] = (),
    observation: str | None = None,
) -> str:
    """The user text for turn ``turn`` (1-based): last reward and format feedback, state, budget left.

    ``last_reward`` is None on the first turn (no reward line); ``last_errors`` are the format errors
    of the previous turn, shown through ``feedback_template`` when non-empty. ``observation`` is the
    state text when the caller has it already (otherwise the game renders it).
    """
    config = _resolved(game, config)
    if turn < 1 or turn > config.max_turns:
        raise ValueError(f"turn must be in 1..{config.max_turns}, got {turn}")
    parts = []
    if last_errors and config.feedback_template:
        parts.append(config.feedback_template.format(errors="; ".join(last_errors)))
    if last_reward is not None and config.reward_template:
        parts.append(config.reward_template.format(reward=format_number(last_reward)))
    parts.append(
        config.turn_template.format(
            turn=turn,
            turns_left=config.max_turns - turn + 1,
            max_turns=config.max_turns,
            max_actions_per_turn=config.max_actions_per_turn,
            max_actions_per_episode=config.max_actions_per_episode,
            observation=observation if observation is not None else observation_text(game, config),
            actions=_action_list(game),
            actions_left=actions_left,
            turn_actions=turn_budget(config.max_actions_per_turn, actions_left),
            format_hint=format_hint(config),
        )
    )
    return "\n".join(parts)
