"""`EpisodeBatch`: many text episodes stepped in lockstep, so a model is called once per turn."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ragen_envs.config_dicts import coerce_config
from ragen_envs.text.config import ProtocolConfig
from ragen_envs.text.episode import TextEpisode, check_reply


class EpisodeBatch:
    """Episodes of one game, one per seed, played together.

    ``prompts()`` gives the chat of every unfinished episode (in seed order); ``step(responses)``
    takes exactly one response per prompt, in the same order, and returns their turn records.
    """

    def __init__(
        self,
        env_name: str,
        seeds: Iterable[int],
        config: ProtocolConfig | Mapping[str, Any] | None = None,
        env_config: Mapping[str, Any] | None = None,
        *,
        render_mode: str | None = None,
    ) -> None:
        config = coerce_config(ProtocolConfig, config)  # once, not once per episode
        self.episodes = [TextEpisode(env_name, seed, config, env_config, render_mode=render_mode) for seed in seeds]
        if not self.episodes:
            raise ValueError("EpisodeBatch needs at least one seed")

    def __len__(self) -> int:
        return len(self.episodes)

    @property
    def active(self) -> list[int]:
        """Indices (into ``episodes``) of the episodes still running, in order."""
        return [i for i, episode in enumerate(self.episodes) if not episode.done]

    @property
    def done(self) -> bool:
        """True once every episode has finished."""
        return all(episode.done for episode in self.episodes)

    def prompts(self) -> list[list[dict[str, str]]]:
        """One message list per unfinished episode, in the order of ``active``."""
        return [episode.messages for episode in self.episodes if not episode.done]

    def step(
        self,
        responses: Sequence[str],
        finish_reasons: Sequence[str | None] | None = None,
        reasonings: Sequence[str | None] | None = None,
    ) -> list[dict[str, Any]]:
        """Play one turn of every unfinished episode; returns their turn records in ``active`` order."""
        active = self.active
        if isinstance(responses, str):
            raise TypeError("responses must be a sequence of strings, one per unfinished episode, not one string")
        for name, values in (("responses", responses), ("finish_reasons", finish_reasons), ("reasonings", reasonings)):
            if values is not None and len(values) != len(active):
                raise ValueError(f"{name} has {len(values)} entries but {len(active)} episodes are unfinished")
        finish_reasons = finish_reasons if finish_reasons is not None else [None] * len(active)
        reasonings = reasonings if reasonings is not None else [None] * len(active)
        for k, (response, reasoning) in enumerate(zip(responses, reasonings)):  # all or none of the turns are played
            try:
                check_reply(response, reasoning)
            except TypeError as err:
                raise TypeError(f"entry {k} (episode {active[k]}): {err}; no episode was stepped") from None
        return [
            self.episodes[i].step(response, finish_reason=finish, reasoning=reasoning)
            for i, response, finish, reasoning in zip(active, responses, finish_reasons, reasonings)
        ]

    def records(self) -> list[dict[str, Any]]:
        """The episode records, in seed order."""
        return [episode.record() for episode in self.episodes]

    def close(self) -> None:
        """Close every episode's env."""
        for episode in self.episodes:
            episode.close()
