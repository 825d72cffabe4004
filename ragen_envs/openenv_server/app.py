"""The OpenEnv app: :class:`TextGameEnvironment` served by OpenEnv's own ``create_app``, behind a gate.

``create_app`` gives the routes (``/ws`` sessions, ``/reset``, ``/step``, ``/state``, ``/schema``,
``/metadata``, ``/health``, ``/mcp``), the per-session environments, the capacity (answered with
OpenEnv's ``CAPACITY_REACHED`` error) and session teardown when a socket drops. :class:`ClientGate`, an
ASGI wrapper, adds what a server facing hostile clients needs and OpenEnv leaves out: a bearer token,
caps on connections in all and WebSocket sessions per client address, a request-body limit, and an
idle timeout that closes a silent WebSocket (which frees its session slot).

``uvicorn ragen_envs.openenv_server.app:app`` serves the defaults (``openenv.yaml`` names this app);
``python -m ragen_envs.openenv_server`` takes the operator's flags.
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import gc
import json
import socket
from collections import Counter
from importlib import resources
from typing import Any

import uvicorn
from openenv.core.env_server.http_server import create_app
from openenv.core.env_server.types import ConcurrencyConfig, EnvironmentMetadata
from starlette.requests import Request
from starlette.responses import JSONResponse

from ragen_envs.openenv_server.environment import GameAction, GameObservation, GameState, ServerSettings, \
    TextGameEnvironment
from ragen_envs.server.policy import PolicyError, token_matches

#: Largest HTTP request body accepted (a reply is a few KB of text).
MAX_BODY_BYTES = 1 << 20


def load_cards() -> dict[str, dict[str, Any]]:
    """The environment cards (``cards.json``, written by ``scripts/openenv_cards.py``), by preset name."""
    return json.loads(resources.files("ragen_envs.openenv_server").joinpath("cards.json").read_text())


def _card_markdown(name: str, card: dict[str, Any]) -> str:
    def success(entry: dict[str, Any] | None) -> str:
        return "not measured" if entry is None else f"{entry['success']:.3f} (95% CI {entry['ci95'][0]:.3f}-{entry['ci95'][1]:.3f})"

    space = card["level_space"]
    if space is None:
        levels = "not measured"
    elif space["exact"] is not None:
        levels = f"{space['exact']['total']:,} (exact)"
    else:
        levels = f"about {space['chao1_estimate']:,} (Chao1; {space['distinct_in_sample']:,} distinct in {space['sampled_seeds']:,} seeds)"
    if card["split_leak"] is not None:
        leak = str(card["split_leak"])
    else:  # no figure: the level space was not sampled, or every split plays the same levels
        leak = "not measured" if space is None else "none to hold out (every split plays the same levels)"
    gain = card["rl_gain"]
    budgets = card["budgets"]
    lines = [
        f"### {name} (`{card['env_id']}`)", "", card["description"], "",
        f"- oracle success, test split: {success(card['oracle_test'])}",
        f"- random success, test split: {success(card['random_test'])}",
        f"- level space: {levels}",
        f"- split leak (test levels among train levels): {leak}",
        f"- certificate: {card['certificate']}",
        f"- budgets: {budgets['max_turns']} turns, {budgets['max_actions_per_turn']} actions per turn, "
        f"{budgets['max_actions_per_episode']} per episode, format penalty {budgets['format_penalty']}",
        "- RL gain: " + ("not measured" if gain is None else
                         f"{gain['sft_success']:.3f} -> {gain['rl_success']:.3f} on {gain['levels']} test levels"),
    ]
    return "\n".join(lines)


def server_metadata(default_env: str, cards: dict[str, dict[str, Any]] | None = None) -> EnvironmentMetadata:
    """``/metadata``: the server's name and description, and every preset's card as Markdown."""
    cards = load_cards() if cards is None else cards
    body = "\n\n".join(_card_markdown(name, card) for name, card in cards.items())
    return EnvironmentMetadata(
        name="ragen-envs",
        description=(f"Seeded, certified text games (Bandit, Sokoban, FrozenLake) for multi-turn LLM agents; "
                     f"reset(env=..., seed=...) picks a preset (default {default_env!r}), step takes the "
                     "model's reply."),
        readme_content="## Environment cards\n\n" + body + "\n",
        version="0.1.0",
        author="ragen-envs",
    )


class ClientGate:
    """ASGI wrapper: token check, connection and per-client WebSocket caps, body limit, idle timeout.

    Counters live on the event loop's thread, so they need no lock.
    """

    def __init__(self, app: Any, *, auth_token: str | None, max_connections: int, max_sessions_per_client: int,
                 idle_timeout_s: float) -> None:
        self.app = app
        self.auth_token = auth_token
        self.max_connections = max_connections
        self.max_sessions_per_client = max_sessions_per_client
        self.idle_timeout_s = idle_timeout_s
        self.open = 0
        self.sockets_per_client: Counter[str] = Counter()

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        """Admit or refuse one HTTP request or WebSocket."""
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        headers = dict(scope.get("headers") or [])
        authorization = headers.get(b"authorization")
        if not token_matches(self.auth_token, authorization.decode("latin-1") if authorization else None):
            await _refuse(scope, send, 401, "missing or wrong bearer token (Authorization: Bearer TOKEN)")
            return
        if self.open >= self.max_connections:
            await _refuse(scope, send, 503, f"the server holds its maximum of {self.max_connections} connections")
            return
        client = (scope.get("client") or ("unknown", 0))[0]
        socket = scope["type"] == "websocket"
        if socket and self.sockets_per_client[client] >= self.max_sessions_per_client:
            await _refuse(scope, send, 429, f"{client} holds its maximum of {self.max_sessions_per_client} sessions")
            return
        if not socket:
            length = headers.get(b"content-length")
            if length is not None and (not length.isdigit() or int(length) > MAX_BODY_BYTES):
                await _refuse(scope, send, 413, f"request body over the {MAX_BODY_BYTES}-byte limit")
                return
            receive = _capped(receive)
        watch = _IdleWatch(receive, send, self.idle_timeout_s) if socket else None
        if watch is not None:
            receive = watch.receive
        self.open += 1
        if socket:
            self.sockets_per_client[client] += 1
        try:
            await self.app(scope, receive, send)
        finally:
            self.open -= 1
            if watch is not None:
                watch.stop()
            if socket:
                self.sockets_per_client[client] -= 1
                if not self.sockets_per_client[client]:
                    del self.sockets_per_client[client]


class _IdleWatch:
    """``receive`` for a WebSocket that, after ``timeout`` seconds without a message, closes the socket and
    tells the app the client left, so OpenEnv tears its session down and the slot is free again.

    One timer per socket, re-armed when it fires: ``asyncio.wait_for`` around every receive cost about
    8 us a message (a task and a timer each). The timer interrupts a receive that waited too long by
    cancelling the socket's task, which ``receive`` then takes back (``uncancel``)."""

    def __init__(self, receive: Any, send: Any, timeout: float) -> None:
        self._receive, self._send, self._timeout = receive, send, timeout
        self._loop = asyncio.get_running_loop()
        self._task = asyncio.current_task()
        self._last = self._loop.time()
        self._waiting = self._idle = False
        self._timer = self._loop.call_later(timeout, self._check)

    def _check(self) -> None:
        left = self._last + self._timeout - self._loop.time()
        if self._waiting and left <= 0 and self._task is not None:
            self._idle = True
            self._task.cancel()
        else:
            self._timer = self._loop.call_later(left if left > 0 else self._timeout, self._check)

    async def receive(self) -> dict[str, Any]:
        """The next message, or a disconnect once the socket was idle for the timeout."""
        self._waiting = True
        try:
            return await self._receive()
        except asyncio.CancelledError:
            if not self._idle:
                raise
            if hasattr(self._task, "uncancel"):  # Python 3.11+ counts cancellations
                self._task.uncancel()
            await self._send({"type": "websocket.close", "code": 1001, "reason": f"idle for {self._timeout:g}s"})
            return {"type": "websocket.disconnect", "code": 1001}
        finally:
            self._waiting = False
            self._last = self._loop.time()

    def stop(self) -> None:
        """Drop the timer (the socket is gone)."""
        self._timer.cancel()


def _capped(receive: Any) -> Any:
    """``receive`` that fails a chunked body once it passes :data:`MAX_BODY_BYTES`."""
    seen = 0

    async def capped_receive() -> dict[str, Any]:
        nonlocal seen
        message = await receive()
        seen += len(message.get("body", b""))
        if seen > MAX_BODY_BYTES:
            raise ValueError(f"request body over the {MAX_BODY_BYTES}-byte limit")
        return message

    return capped_receive


async def _refuse(scope: dict[str, Any], send: Any, status: int, message: str) -> None:
    """Answer ``status`` with ``{"error": message}``; a WebSocket is refused at its handshake."""
    body = json.dumps({"error": message}).encode()
    head = {"type": "http.response.start", "status": status,
            "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]}
    if scope["type"] == "http":
        await send(head)
        await send({"type": "http.response.body", "body": body})
    elif "websocket.http.response" in scope.get("extensions", {}):
        await send({**head, "type": "websocket.http.response.start"})
        await send({"type": "websocket.http.response.body", "body": body})
    else:
        await send({"type": "websocket.close", "code": 1008, "reason": message[:120]})


async def _policy_refusal(request: Request, exc: PolicyError) -> JSONResponse:
    """A refusal on the HTTP routes (``/reset``, ``/step``) answered with its status and ``{"error": message}``;
    OpenEnv answers any exception the environment raises there with a bare 500."""
    return JSONResponse({"error": str(exc)}, status_code=exc.status)


def build_app(settings: ServerSettings | None = None, *, max_sessions: int = 256,
              idle_timeout_s: float = 600.0) -> ClientGate:
    """The served ASGI app: OpenEnv's ``create_app`` over :class:`TextGameEnvironment`, inside :class:`ClientGate`."""
    settings = settings or ServerSettings()
    if settings.metadata is None:
        settings = dataclasses.replace(settings, metadata=server_metadata(settings.env))
    inner = create_app(
        functools.partial(TextGameEnvironment, settings), GameAction, GameObservation, env_name="ragen-envs",
        concurrency_config=ConcurrencyConfig(max_concurrent_envs=max_sessions, session_timeout=idle_timeout_s),
        state_cls=GameState,
    )
    inner.add_exception_handler(PolicyError, _policy_refusal)
    policy = settings.policy
    return ClientGate(inner, auth_token=policy.auth_token, max_connections=policy.max_connections,
                      max_sessions_per_client=policy.max_sessions_per_client, idle_timeout_s=idle_timeout_s)


def serve(app: Any, sock: socket.socket, *, verbose: bool = False) -> None:
    """Serve ``app`` on the bound ``sock`` until interrupted, with the settings measured fastest per turn
    (benchmarks/bench_openenv.py, which serves OpenEnv's echo environment through this too):

    - uvloop where installed (the ``[openenv]`` extra installs it), else asyncio's loop;
    - the ``websockets`` library's sans-I/O protocol;
    - no per-message deflate: OpenEnv's client offers it and uvicorn accepts it by default, and
      compressing each answer and inflating each request cost about 50 us of CPU a turn (more than a
      game turn); on loopback and in a data centre the bytes are cheap;
    - Python's collector tuned: every turn allocates many short-lived objects (pydantic envelopes, JSON),
      and with hundreds of sessions alive the default thresholds re-scanned them all so often that it
      cost more than the turns themselves. Startup objects are frozen out of the scans and the youngest
      generation is collected every 100,000 allocations, not 700 (most of a turn's objects are freed by
      reference counting before then; at 20,000 the collector still cost about 10-15 us a turn).
    """
    config = uvicorn.Config(app, log_level="info" if verbose else "warning", access_log=verbose,
                            ws_max_size=MAX_BODY_BYTES, backlog=2048, timeout_keep_alive=30, loop="auto",
                            ws="websockets-sansio", ws_per_message_deflate=False)
    gc.collect()
    gc.freeze()
    gc.set_threshold(100_000, 20, 20)
    try:
        uvicorn.Server(config).run(sockets=[sock])
    except KeyboardInterrupt:
        pass


@functools.cache
def _default_app() -> ClientGate:
    return build_app()


def __getattr__(name: str) -> Any:
    # `app` is built on first use, so importing this module (for build_app) builds nothing.
    if name == "app":
        return _default_app()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
