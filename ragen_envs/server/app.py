"""The HTTP face of :class:`EpisodeStore`: JSON in, JSON out, on the standard library's threading server.

Routes (every body is a JSON object; see docs/integrations.md for the fields):

- ``POST /reset`` ``{env, seed?, protocol?, env_config?, levels?}`` -> a new episode's id, chat and first
  observation, built through the server's :class:`~ragen_envs.server.policy.ClientPolicy`;
- ``POST /step`` ``{episode_id, reply}`` or ``{episode_id, action}`` -> reward, done, next chat, turn record;
- ``GET /state/{episode_id}`` -> the episode as it stands, with its full record;
- ``POST /close`` ``{episode_id}`` -> frees the slot and returns the record;
- ``GET /envs`` -> the registered presets; ``GET /policy`` -> what a client may ask; ``GET /health`` ->
  liveness and occupancy.

With a token set, every request needs ``Authorization: Bearer TOKEN`` (401 otherwise). Errors are
``{"error": "<one line>"}`` with 400 (bad request), 401, 403 (not allowed by the policy), 404 (unknown or
expired episode, level set or route), 405, 409 (step on a finished episode), 413 (body or reply too large), 422
(build over its time budget), 429 (the client's episode limit) or 503 (no free slot, builder or connection).
"""

from __future__ import annotations

import io
import json
import socket
import threading
import time
from collections.abc import Callable
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from ragen_envs.registration import PRESETS
from ragen_envs.server.episodes import ClientLimit, EpisodeFinished, EpisodeNotFound, EpisodeStore, StoreFull
from ragen_envs.server.policy import ClientPolicy, PolicyError, check_bind, token_matches
from ragen_envs.text.episode import MAX_REPLY_CHARS, TextEpisode

#: Largest request body accepted; a reply is text of a few KB, so 1 MiB leaves room and stops abuse.
MAX_BODY_BYTES = 1 << 20
# Oversized bodies up to this size are read and dropped before the 413 is sent.
DRAIN_CAP_BYTES = 16 * MAX_BODY_BYTES
#: Deepest nesting of arrays and objects a body may have (a reset nests 3 deep: body, protocol, symbols).
MAX_BODY_DEPTH = 32
#: Seconds from a request's first byte to the end of its headers (a few hundred bytes on any network).
HEADER_TIMEOUT_S = 10.0


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


def _not_json_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def _depth(value: Any) -> int:
    """How deeply arrays and objects nest in a parsed JSON value (a scalar: 0); iterative, so any depth counts."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, (dict, list)):
            deepest = max(deepest, depth)
            stack.extend((child, depth + 1) for child in (item.values() if isinstance(item, dict) else item))
    return deepest


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


class _HeaderDeadlineReader:
    """A connection's ``rfile`` whose ``readline`` (the request line and headers) must finish within
    :data:`HEADER_TIMEOUT_S` of the request's first byte.

    The socket's idle timeout restarts on every byte, so a client trickling header bytes would hold its
    connection (and, with every connection taken, the whole server) for ever. ``read`` (the body) and the
    wait for a request's first byte keep the idle timeout alone.
    """

    def __init__(self, buffered: io.BufferedReader, connection: socket.socket, idle_timeout: float) -> None:
        self._buffered, self._connection, self._idle_timeout = buffered, connection, idle_timeout
        self._deadline: float | None = None

    def start_request(self) -> None:
        """Let the next request's headers have their own deadline, counted from their first byte."""
        self._deadline = None

    def readline(self, limit: int = -1) -> bytes:
        """One line: up to a line feed, ``limit`` bytes or the end of the stream; TimeoutError past the deadline."""
        line = bytearray()
        while limit < 0 or len(line) < limit:
            if self._deadline is None:
                self._connection.settimeout(self._idle_timeout)
            else:
                left = self._deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError(f"request headers took more than {HEADER_TIMEOUT_S:g}s")
                self._connection.settimeout(min(left, self._idle_timeout))
            buffered = self._buffered.peek(1)  # at most one recv: each waits only for what is left
            if not buffered:
                break
            if self._deadline is None:
                self._deadline = time.monotonic() + HEADER_TIMEOUT_S
            end = buffered.find(b"\n") + 1 or len(buffered)
            line += self._buffered.read(end if limit < 0 else min(end, limit - len(line)))
            if line.endswith(b"\n"):
                break
        return bytes(line)

    def read(self, size: int = -1) -> bytes:
        """Read the body, under the idle timeout alone."""
        self._connection.settimeout(self._idle_timeout)
        return self._buffered.read(size)

    def close(self) -> None:
        """Close the underlying stream."""
        self._buffered.close()


class EnvRequestHandler(BaseHTTPRequestHandler):
    """Routes one request to the server's :class:`EpisodeStore`."""

    server: EnvServer
    protocol_version = "HTTP/1.1"  # keep-alive: a client playing many turns reuses its connection
    # A reply goes out as two writes (headers, then body); with Nagle's algorithm the body waited for the
    # client's delayed ACK, about 40 ms a request on a kept-alive connection.
    disable_nagle_algorithm = True
    timeout = 120  # seconds a connection may sit silent; a stalled or idle client does not hold a thread forever

    def setup(self) -> None:
        """Open the connection's streams; request lines and headers are read under a deadline."""
        super().setup()
        self.rfile = _HeaderDeadlineReader(self.rfile, self.connection, self.timeout)

    def handle_one_request(self) -> None:
        """Serve one request (its headers get a fresh deadline)."""
        self.rfile.start_request()
        super().handle_one_request()

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base class's signature
        if self.server.verbose:
            super().log_message(format, *args)

    def _send(self, status: HTTPStatus, payload: dict[str, Any]) -> None:
        try:
            body = json.dumps(payload, allow_nan=False).encode()
        except ValueError:  # NaN or infinity: Python would write them, but they are not JSON and clients reject them
            status = HTTPStatus.INTERNAL_SERVER_ERROR
            body = json.dumps({"error": "the answer holds a number JSON cannot carry (NaN or infinity)"}).encode()
        self.send_response(status)
        if status == HTTPStatus.UNAUTHORIZED:
            self.send_header("WWW-Authenticate", 'Bearer realm="ragen_envs.server"')
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        if self.close_connection:
            self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(body)

    def _body(self) -> dict[str, Any]:
        if "Transfer-Encoding" in self.headers:
            self.close_connection = True  # where the body ends is unknown: nothing more can be read safely
            raise RequestError(HTTPStatus.BAD_REQUEST, "Transfer-Encoding bodies are not accepted; send Content-Length")
        try:
            length = int(self.headers.get("Content-Length", "0"))
        except ValueError:
            length = -1
        if length < 0:
            self.close_connection = True
            raise RequestError(HTTPStatus.BAD_REQUEST, "Content-Length is not a non-negative number")
        if length > MAX_BODY_BYTES:
            self._discard_body(length)
            raise RequestError(HTTPStatus.REQUEST_ENTITY_TOO_LARGE,
                               f"request body of {length} bytes is over the {MAX_BODY_BYTES}-byte limit")
        raw = self.rfile.read(length) if length > 0 else b""
        if len(raw) < length:
            self.close_connection = True
            raise RequestError(HTTPStatus.BAD_REQUEST, f"body ended after {len(raw)} of {length} bytes")
        try:
            body = json.loads(raw or b"{}", parse_constant=_not_json_constant)
        except RecursionError:
            raise RequestError(HTTPStatus.BAD_REQUEST, f"body nests deeper than {MAX_BODY_DEPTH} levels") from None
        except ValueError as exc:  # also bad UTF-8, NaN/Infinity, and integers of thousands of digits
            raise RequestError(HTTPStatus.BAD_REQUEST, f"body is not JSON: {exc}") from None
        if not isinstance(body, dict):
            raise RequestError(HTTPStatus.BAD_REQUEST, f"body must be a JSON object, got {type(body).__name__}")
        if _depth(body) > MAX_BODY_DEPTH:
            raise RequestError(HTTPStatus.BAD_REQUEST, f"body nests deeper than {MAX_BODY_DEPTH} levels")
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
            if not token_matches(self.server.policy.auth_token, self.headers.get("Authorization")):
                # No work for a client without the token: its body is only drained, so that it reads the 401
                # rather than a reset connection, and the connection is closed.
                self.close_connection = True
                length = self.headers.get("Content-Length", "")
                self._discard_body(int(length) if length.isdigit() and int(length) <= MAX_BODY_BYTES else 0)
                raise RequestError(HTTPStatus.UNAUTHORIZED, "this server needs 'Authorization: Bearer TOKEN'")
            # Read the body before routing, so that a refused request leaves no bytes behind on a kept-alive
            # connection to be taken for the next request.
            body = self._body() if method == "POST" else {}
            path = self.path.split("?", 1)[0].rstrip("/") or "/"
            route = self.server.routes.get((method, path))
            if method == "GET" and path.startswith("/state/"):
                payload = self.server.state(path.removeprefix("/state/"))
            elif route is not None:
                payload = route(body, self.client_address[0])
            else:
                known = {p for (_, p) in self.server.routes} | {"/state/{episode_id}"}
                if path in known or path.startswith("/state/"):
                    raise RequestError(HTTPStatus.METHOD_NOT_ALLOWED, f"{method} is not allowed on {path}")
                raise RequestError(HTTPStatus.NOT_FOUND, f"no route {path}; routes: {sorted(known)}")
            self._send(HTTPStatus.OK, payload)
        except RequestError as exc:
            self._send(exc.status, {"error": str(exc)})
        except PolicyError as exc:
            self._send(HTTPStatus(exc.status), {"error": str(exc)})
        except ClientLimit as exc:
            self._send(HTTPStatus.TOO_MANY_REQUESTS, {"error": str(exc)})
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
    """A threading HTTP server holding an :class:`EpisodeStore`, opening episodes through a :class:`ClientPolicy`.

    One thread per connection, at most ``policy.max_connections`` at once (a connection beyond is
    answered 503 and closed). Binding beyond loopback without ``policy.auth_token`` is a ValueError.
    The store's ``max_per_client`` is the per-client episode limit (:func:`start_server` and the command
    line set it from the policy).
    """

    daemon_threads = True
    request_queue_size = 256  # many clients connect at once at the start of a batch of episodes

    def __init__(self, address: tuple[str, int], store: EpisodeStore, *, policy: ClientPolicy | None = None,
                 verbose: bool = False) -> None:
        self.policy = policy if policy is not None else ClientPolicy()
        check_bind(address[0], self.policy.auth_token)
        self.store = store
        self.verbose = verbose
        self._connections = threading.BoundedSemaphore(self.policy.max_connections)
        # Each route takes the body and the client's address.
        self.routes: dict[tuple[str, str], Callable[[dict[str, Any], str], dict[str, Any]]] = {
            ("POST", "/reset"): self.reset,
            ("POST", "/step"): lambda body, client: self.step(body),
            ("POST", "/close"): lambda body, client: self.close_episode(body),
            ("GET", "/envs"): lambda body, client: {"envs": [{"name": p.name, "env_id": p.env_id,
                                                              "description": p.description} for p in PRESETS]},
            ("GET", "/policy"): lambda body, client: self.policy.describe(),
            ("GET", "/health"): lambda body, client: {"status": "ok", "episodes": len(self.store),
                                                      "max_episodes": self.store.max_episodes,
                                                      "idle_timeout_s": self.store.idle_timeout_s},
        }
        super().__init__(address, EnvRequestHandler)

    def process_request(self, request: Any, client_address: Any) -> None:
        """Serve the connection on a new thread, or answer 503 and close it when ``max_connections`` are open."""
        if not self._connections.acquire(blocking=False):
            body = json.dumps({"error": f"the server is serving {self.policy.max_connections} connections, its "
                                        "limit; retry later"}).encode()
            try:
                request.settimeout(1.0)  # a client that reads nothing must not stall the accepting thread
                request.sendall(b"HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\n"
                                b"Connection: close\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body))
            except OSError:
                pass
            self.shutdown_request(request)
            return
        try:
            super().process_request(request, client_address)
        except BaseException:
            self._connections.release()
            raise

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        """Serve one connection, then give its place back."""
        try:
            super().process_request_thread(request, client_address)
        finally:
            self._connections.release()

    @property
    def url(self) -> str:
        """``http://host:port`` the server listens on (the real port when 0 was asked for)."""
        host, port = self.server_address[:2]
        return f"http://{host}:{port}"

    def reset(self, body: dict[str, Any], client: str = "") -> dict[str, Any]:
        """``POST /reset`` for ``client`` (its address: the per-client limit counts by it)."""
        unknown = sorted(set(body) - {"env", "seed", "protocol", "env_config", "levels"})
        if unknown:
            raise RequestError(HTTPStatus.BAD_REQUEST, f"unknown field(s) {unknown} in /reset; "
                                                       "known: env, seed, protocol, env_config, levels")
        env = _field(body, "env", str, required=True)
        seed = _field(body, "seed", int)
        protocol = _field(body, "protocol", dict)
        env_config = _field(body, "env_config", dict)
        levels = _field(body, "levels", str)
        episode_id, episode = self.store.create(
            lambda: self.policy.open_episode(env, seed, protocol, env_config, levels), client)
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
        if reply is not None and len(reply) > MAX_REPLY_CHARS:  # refused before parsing: bounded work per turn
            raise RequestError(HTTPStatus.REQUEST_ENTITY_TOO_LARGE,
                               f"reply of {len(reply)} characters is over the {MAX_REPLY_CHARS}-character limit")
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
                 policy: ClientPolicy | None = None, verbose: bool = False) -> tuple[EnvServer, threading.Thread]:
    """Start an :class:`EnvServer` on a background thread (port 0: a free one; see ``server.url``); without a
    store, a default one with the policy's per-client limit. Stop it with
    ``server.shutdown(); server.server_close()``."""
    policy = policy if policy is not None else ClientPolicy()
    if store is None:
        store = EpisodeStore(max_per_client=policy.max_sessions_per_client)
    server = EnvServer((host, port), store, policy=policy, verbose=verbose)
    thread = threading.Thread(target=server.serve_forever, name="ragen-env-server", daemon=True)
    thread.start()
    return server, thread
