"""The HTTP face of :class:`EpisodeStore`: JSON in, JSON out, on the standard library's threading server.

Routes (every body is a JSON object; see docs/integrations.md for the fields):

- ``POST /reset`` ``{env, seed?, protocol?, env_config?}`` -> a new episode's id, chat and first observation;
- ``POST /step`` ``{episode_id, reply}`` or ``{episode_id, action}`` -> reward, done, next chat, turn record;
- ``GET /state/{episode_id}`` -> the episode as it stands, with its full record;
- ``POST /close`` ``{episode_id}`` -> frees the slot and returns the record;
- ``GET /envs`` -> the registered presets; ``GET /health`` -> liveness and occupancy.

Errors are ``{"error": "<one line>"}`` with 400 (bad request), 404 (unknown or expired episode, unknown
route), 405, 409 (step on a finished episode), 413 (body too large) or 503 (no free episode slot).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from ragen_envs.registration import PRESETS
from ragen_envs.server.episodes import EpisodeFinished, EpisodeNotFound, EpisodeStore, StoreFull
from ragen_envs.text.episode import TextEpisode

#: Largest request body accepted; a reply is text of a few KB, so 1 MiB leaves room and stops abuse.
MAX_BODY_BYTES = 1 << 20
# Oversized bodies up to this size are read and dropped before the 413 is sent.
DRAIN_CAP_BYTES = 16 * MAX_BODY_BYTES


class RequestError(Exception):
    """A request the server refuses: carries the HTTP status and a one-line reason."""

    def __init__(self, status: HTTPStatus, message: str) -> None:
        super().__init__(message)
        self.status = status


def _view(episode_id: str, episode: TextEpisode) -> dict[str, Any]:
    """What every reply about an episode carries: the chat to send next and where the episode stands."""
    messages = episode.messages
    return {
        "episode_id": episode_id,
        "messages": messages,
        # The newest user turn (the state text); None once the game is over and no turn follows.
        "observation": None if episode.done else messages[-1]["content"],
        "done": episode.done,
        "info": {
            "env": episode.env_name,
            "seed": episode.seed,
            "turn": episode.turn,
            "actions_left": episode.actions_left,
            "action_names": list(episode.game.action_names),
            "success": episode.success,
            "total_reward": episode.total_reward,
            "end_reason": episode.end_reason,
        },
    }


def _field(body: dict[str, Any], name: str, kinds: type | tuple[type, ...], required: bool = False) -> Any:
    """``body[name]`` checked against ``kinds`` (a JSON true/false is not an int here); None when absent."""
    value = body.get(name)
    if value is None:
        if required:
            raise RequestError(HTTPStatus.BAD_REQUEST, f"missing field {name!r}")
        return None
    if not isinstance(value, kinds) or isinstance(value, bool):
        raise RequestError(HTTPStatus.BAD_REQUEST, f"field {name!r} has the wrong type: {value!r:.80}")
    return value


class EnvRequestHandler(BaseHTTPRequestHandler):
    """Routes one request to the server's :class:`EpisodeStore`."""

    server: EnvServer
    protocol_version = "HTTP/1.1"  # keep-alive: a client playing many turns reuses its connection
    timeout = 120  # seconds a connection may sit silent; a stalled or idle client does not hold a thread forever

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base class's signature
        if self.server.verbose:
            super().log_message(format, *args)

    def _send(self, status: HTTPStatus, payload: dict[str, Any]) -> None:
        body = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        if self.close_connection:
            self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(body)

    def _body(self) -> dict[str, Any]:
        try:
            length = int(self.headers.get("Content-Length", "0"))
        except ValueError:
            raise RequestError(HTTPStatus.BAD_REQUEST, "Content-Length is not a number") from None
        if length > MAX_BODY_BYTES:
            self._discard_body(length)
            raise RequestError(HTTPStatus.REQUEST_ENTITY_TOO_LARGE,
                               f"request body of {length} bytes is over the {MAX_BODY_BYTES}-byte limit")
        raw = self.rfile.read(length) if length > 0 else b""
        try:
            body = json.loads(raw or b"{}")
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise RequestError(HTTPStatus.BAD_REQUEST, f"body is not JSON: {exc}") from None
        if not isinstance(body, dict):
            raise RequestError(HTTPStatus.BAD_REQUEST, f"body must be a JSON object, got {type(body).__name__}")
        return body

    def _discard_body(self, length: int) -> None:
        """Read and drop an oversized body, so the client, still sending it, gets the 413 and not a broken pipe.

        Bodies beyond a drain cap are not read; the connection is closed instead, since the unread bytes would
        otherwise be taken for the next request.
        """
        if length > DRAIN_CAP_BYTES:
            self.close_connection = True
            return
        while length > 0:
            chunk = self.rfile.read(min(length, 1 << 16))
            if not chunk:
                break
            length -= len(chunk)

    def _handle(self, method: str) -> None:
        try:
            # Read the body before routing, so that a refused request leaves no bytes behind on a kept-alive
            # connection to be taken for the next request.
            body = self._body() if method == "POST" else {}
            path = self.path.split("?", 1)[0].rstrip("/") or "/"
            route = self.server.routes.get((method, path))
            if method == "GET" and path.startswith("/state/"):
                payload = self.server.state(path.removeprefix("/state/"))
            elif route is not None:
                payload = route(body)
            else:
                known = {p for (_, p) in self.server.routes} | {"/state/{episode_id}"}
                if path in known or path.startswith("/state/"):
                    raise RequestError(HTTPStatus.METHOD_NOT_ALLOWED, f"{method} is not allowed on {path}")
                raise RequestError(HTTPStatus.NOT_FOUND, f"no route {path}; routes: {sorted(known)}")
            self._send(HTTPStatus.OK, payload)
        except RequestError as exc:
            self._send(exc.status, {"error": str(exc)})
        except EpisodeNotFound as exc:
            self._send(HTTPStatus.NOT_FOUND, {"error": exc.args[0]})
        except EpisodeFinished as exc:
            self._send(HTTPStatus.CONFLICT, {"error": str(exc)})
        except StoreFull as exc:
            self._send(HTTPStatus.SERVICE_UNAVAILABLE, {"error": str(exc)})
        except (ValueError, TypeError) as exc:  # the env, protocol or reply was refused by ragen_envs
            self._send(HTTPStatus.BAD_REQUEST, {"error": str(exc).splitlines()[0]})
        except Exception as exc:  # noqa: BLE001 - a client gets a reason, not a dropped connection
            self._send(HTTPStatus.INTERNAL_SERVER_ERROR, {"error": f"{type(exc).__name__}: {exc}".splitlines()[0]})

    def do_GET(self) -> None:  # noqa: N802 - the base class's naming
        """Serve a GET route."""
        self._handle("GET")

    def do_POST(self) -> None:  # noqa: N802
        """Serve a POST route."""
        self._handle("POST")


class EnvServer(ThreadingHTTPServer):
    """A threading HTTP server holding an :class:`EpisodeStore`; one thread per connection."""

    daemon_threads = True
    request_queue_size = 256  # many clients connect at once at the start of a batch of episodes

    def __init__(self, address: tuple[str, int], store: EpisodeStore, *, verbose: bool = False) -> None:
        self.store = store
        self.verbose = verbose
        self.routes: dict[tuple[str, str], Callable[[dict[str, Any]], dict[str, Any]]] = {
            ("POST", "/reset"): self.reset,
            ("POST", "/step"): self.step,
            ("POST", "/close"): self.close_episode,
            ("GET", "/envs"): lambda body: {"envs": [{"name": p.name, "env_id": p.env_id,
                                                      "description": p.description} for p in PRESETS]},
            ("GET", "/health"): lambda body: {"status": "ok", "episodes": len(self.store),
                                              "max_episodes": self.store.max_episodes,
                                              "idle_timeout_s": self.store.idle_timeout_s},
        }
        super().__init__(address, EnvRequestHandler)

    @property
    def url(self) -> str:
        """``http://host:port`` the server listens on (the real port when 0 was asked for)."""
        host, port = self.server_address[:2]
        return f"http://{host}:{port}"

    def reset(self, body: dict[str, Any]) -> dict[str, Any]:
        """``POST /reset``."""
        unknown = sorted(set(body) - {"env", "seed", "protocol", "env_config"})
        if unknown:
            raise RequestError(HTTPStatus.BAD_REQUEST, f"unknown field(s) {unknown} in /reset; "
                                                       "known: env, seed, protocol, env_config")
        env = _field(body, "env", str, required=True)
        seed = _field(body, "seed", int)
        protocol = _field(body, "protocol", dict)
        env_config = _field(body, "env_config", dict)
        episode_id, episode = self.store.create(env, seed, protocol, env_config)
        view = _view(episode_id, episode)
        view["info"].update(level_seed=episode.level_seed, certificate=episode.certificate,
                            protocol=episode.config.to_dict(), env_config=episode.env_config)
        return view

    def step(self, body: dict[str, Any]) -> dict[str, Any]:
        """``POST /step``."""
        unknown = sorted(set(body) - {"episode_id", "reply", "action"})
        if unknown:
            raise RequestError(HTTPStatus.BAD_REQUEST, f"unknown field(s) {unknown} in /step; "
                                                       "known: episode_id, reply, action")
        episode_id = _field(body, "episode_id", str, required=True)
        reply = _field(body, "reply", str)
        action = _field(body, "action", (str, list))
        actions = [action] if isinstance(action, str) else action
        episode, record = self.store.step(episode_id, reply=reply, actions=actions)
        view = _view(episode_id, episode)
        view["reward"] = record["reward"] + record["penalty"]  # what the turn earned, as in-process training sees it
        view["turn"] = record
        return view

    def state(self, episode_id: str) -> dict[str, Any]:
        """``GET /state/{episode_id}``."""
        episode = self.store.get(episode_id)
        view = _view(episode_id, episode)
        view["state"] = episode.game.state_dict()
        view["record"] = episode.record()
        return view

    def close_episode(self, body: dict[str, Any]) -> dict[str, Any]:
        """``POST /close``."""
        episode_id = _field(body, "episode_id", str, required=True)
        return {"episode_id": episode_id, "record": self.store.close(episode_id).record()}


def start_server(host: str = "127.0.0.1", port: int = 0, store: EpisodeStore | None = None, *,
                 verbose: bool = False) -> tuple[EnvServer, threading.Thread]:
    """Start an :class:`EnvServer` on a background thread (port 0: a free one; see ``server.url``).
    Stop it with ``server.shutdown(); server.server_close()``."""
    server = EnvServer((host, port), store if store is not None else EpisodeStore(), verbose=verbose)
    thread = threading.Thread(target=server.serve_forever, name="ragen-env-server", daemon=True)
    thread.start()
    return server, thread
