"""Episode records after the fact: deterministic replay, a Markdown transcript and an animated GIF."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from ragen_envs.images import image_digest
from ragen_envs.text.config import ProtocolConfig
from ragen_envs.text.episode import TextEpisode, make_env
from ragen_envs.text.jsonable import to_jsonable
from ragen_envs.text.prompts import format_number

#: Turn-record fields a replay must reproduce exactly.
REPLAYED_FIELDS = (
    "state_before",
    "observation",
    "actions_parsed",
    "actions_executed",
    "format_ok",
    "step_rewards",
    "state_after",
    "done",
)


class ReplayMismatchError(ValueError):
    """A replay diverged from its record (different game version, config or non-determinism)."""


def replay(record: Mapping[str, Any], *, check: bool = True, render_mode: str | None = None) -> TextEpisode:
    """Rebuild an episode from its record by replaying its seed and responses.

    With ``check`` (the default) every field in :data:`REPLAYED_FIELDS` of every turn, and the end
    reason, must match the record, else :class:`ReplayMismatchError` names the first difference.
    """
    if not isinstance(record, Mapping):
        raise TypeError(f"record must be a mapping (one line of episodes.jsonl), got {type(record).__name__}")
    missing = [key for key in ("env", "seed", "protocol", "turns") if key not in record]
    if missing:
        raise ValueError(f"episode record lacks {missing}")
    episode = TextEpisode(
        record["env"],
        record["seed"],
        ProtocolConfig.from_dict(record["protocol"]),
        record.get("env_config"),
        render_mode=render_mode,
    )
    for turn in record["turns"]:
        if episode.done:
            raise ReplayMismatchError(f"replay ended after turn {episode.turn} but the record has more turns")
        replayed = episode.step(turn["response"], turn.get("finish_reason"), turn.get("reasoning"))
        if check:
            for key in REPLAYED_FIELDS:
                if key in turn and replayed[key] != turn[key]:
                    raise ReplayMismatchError(
                        f"turn {turn['turn']}: {key} differs; recorded {turn[key]!r:.200}, "
                        f"replayed {replayed[key]!r:.200}"
                    )
    if check and "end_reason" in record and episode.end_reason != record["end_reason"]:
        raise ReplayMismatchError(
            f"end_reason differs: recorded {record['end_reason']!r}, replayed {episode.end_reason!r}"
        )
    return episode


def _fenced(text: str, info: str = "text") -> str:
    """``text`` in a code fence longer than any backtick run inside it."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}{info}\n{text}\n{fence}"


def to_markdown(record: Mapping[str, Any]) -> str:
    """A readable transcript: header with the outcome, then each turn's state, reply, actions and reward."""
    final = replay(record, check=False)
    protocol = record["protocol"]
    lines = [
        f"# {record['env']} (seed {record['seed']}): {record.get('end_reason')}",
        "",
        f"- success: {record.get('success')}; total reward: {format_number(record.get('total_reward', 0.0))}",
        f"- turns: {record.get('num_turns')} of {protocol.get('max_turns')}; actions: {record.get('num_actions')} "
        f"of {protocol.get('max_actions_per_episode')} (at most {protocol.get('max_actions_per_turn')} a turn)",
        f"- level seed: {record.get('level_seed')}; observation format: {protocol.get('observation_format')}",
        f"- certificate: `{json.dumps(record.get('certificate'), sort_keys=True)[:300]}`",
        "",
    ]
    for turn in record["turns"]:
        lines += [f"## Turn {turn['turn']}", "", "State:", "", _fenced(turn["observation"]), "", "Reply:", ""]
        lines += [_fenced(turn["response"]), ""]
        if turn.get("reasoning"):
            lines += ["Provider reasoning:", "", _fenced(turn["reasoning"]), ""]
        if turn["format_ok"]:
            lines.append(f"- executed: {', '.join(turn['actions_executed']) or '(none)'}")
            if turn["actions_dropped"]:
                lines.append(f"- dropped (over the per-turn limit): {', '.join(turn['actions_dropped'])}")
        else:
            lines.append(f"- format error: {'; '.join(turn['format_errors'])} (no action taken)")
        lines.append(
            f"- step rewards: [{', '.join(format_number(r) for r in turn['step_rewards'])}]; turn reward "
            f"{format_number(turn['reward'])}, penalty {format_number(turn['penalty'])}"
        )
        lines.append("")
    lines += ["## Final state", "", _fenced(final.game.observation_text(
        protocol.get("observation_format", "grid"), protocol.get("symbols"), protocol.get("coordinate_base", 0)
    )), ""]
    return "\n".join(lines)


def _panel_text(turn: Mapping[str, Any], executed: int) -> str:
    lines = [f"Turn {turn['turn']}"]
    if turn.get("think"):
        lines.append(f"Thinking: {turn['think']}")
    lines.append(f"Answer: {turn.get('answer') or '-'}")
    if not turn["format_ok"]:
        lines.append(f"Format error: {'; '.join(turn['format_errors'])}")
    if executed:
        done = turn["actions_executed"][:executed]
        rewards = ", ".join(format_number(r) for r in turn["step_rewards"][:executed])
        lines.append(f"Executed: {', '.join(done)} (rewards {rewards})")
    return "\n".join(lines)


def save_episode_gif(record: Mapping[str, Any], path: str | Path, *, fps: int = 2, panel_width: int = 360) -> Path:
    """An animated GIF of the episode: one frame per action, the turn's thoughts beside the board.

    The game is replayed from the record's seed with ``render_mode="rgb_array"``; a state that does
    not match the record raises :class:`ReplayMismatchError`. Needs pillow (``ragen-envs[render]``).
    """
    from ragen_envs.rendering import frame_with_text, save_gif

    env = make_env(record["env"], record.get("env_config"), render_mode="rgb_array")
    try:
        env.reset(seed=record["seed"])
        game = env.unwrapped
        frames = [frame_with_text(env.render(), f"{record['env']}, seed {record['seed']}: start", panel_width)]
        for turn in record["turns"]:
            frames.append(frame_with_text(env.render(), _panel_text(turn, 0), panel_width))
            for count, name in enumerate(turn["actions_executed"], start=1):
                env.step(game.action_names.index(name))
                frames.append(frame_with_text(env.render(), _panel_text(turn, count), panel_width))
            if to_jsonable(game.state_dict()) != turn["state_after"]:
                raise ReplayMismatchError(f"turn {turn['turn']}: the replayed state differs from the record")
        ending = f"End: {record.get('end_reason')}, total reward {format_number(record.get('total_reward', 0.0))}"
        frames.append(frame_with_text(env.render(), ending, panel_width))
    finally:
        env.close()
    return save_gif(frames, path, fps=fps)



def save_episode_frames(record: Mapping[str, Any], directory: str | Path) -> list[Path]:
    """Write the picture of each turn's state (``turn_01.png``, ...) and of the end (``final.png``) into
    ``directory``; returns their paths.

    The episode is replayed from its record, so only the digests need to be stored: in an image-mode run
    each picture is the one the model was shown (its digest is checked against the record's ``image``;
    a difference raises :class:`ReplayMismatchError`); a text-mode run gets the same pictures drawn with
    the protocol's image options. Needs no pillow.
    """
    config = ProtocolConfig.from_dict(record["protocol"])
    if config.observation in (None, "text"):
        config = replace(config, observation="both")
    episode = TextEpisode(record["env"], record["seed"], config, record.get("env_config"))
    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    paths = []
    try:
        for turn in record["turns"]:
            if episode.done:
                raise ReplayMismatchError(f"replay ended after turn {episode.turn} but the record has more turns")
            png = episode.image
            if "image" in turn and image_digest(png) != turn["image"]:
                raise ReplayMismatchError(f"turn {turn['turn']}: the replayed picture differs from the record")
            paths.append(out / f"turn_{turn['turn']:02d}.png")
            paths[-1].write_bytes(png)
            episode.step(turn["response"], turn.get("finish_reason"), turn.get("reasoning"))
        paths.append(out / "final.png")
        paths[-1].write_bytes(episode.image)
    finally:
        episode.close()
    return paths
