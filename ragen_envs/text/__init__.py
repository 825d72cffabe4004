"""The text protocol: any ragen game played as a multi-turn chat.

``TextEpisode`` (one game) and ``EpisodeBatch`` (many in lockstep) are what the evaluation harness
and the trainer use; ``parse_response`` reads a reply; ``replay``/``to_markdown``/``save_episode_gif``
turn a finished episode record back into states, a transcript and an animation; ``players`` holds
the scripted oracle and random players. See docs/protocol.md.
"""

from ragen_envs.text.batch import EpisodeBatch
from ragen_envs.text.budgets import RAGEN_BUDGETS, turn_budget
from ragen_envs.text.config import CONTEXT_MODES, ProtocolConfig
from ragen_envs.text.episode import MAX_REPLY_CHARS, TextEpisode, content_text, make_env, message_content
from ragen_envs.text.parser import (
    ERROR_KINDS,
    ParsedResponse,
    action_lookup,
    format_reply,
    normalize_action,
    parse_response,
)
from ragen_envs.text.players import (
    oracle_actions,
    oracle_responses,
    oracle_turn,
    random_actions,
    random_turn,
)
from ragen_envs.text.prompts import render_format, render_intro, render_prompt, render_turn
from ragen_envs.text.transcript import ReplayMismatchError, replay, save_episode_frames, save_episode_gif, to_markdown

__all__ = [
    "CONTEXT_MODES",
    "ERROR_KINDS",
    "MAX_REPLY_CHARS",
    "RAGEN_BUDGETS",
    "EpisodeBatch",
    "ParsedResponse",
    "ProtocolConfig",
    "ReplayMismatchError",
    "TextEpisode",
    "action_lookup",
    "content_text",
    "format_reply",
    "make_env",
    "message_content",
    "normalize_action",
    "oracle_actions",
    "oracle_responses",
    "oracle_turn",
    "parse_response",
    "random_actions",
    "random_turn",
    "render_format",
    "render_intro",
    "render_prompt",
    "render_turn",
    "replay",
    "save_episode_frames",
    "save_episode_gif",
    "to_markdown",
    "turn_budget",
]
