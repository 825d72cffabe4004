"""`EpisodeStore`: the live text episodes of a server, bounded in number (in all and per client) and dropped when idle.

Kept apart from HTTP so the rules (capacity, expiry, one turn at a time per episode) are plain
method calls; :mod:`ragen_envs.server.app` only maps them onto requests and status codes.
"""

from __future__ import annotations

import secrets
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ragen_envs.text.episode import TextEpisode
from ragen_envs.text.parser import format_reply


class EpisodeNotFound(KeyError):
    """No live episode has this id: it never existed, was closed, or expired after sitting idle."""


class EpisodeFinished(RuntimeError):
    """A step was sent to an episode that has already ended."""


class StoreFull(RuntimeError):
    """Every slot holds an unfinished episode; a new one must wait for one to end, close or expire."""


class ClientLimit(RuntimeError):
    """This client already holds its share of unfinished episodes; it must end, close or let some expire."""


@dataclass
class _Slot:
    episode: TextEpisode
    last_used: float
    client: str
    # Steps of one episode must not interleave; different episodes step in parallel.
    lock: threading.Lock = field(default_factory=threading.Lock)


class EpisodeStore:
    """Thread-safe map of episode id -> :class:`TextEpisode`.

    At most ``max_episodes`` are held, and at most ``max_per_client`` by one client (an episode being
    built counts). An episode untouched for ``idle_timeout_s`` seconds is dropped. When the store (or the
    client's share) is full, a new episode takes the slot of the least recently used *finished* one (of
    that client, for its share; its record was there to be read, a client that wants it kept should read
    it before starting more); with no finished episode to drop, :class:`StoreFull` (:class:`ClientLimit`)
    is raised before any work is done.
    """

    def __init__(self, max_episodes: int = 1024, idle_timeout_s: float = 600.0,
                 clock: Callable[[], float] = time.monotonic, max_per_client: int | None = None) -> None:
        if isinstance(max_episodes, bool) or not isinstance(max_episodes, int) or max_episodes < 1:
            raise ValueError(f"max_episodes must be a positive integer, got {max_episodes!r}")
        if not isinstance(idle_timeout_s, (int, float)) or not idle_timeout_s > 0:
            raise ValueError(f"idle_timeout_s must be a positive number of seconds, got {idle_timeout_s!r}")
        if max_per_client is not None and (isinstance(max_per_client, bool) or not isinstance(max_per_client, int)
                                           or max_per_client < 1):
            raise ValueError(f"max_per_client must be a positive integer or None, got {max_per_client!r}")
        self.max_episodes = max_episodes
        self.idle_timeout_s = float(idle_timeout_s)
        self.max_per_client = max_per_client
        self._clock = clock
        self._slots: dict[str, _Slot] = {}
        self._building: Counter[str] = Counter()  # episodes being built, by client: they hold a slot already
        self._lock = threading.Lock()

    def __len__(self) -> int:
        with self._lock:
            self._expire(self._clock())
            return len(self._slots)

    def _expire(self, now: float) -> None:
        """Drop idle episodes; the caller holds ``self._lock``."""
        for key in [k for k, s in self._slots.items() if now - s.last_used > self.idle_timeout_s]:
            del self._slots[key]

    def create(self, build: Callable[[], TextEpisode], client: str = "") -> tuple[str, TextEpisode]:
        """Reserve a slot for ``client``, then call ``build`` for its episode; returns the new id and the
        episode. :class:`StoreFull` or :class:`ClientLimit` come before ``build`` is called; whatever
        ``build`` raises gives the slot back and passes through."""
        with self._lock:
            self._expire(self._clock())
            held = sum(1 for s in self._slots.values() if s.client == client) + self._building[client]
            if self.max_per_client is not None and held >= self.max_per_client \
                    and not self._drop_finished(lambda slot: slot.client == client):
                raise ClientLimit(f"this client holds {self.max_per_client} unfinished episodes, its limit; close "
                                  f"some (POST /close) or wait {self.idle_timeout_s:g}s for idle ones to expire")
            if len(self._slots) + self._building.total() >= self.max_episodes \
                    and not self._drop_finished(lambda slot: True):
                raise StoreFull(f"all {self.max_episodes} episode slots hold unfinished episodes; "
                                f"close some (POST /close) or wait {self.idle_timeout_s:g}s for idle ones to expire")
            self._building[client] += 1
        episode = None
        try:
            # Built outside the lock: level generation (a Sokoban solve) must not stall other clients.
            episode = build()
        finally:
            # The reservation turns into the slot under one lock, so no other create sees neither.
            with self._lock:
                self._building[client] -= 1
                if not self._building[client]:
                    del self._building[client]
                if episode is not None:
                    episode_id = secrets.token_hex(12)
                    self._slots[episode_id] = _Slot(episode, self._clock(), client)
        return episode_id, episode

    def _drop_finished(self, eligible: Callable[[_Slot], bool]) -> bool:
        """Drop the least recently used finished episode among ``eligible`` ones; whether there was one.
        The caller holds ``self._lock``."""
        finished = [(s.last_used, k) for k, s in self._slots.items() if s.episode.done and eligible(s)]
        if not finished:
            return False
        del self._slots[min(finished)[1]]
        return True

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
