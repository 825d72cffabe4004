"""`ProtocolConfig`: every knob of the text protocol, with RAGEN's protocol as the default.

Budgets left as ``None`` are taken from the game's ``text_defaults`` (Bandit: 1 turn, 1 action) and
otherwise from RAGEN's grid-game budgets: 5 turns, up to 5 actions per turn, 10 actions per episode.
"""

from __future__ import annotations

import copy
import json
import math
import string
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from typing import Any

from ragen_envs.config_dicts import config_from_dict
from ragen_envs.images import IMAGE_STYLES
from ragen_envs.text.budgets import RAGEN_BUDGETS
from ragen_envs.text.prompts import (
    DEFAULT_FEEDBACK_TEMPLATE,
    DEFAULT_FORMAT_NO_THINK,
    DEFAULT_FORMAT_THINK,
    DEFAULT_INTRO_TEMPLATE,
    DEFAULT_REWARD_TEMPLATE,
    DEFAULT_SYSTEM_PROMPT,
    DEFAULT_TURN_TEMPLATE,
    TEMPLATE_FIELDS,
)
from ragen_envs.text_game import OBSERVATION_FORMATS

CONTEXT_MODES = ("full", "last_k", "single")
#: What each turn shows of the state: the state text, a picture of it, or both.
OBSERVATION_MODES = ("text", "image", "both")
_BUDGET_KEYS = tuple(RAGEN_BUDGETS)
#: Fields left at None that ``resolved`` fills in: from the game or preset, else these defaults.
_RESOLVED_DEFAULTS = {**RAGEN_BUDGETS, "observation": "text"}


@dataclass(frozen=True)
class ProtocolConfig:
    """How a game is played as a chat: budgets, penalty, observation format, context and templates."""

    max_turns: int | None = None
    """Turns (model calls) per episode; None: the game's default (RAGEN: 5, Bandit 1)."""
    max_actions_per_turn: int | None = None
    """Actions used from one answer, the rest are dropped and reported; None: game default (RAGEN: 5)."""
    max_actions_per_episode: int | None = None
    """Actions executed over the whole episode; None: game default (RAGEN: 10 for grid games)."""
    format_penalty: float = -0.1
    """Added to a turn whose response breaks the format (RAGEN's ``format_penalty``)."""
    observation_format: str = "grid"
    """``grid``, ``coords`` (each object with its (row, col)) or ``grid+coords``."""
    symbols: Mapping[str, str] | None = None
    """Cell kind -> character overrides passed to the game (a "new vocabulary" evaluation)."""
    coordinate_base: int = 0
    """0 or 1: the first row/column index shown to the model."""
    observation: str | None = None
    """``text`` (the state text), ``image`` (a PNG of the board instead) or ``both``; None: the preset's (text)."""
    image_size: int | None = None
    """Pixels of the image's longer side (nearest-neighbour scaling); None: as the game draws it."""
    image_style: str = "color"
    """``color`` as the game draws its frames, or ``gray`` (luminance)."""
    think: bool = True
    """True: ``<think>...</think><answer>...</answer>`` is required; False: ``<answer>`` alone is enough."""
    context: str = "full"
    """``full`` history, the ``last_k`` turns, or ``single`` (rules + current state only)."""
    context_k: int = 2
    """Past turns kept in ``last_k`` mode."""
    max_response_chars: int | None = None
    """Longer responses are a format error ("too long"); None: no limit."""
    action_separator: str = "||"
    """Separator between actions inside ``<answer>`` (RAGEN's ``action_sep``)."""
    system_prompt: str = DEFAULT_SYSTEM_PROMPT
    """The system message."""
    intro_template: str = DEFAULT_INTRO_TEMPLATE
    """First user message, before the first turn's text; see docs/protocol.md for its fields."""
    turn_template: str = DEFAULT_TURN_TEMPLATE
    """Text of every turn: the state, actions and budgets left."""
    reward_template: str = DEFAULT_REWARD_TEMPLATE
    """Put before a turn's text from turn 2 on; empty string: the reward is not shown."""
    feedback_template: str = DEFAULT_FEEDBACK_TEMPLATE
    """Put before a turn's text after a format error; empty string: no feedback."""
    format_think: str = DEFAULT_FORMAT_THINK
    """Answer-format instructions when ``think`` is True."""
    format_no_think: str = DEFAULT_FORMAT_NO_THINK
    """Answer-format instructions when ``think`` is False."""
    extra: dict[str, Any] = field(default_factory=dict)
    """Free-form notes kept with the config (e.g. the name of a vocabulary); not used by the protocol."""

    def __post_init__(self) -> None:
        for key in _BUDGET_KEYS:
            value = getattr(self, key)
            if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value < 1):
                raise ValueError(f"{key} must be a positive integer or None, got {value!r}")
        if not isinstance(self.format_penalty, (int, float)) or isinstance(self.format_penalty, bool):
            raise TypeError(f"format_penalty must be a number, got {self.format_penalty!r}")
        if not math.isfinite(self.format_penalty):  # a NaN or infinite total reward: no JSON record can hold it
            raise ValueError(f"format_penalty must be a finite number, got {self.format_penalty!r}")
        if self.observation_format not in OBSERVATION_FORMATS:
            raise ValueError(
                f"observation_format must be one of {OBSERVATION_FORMATS}, got {self.observation_format!r}"
            )
        if self.observation is not None and self.observation not in OBSERVATION_MODES:
            raise ValueError(f"observation must be one of {OBSERVATION_MODES}, got {self.observation!r}")
        size = self.image_size
        if size is not None and (not isinstance(size, int) or isinstance(size, bool) or not 8 <= size <= 4096):
            raise ValueError(f"image_size must be an integer in 8..4096 or None, got {self.image_size!r}")
        if self.image_style not in IMAGE_STYLES:
            raise ValueError(f"image_style must be one of {IMAGE_STYLES}, got {self.image_style!r}")
        # A bool is an int to Python and 1.0 == 1, but from_dict refuses both: a record could not be replayed.
        if not _is_int(self.coordinate_base) or self.coordinate_base not in (0, 1):
            raise ValueError(f"coordinate_base must be 0 or 1, got {self.coordinate_base!r}")
        if not isinstance(self.think, bool):  # "no" is truthy: it once turned think mode on
            raise TypeError(f"think must be True or False, got {self.think!r}")
        if self.context not in CONTEXT_MODES:
            raise ValueError(f"context must be one of {CONTEXT_MODES}, got {self.context!r}")
        if not _is_int(self.context_k) or self.context_k < 0:
            raise ValueError(f"context_k must be a non-negative integer, got {self.context_k!r}")
        if self.max_response_chars is not None and (
            not _is_int(self.max_response_chars) or self.max_response_chars < 1
        ):
            raise ValueError(f"max_response_chars must be a positive integer or None, got {self.max_response_chars!r}")
        if not isinstance(self.action_separator, str) or not self.action_separator.strip():
            raise ValueError(f"action_separator must be a non-blank string, got {self.action_separator!r}")
        if self.symbols is not None:
            if not isinstance(self.symbols, Mapping) or not all(
                isinstance(k, str) and isinstance(v, str) for k, v in self.symbols.items()
            ):
                raise TypeError(f"symbols must map strings to strings, got {self.symbols!r}")
            object.__setattr__(self, "symbols", dict(self.symbols))
        for name, allowed in TEMPLATE_FIELDS.items():
            _check_template(name, getattr(self, name), allowed)
        if not isinstance(self.extra, Mapping):
            raise TypeError(f"extra must be a mapping of notes, got {type(self.extra).__name__}")
        try:  # every episode record holds it
            json.dumps(self.extra, allow_nan=False)
        except (TypeError, ValueError) as err:
            raise TypeError(f"extra must hold JSON values only: {err}") from None

    def resolved(self, game_defaults: Mapping[str, Any] | None = None) -> ProtocolConfig:
        """A copy with every budget and the observation mode filled in: this config, then the game's (or
        preset's) defaults, then RAGEN's budgets and ``text``."""
        game_defaults = dict(game_defaults or {})
        unknown = set(game_defaults) - {f.name for f in fields(self)}
        if unknown:
            raise ValueError(f"game text_defaults name unknown ProtocolConfig fields: {sorted(unknown)}")
        updates = {
            key: game_defaults.get(key, default) for key, default in _RESOLVED_DEFAULTS.items()
            if getattr(self, key) is None
        }
        return replace(self, **updates)

    def to_dict(self) -> dict[str, Any]:
        """JSON-friendly form; ``ProtocolConfig.from_dict(c.to_dict()) == c``."""
        # Every episode record holds this dict. asdict's generic recursion took about 40 us a call (a fifth of a
        # served turn's game work); only the mappings need copying, the other fields are immutable values.
        return {f.name: value if isinstance(value := getattr(self, f.name), (str, int, float, bool, type(None)))
                else copy.deepcopy(value) for f in fields(self)}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ProtocolConfig:
        """Build from a dict such as ``to_dict()`` wrote; unknown keys are an error, missing ones default."""
        return config_from_dict(cls, data)


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _check_template(name: str, template: Any, allowed: frozenset[str]) -> None:
    """Reject a template that is not a string or holds anything but bare ``{field}`` placeholders of fields the
    protocol fills in.

    A format spec, conversion, attribute or index is refused: a width (``{turns_left:>20000000}``) renders
    megabytes from a few bytes of config, attributes (``{actions.__class__}``) reach into Python objects, and a
    spec or index that does not fit its value (``{errors:d}``, ``{reward[40]}``) would fail only when a turn,
    already played, renders the next one.
    """
    if not isinstance(template, str):
        raise TypeError(f"{name} must be a string, got {type(template).__name__}")
    try:
        parts = list(string.Formatter().parse(template))
    except ValueError as exc:
        raise ValueError(f"{name} is not a valid format string: {exc}") from None
    for _, field_name, spec, conversion in parts:
        if field_name is None:
            continue
        if spec or conversion or not field_name.isidentifier():
            shown = "{" + field_name + (f"!{conversion}" if conversion else "") + (f":{spec}" if spec else "") + "}"
            raise ValueError(f"{name} may use only bare {{field}} placeholders (no format spec, conversion, "
                             f"attribute or index), got {shown!r:.80}")
        if field_name not in allowed:
            raise ValueError(f"{name} uses unknown field {field_name!r}; allowed: {sorted(allowed)}")
