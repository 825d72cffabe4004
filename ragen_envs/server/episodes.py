"""`EpisodeStore`: the live text episodes of a server, bounded in number and dropped when idle.

Kept apart from HTTP so the rules (capacity, expiry, one turn at a time per episode) are plain
method calls; :mod:`ragen_envs.server.app` only maps them onto requests and status codes.
"""

from __future__ import annotations

import secrets
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ragen_envs.seeding import as_seed
from ragen_envs.text.episode import TextEpisode
from ragen_envs.text.parser import format_reply


class EpisodeNotFound(KeyError):
    """No live episode has this id: it never existed, was closed, or expired after sitting idle."""


class EpisodeFinished(RuntimeError):
    """A step was sent to an episode that has already ended."""


class StoreFull(RuntimeError):
    """Every slot holds an unfinished episode; a new one must wait for one to end, close or expire."""


@dataclass
class _Slot:
    episode: TextEpisode
    last_used: float
    # Steps of one episode must not interleave; different episodes step in parallel.
    lock: threading.Lock = field(default_factory=threading.Lock)


class EpisodeStore:
    """Thread-safe map of episode id -> :class:`TextEpisode`.

    At most ``max_episodes`` are held. An episode untouched for ``idle_timeout_s`` seconds is dropped.
    When the store is full, a new episode takes the slot of the least recently used *finished* one (its
    record was there to be read; a client that wants it kept should read it before starting more); with
    no finished episode to drop, :class:`StoreFull` is raised.
    """

    def __init__(self, max_episodes: int = 1024, idle_timeout_s: float = 600.0,
                 clock: Callable[[], float] = time.monotonic) -> None:
        if isinstance(max_episodes, bool) or not isinstance(max_episodes, int) or max_episodes < 1:
            raise ValueError(f"max_episodes must be a positive integer, got {max_episodes!r}")
        if not isinstance(idle_timeout_s, (int, float)) or not idle_timeout_s > 0:
            raise ValueError(f"idle_timeout_s must be a positive number of seconds, got {idle_timeout_s!r}")
        self.max_episodes = max_episodes
        self.idle_timeout_s = float(idle_timeout_s)
        self._clock = clock
        self._slots: dict[str, _Slot] = {}
        self._lock = threading.Lock()

    def __len__(self) -> int:
        with self._lock:
            self._expire(self._clock())
            return len(self._slots)

    def _expire(self, now: float) -> None:
        """Drop idle episodes; the caller holds ``self._lock``."""
        for key in [k for k, s in self._slots.items() if now - s.last_used > self.idle_timeout_s]:
            del self._slots[key]

    def create(self, env: str, seed: int | None = None, protocol: Mapping[str, Any] | None = None,
               env_config: Mapping[str, Any] | None = None) -> tuple[str, TextEpisode]:
        """Start an episode; returns its new id and the episode. ``seed=None`` draws one (reported back
        in the episode's ``seed``, so the level can still be replayed). Bad arguments raise
        ValueError/TypeError from :class:`TextEpisode`, before any slot is taken."""
        seed = secrets.randbelow(2**31) if seed is None else as_seed(seed)
        # Built outside the lock: level generation (a Sokoban solve) must not stall other clients.
        episode = TextEpisode(env, seed, protocol, env_config)
        with self._lock:
            now = self._clock()
            self._expire(now)
            if len(self._slots) >= self.max_episodes:
                finished = [(s.last_used, k) for k, s in self._slots.items() if s.episode.done]
                if not finished:
                    raise StoreFull(f"all {self.max_episodes} episode slots hold unfinished episodes; "
                                    f"close some (POST /close) or wait {self.idle_timeout_s:g}s for idle ones to expire")
                del self._slots[min(finished)[1]]
            episode_id = secrets.token_hex(12)
            self._slots[episode_id] = _Slot(episode, now)
        return episode_id, episode

    def _slot(self, episode_id: str) -> _Slot:
        with self._lock:
            now = self._clock()
            self._expire(now)
            slot = self._slots.get(episode_id) if isinstance(episode_id, str) else None
            if slot is None:
                raise EpisodeNotFound(f"no live episode {episode_id!r} (unknown, closed, or idle for more than "
                                      f"{self.idle_timeout_s:g}s)")
            slot.last_used = now
            return slot

    def get(self, episode_id: str) -> TextEpisode:
        """The episode with this id (its idle clock restarts); :class:`EpisodeNotFound` otherwise."""
        return self._slot(episode_id).episode

    def step(self, episode_id: str, reply: str | None = None,
             actions: list[str] | None = None) -> tuple[TextEpisode, dict[str, Any]]:
        """Play one turn: a model's ``reply`` text, or ``actions`` (names) sent as the well-formed reply
        :func:`format_reply` writes. Exactly one of the two must be given. Returns the episode and
        the turn record."""
        if (reply is None) == (actions is None):
            raise ValueError("send exactly one of 'reply' (the model's text) or 'action' (action names)")
        if actions is not None and (not isinstance(actions, list) or not all(isinstance(a, str) for a in actions)):
            raise TypeError(f"'action' must be an action name or a list of them, got {actions!r:.100}")
        slot = self._slot(episode_id)
        with slot.lock:
            episode = slot.episode
            if episode.done:
                raise EpisodeFinished(f"episode {episode_id} already ended ({episode.end_reason}); reset a new one")
            if actions is not None:
                config = episode.config
                reply = format_reply(actions, config.action_separator, thought="" if config.think else None)
            return episode, episode.step(reply)

    def close(self, episode_id: str) -> TextEpisode:
        """Remove the episode and return it; :class:`EpisodeNotFound` when there is none."""
        with self._lock:
            slot = self._slots.pop(episode_id, None) if isinstance(episode_id, str) else None
        if slot is None:
            raise EpisodeNotFound(f"no live episode {episode_id!r}")
        slot.episode.close()
        return slot.episode
