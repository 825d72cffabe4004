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
import json
from collections import Counter
from importlib import resources
from typing import Any

from openenv.core.env_server.http_server import create_app
from openenv.core.env_server.types import ConcurrencyConfig, EnvironmentMetadata

from ragen_envs.openenv_server.environment import GameAction, GameObservation, GameState, ServerSettings, \
    TextGameEnvironment
from ragen_envs.server.policy import token_matches

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
        else:
            receive = self._idle_closing(receive, send)
        self.open += 1
        if socket:
            self.sockets_per_client[client] += 1
        try:
            await self.app(scope, receive, send)
        finally:
            self.open -= 1
            if socket:
                self.sockets_per_client[client] -= 1
                if not self.sockets_per_client[client]:
                    del self.sockets_per_client[client]

    def _idle_closing(self, receive: Any, send: Any) -> Any:
        """``receive`` that closes the socket after ``idle_timeout_s`` without a message, and tells the app
        the client left, so OpenEnv tears its session down and the slot is free again."""
        timeout = self.idle_timeout_s

        async def idle_receive() -> dict[str, Any]:
            try:
                return await asyncio.wait_for(receive(), timeout)
            except asyncio.TimeoutError:
                await send({"type": "websocket.close", "code": 1001, "reason": f"idle for {timeout:g}s"})
                return {"type": "websocket.disconnect", "code": 1001}

        return idle_receive


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
    policy = settings.policy
    return ClientGate(inner, auth_token=policy.auth_token, max_connections=policy.max_connections,
                      max_sessions_per_client=policy.max_sessions_per_client, idle_timeout_s=idle_timeout_s)


@functools.cache
def _default_app() -> ClientGate:
    return build_app()


def __getattr__(name: str) -> Any:
    # `app` is built on first use, so importing this module (for build_app) builds nothing.
    if name == "app":
        return _default_app()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
