"""``ragen-eval serve``: any agent behind an OpenAI-compatible HTTP API, with fault injection.

The server answers ``POST /v1/chat/completions`` and ``GET /v1/models`` the way OpenAI, vLLM and
llama.cpp do, so the whole HTTP path of the harness (the ``openai`` client, retries, timeouts,
concurrency) can be run and tested on loopback without a model hub or an API key. Agents:

* ``random``: a uniformly random valid action each turn (:class:`ragen_eval.agents.chat_policies.ChatRandomAgent`);
* ``oracle``: optimal play, reconstructed from the observation text in the chat
  (:class:`ragen_eval.agents.chat_policies.ChatOracleAgent`);
* ``default``: the checkpoint embedded in the package (:mod:`ragen_eval.embedded_model`), through :class:`HFAgent`;
* ``PATH``: a local ``transformers`` checkpoint directory, served through :class:`HFAgent`.

Faults are injected per request, each with its own probability, drawn from a private RNG seeded by
``--fault-seed``: HTTP 500, HTTP 429 with ``Retry-After``, a stall longer than any client timeout,
a 200 whose body is not JSON, a 200 with no choices, a connection dropped halfway through the body,
and garbage model output (random bytes, 100 KB of text, fake tags). ``--poison-rate`` makes a
fixed fraction of *prompts* fail every time, to check that a request that keeps failing ends its
episode, not the run. The built-in agents answer as a pure function of the request, so a retried
request gets the same answer and a run through faults scores exactly like a clean run.

Usage::

    ragen-eval serve --agent random --port 8000 --latency 0.2
    python -m ragen_eval.serve --agent oracle --port 0      # port 0: pick a free one

The first line on stdout is ``ragen-eval serve: listening on http://HOST:PORT/v1``; a parent
process reads the port from it.

``--api-key-env NAME`` makes every ``/v1`` route require the key held in that variable, as a bearer
token or as the password of HTTP Basic auth (``http://user:KEY@host/v1``); ``/health`` stays open.
Binding beyond loopback (``--host 0.0.0.0``) needs ``--api-key-env``, as every server of the project
(clients are assumed hostile; an agent costs compute); without it the command exits 2 before binding.
Agents answer off the event loop (the built-in ones on worker threads), so a slow request never holds
up ``/health`` or others.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import binascii
import hashlib
import hmac
import json
import math
import os
import random
import re
import sys
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any

from aiohttp import web

from ragen_envs.server.policy import is_loopback
from ragen_envs.text.episode import content_text

from ragen_eval.agents.base import Agent, Completion, SamplingParams, UnsupportedInputError
from ragen_eval.agents.chat_policies import ChatOracleAgent, ChatRandomAgent
from ragen_eval.agents.hf_agent import HFAgent
from ragen_eval.embedded_model import resolve_model_path

if TYPE_CHECKING:
    import threading

LISTENING_PREFIX = "ragen-eval serve: listening on "
_TOKEN_RE = re.compile(r"\w+|[^\w\s]", re.UNICODE)


@dataclass(frozen=True)
class ServeConfig:
    """What ``ragen-eval serve`` serves and which faults it injects (rates are per-request probabilities)."""

    agent: str = "random"  # random | oracle | default (the embedded checkpoint) | a checkpoint directory
    host: str = "127.0.0.1"
    port: int = 8000
    model_name: str | None = None  # the id /v1/models reports; defaults to the agent
    latency: float = 0.0  # seconds added to every answered request
    latency_jitter: float = 0.0  # +- uniform seconds around latency
    failure_rate: float = 0.0  # HTTP 500
    rate_limit_rate: float = 0.0  # HTTP 429 with Retry-After
    retry_after: float = 1.0  # seconds sent in Retry-After
    stall_rate: float = 0.0  # hold the request for stall_seconds (past any sane client timeout)
    stall_seconds: float = 3600.0
    malformed_rate: float = 0.0  # 200 with a body that is not JSON
    empty_choices_rate: float = 0.0  # 200 with "choices": []
    drop_rate: float = 0.0  # close the connection halfway through the body
    garbage_rate: float = 0.0  # a valid response whose text is garbage
    poison_rate: float = 0.0  # this fraction of prompts (by content hash) always gets HTTP 500
    reasoning_field: bool = False  # move <think> text into message.reasoning_content, as reasoning models do
    fault_seed: int = 0
    device: str = "cpu"  # for checkpoint agents
    api_key_env: str | None = None  # name of the variable holding the key clients must send; None: no key

    def __post_init__(self) -> None:
        for name in ("failure_rate", "rate_limit_rate", "stall_rate", "malformed_rate", "empty_choices_rate",
                     "drop_rate", "garbage_rate", "poison_rate"):
            value = getattr(self, name)
            if not 0.0 <= value <= 1.0:
                raise ValueError(f"--{name.replace('_', '-')} must be a probability in [0, 1], got {value!r}")
        total = sum(self.fault_rates().values())
        if total > 1.0 + 1e-9:
            raise ValueError(f"the request fault rates add up to {total:g}; they are exclusive and must sum to <= 1")
        for name in ("latency", "latency_jitter", "retry_after", "stall_seconds"):
            if not 0.0 <= getattr(self, name) < math.inf:  # "inside the range", so nan is refused like -1 and inf
                raise ValueError(f"--{name.replace('_', '-')} must be a finite number >= 0, "
                                 f"got {getattr(self, name)!r}")
        if not 0 <= self.port <= 65535:
            raise ValueError(f"--port must be in 0..65535, got {self.port}")
        if self.api_key_env is not None and not self.api_key_env:
            raise ValueError("--api-key-env must name an environment variable")
        if not self.loopback_only and self.api_key_env is None:  # every server of the project: clients are hostile
            raise ValueError(f"--host {self.host or repr(self.host)} makes the server reachable beyond this machine: "
                             "require a key with --api-key-env NAME (the key in environment variable NAME)")

    def api_key(self) -> str | None:
        """The key clients must send, read from ``api_key_env`` now; ValueError if that variable is unset or empty."""
        if self.api_key_env is None:
            return None
        key = os.environ.get(self.api_key_env, "")
        if not key:
            raise ValueError(f"--api-key-env {self.api_key_env}: that environment variable is unset or empty")
        return key

    @property
    def loopback_only(self) -> bool:
        """Whether ``host`` is reachable from this machine only (the env servers' rule)."""
        return is_loopback(self.host)

    def fault_rates(self) -> dict[str, float]:
        """The mutually exclusive per-request faults and their probabilities, in the order they are drawn."""
        return {
            "drop": self.drop_rate,
            "stall": self.stall_rate,
            "rate_limit": self.rate_limit_rate,
            "failure": self.failure_rate,
            "malformed": self.malformed_rate,
            "empty_choices": self.empty_choices_rate,
        }

    @property
    def served_model(self) -> str:
        """The model id reported by the server."""
        return self.model_name or self.agent


def count_tokens(text: str) -> int:
    """A model-free token count (words and punctuation marks), used for ``usage`` and ``max_tokens``."""
    return len(_TOKEN_RE.findall(text))


def truncate_to_tokens(text: str, max_tokens: int) -> tuple[str, bool]:
    """``text`` cut after ``max_tokens`` tokens (as :func:`count_tokens` counts them) and whether it was cut."""
    for i, match in enumerate(_TOKEN_RE.finditer(text)):
        if i == max_tokens:
            return text[: match.start()], True
    return text, False


def garbage_text(rng: random.Random) -> str:
    """Output a broken model might produce: random bytes, 100 KB of text, or tags that only look right."""
    kind = rng.randrange(5)
    if kind == 0:
        return bytes(rng.randrange(256) for _ in range(rng.randrange(1, 400))).decode("utf-8", errors="replace")
    if kind == 1:
        return "".join(rng.choice("abc <>/|\n") for _ in range(100_000))
    if kind == 2:
        return "<answer>Up</think><think>Left || Down</answer></answer><answer><answer>"
    if kind == 3:
        return "<think>" + "<think>" * 50 + "</answer>" * 50 + "\x00\ufeff\u202e"
    return ""


def make_server_agent(config: ServeConfig) -> Agent:
    """The agent named by ``config.agent``: a built-in chat policy or a checkpoint directory."""
    if config.agent == "random":
        return ChatRandomAgent()
    if config.agent == "oracle":
        return ChatOracleAgent()
    path = Path(resolve_model_path(config.agent))
    if not path.is_dir():
        raise ValueError(f"--agent must be 'random', 'oracle', 'default' or a checkpoint directory; "
                         f"{config.agent!r} is none")
    return HFAgent(str(path), device=config.device)


class _Error(Exception):
    """A request the server refuses, with its HTTP status and OpenAI-style error body."""

    def __init__(self, status: int, message: str, kind: str = "invalid_request_error") -> None:
        super().__init__(message)
        self.status = status
        self.kind = kind


def _error_response(status: int, message: str, kind: str, headers: dict[str, str] | None = None) -> web.Response:
    body = {"error": {"message": message, "type": kind, "param": None, "code": status}}
    return web.json_response(body, status=status, headers=headers)


#: The most image parts one request may carry (the body's size is capped as well).
MAX_IMAGES = 64


def _content_parts(parts: list[Any], i: int) -> list[dict[str, Any]]:
    """The text and image parts of ``messages[i].content``, checked; an image must be a ``data:image/`` URL
    (the server fetches nothing)."""
    kept: list[dict[str, Any]] = []
    for j, part in enumerate(parts):
        if not isinstance(part, dict):
            raise _Error(400, f"messages[{i}].content[{j}] must be an object")
        if part.get("type") == "text":
            if not isinstance(part.get("text"), str):
                raise _Error(400, f"messages[{i}].content[{j}].text must be a string, got {part.get('text')!r:.80}")
            kept.append({"type": "text", "text": part["text"]})
        elif part.get("type") == "image_url":
            image = part.get("image_url")
            url = image.get("url") if isinstance(image, dict) else None
            if not isinstance(url, str) or not url.startswith("data:image/"):
                raise _Error(400, f"messages[{i}].content[{j}].image_url.url must be a data:image/ URL; "
                                  "the server fetches nothing")
            kept.append({"type": "image_url", "image_url": {"url": url}})
    return kept


def _parse_request(body: Any) -> tuple[list[dict[str, str]], int, SamplingParams]:
    """Validate a chat-completions body; return messages, n and sampling, or raise :class:`_Error`."""
    if not isinstance(body, dict):
        raise _Error(400, "the request body must be a JSON object")
    if not isinstance(body.get("stream", False), (bool, type(None))):
        raise _Error(400, f"'stream' must be true or false, got {body['stream']!r}")
    options = body.get("stream_options")
    if options is not None and not isinstance(options, dict):
        raise _Error(400, f"'stream_options' must be an object, got {options!r}")
    raw = body.get("messages")
    if not isinstance(raw, list) or not raw:
        raise _Error(400, "'messages' must be a non-empty list")
    messages = []
    images = 0
    for i, message in enumerate(raw):
        if not isinstance(message, dict) or not isinstance(message.get("role"), str):
            raise _Error(400, f"messages[{i}] must be an object with a string 'role'")
        content = message.get("content")
        if isinstance(content, list):  # content parts: text and images; other kinds are dropped
            content = _content_parts(content, i)
            images += sum(part["type"] == "image_url" for part in content)
            if images > MAX_IMAGES:
                raise _Error(400, f"a request may carry at most {MAX_IMAGES} images")
            if all(part["type"] == "text" for part in content):
                content = "".join(part["text"] for part in content)
        if content is None:
            content = ""
        if not isinstance(content, (str, list)):
            raise _Error(400, f"messages[{i}].content must be a string or a list of content parts")
        messages.append({"role": message["role"], "content": content})
    n = body.get("n", 1)
    if not isinstance(n, int) or isinstance(n, bool) or not 1 <= n <= 128:
        raise _Error(400, f"'n' must be an integer in 1..128, got {n!r}")
    max_tokens = body.get("max_completion_tokens", body.get("max_tokens", 400))
    if max_tokens is None:
        max_tokens = 400
    if not isinstance(max_tokens, int) or isinstance(max_tokens, bool) or max_tokens < 1:
        raise _Error(400, f"'max_tokens' must be a positive integer, got {max_tokens!r}")
    numbers = {}
    for key, default in (("temperature", 1.0), ("top_p", 1.0)):
        value = body.get(key, default)
        value = default if value is None else value
        if not isinstance(value, (int, float)) or isinstance(value, bool) or not 0 <= value < math.inf:
            raise _Error(400, f"'{key}' must be a finite number >= 0, got {value!r}")
        numbers[key] = float(value)
    seed = body.get("seed")
    if seed is not None and (not isinstance(seed, int) or isinstance(seed, bool)):
        raise _Error(400, f"'seed' must be an integer, got {seed!r}")
    sampling = SamplingParams(temperature=numbers["temperature"], top_p=numbers["top_p"], max_tokens=max_tokens,
                              seed=seed)
    return messages, n, sampling


def _prompt_fraction(messages: list[dict[str, str]]) -> float:
    """A number in [0, 1) fixed by the messages' content, so poisoning picks the same prompts every time."""
    digest = hashlib.sha256(json.dumps(messages, sort_keys=True).encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


def _sse_events(payload: dict[str, Any], include_usage: bool) -> bytes:
    """``payload`` (a chat completion) as the server-sent events of a streamed one, ended by ``[DONE]``.

    Each choice comes whole in one ``chat.completion.chunk`` (the answer exists before the first byte is
    sent, so finer chunks would only cost time); ``usage`` follows in a chunk without choices when the
    request's ``stream_options.include_usage`` asks for it, as OpenAI sends it.
    """
    head = {key: payload[key] for key in ("id", "created", "model")}
    chunks = [{**head, "object": "chat.completion.chunk",
               "choices": [{"index": choice["index"], "delta": choice["message"],
                            "finish_reason": choice["finish_reason"], "logprobs": None}]}
              for choice in payload["choices"]]
    if include_usage:
        chunks.append({**head, "object": "chat.completion.chunk", "choices": [], "usage": payload["usage"]})
    return b"".join(b"data: " + json.dumps(chunk).encode() + b"\n\n" for chunk in chunks) + b"data: [DONE]\n\n"


_THINK_RE = re.compile(r"<think>(.*?)</think>", re.DOTALL | re.IGNORECASE)


class ChatCompletionServer:
    """The aiohttp application: routes, fault injection and the agent it serves."""

    def __init__(self, config: ServeConfig, agent: Agent, api_key: str | None = None) -> None:
        self.config = config
        self.agent = agent
        self.api_key = api_key
        self._rng = random.Random(config.fault_seed)
        self.counts: dict[str, int] = {"requests": 0, "answered": 0, "poisoned": 0, "garbage": 0,
                                       **{name: 0 for name in config.fault_rates()}}

    def app(self) -> web.Application:
        """A fresh aiohttp application bound to this server."""
        app = web.Application(client_max_size=64 * 1024**2, middlewares=[self._check_key])
        app.router.add_post("/v1/chat/completions", self.chat_completions)
        app.router.add_get("/v1/models", self.models)
        app.router.add_get("/health", self.health)
        app.router.add_get("/v1/stats", self.stats)
        return app

    @web.middleware
    async def _check_key(self, request: web.Request, handler: Any) -> web.StreamResponse:
        """401 for a ``/v1`` request without the key (bearer token or Basic password), when a key is set."""
        if self.api_key is None or not request.path.startswith("/v1"):
            return await handler(request)
        scheme, _, credential = request.headers.get("Authorization", "").partition(" ")
        if scheme.lower() == "basic":
            try:
                credential = base64.b64decode(credential, validate=True).decode("utf-8").partition(":")[2]
            except (binascii.Error, UnicodeDecodeError):
                credential = ""
        elif scheme.lower() != "bearer":
            credential = ""
        if not hmac.compare_digest(credential.encode(), self.api_key.encode()):
            return _error_response(401, "a valid API key is required (Authorization: Bearer KEY)",
                                   "authentication_error")
        return await handler(request)

    async def health(self, request: web.Request) -> web.Response:
        """Liveness probe."""
        return web.json_response({"status": "ok"})

    async def stats(self, request: web.Request) -> web.Response:
        """How many requests arrived and which faults were injected (for tests and demos)."""
        return web.json_response(self.counts)

    async def models(self, request: web.Request) -> web.Response:
        """``GET /v1/models``: the one model served."""
        entry = {"id": self.config.served_model, "object": "model", "created": 0, "owned_by": "ragen-eval"}
        return web.json_response({"object": "list", "data": [entry]})

    def _draw_fault(self) -> str | None:
        u = self._rng.random()
        for name, rate in self.config.fault_rates().items():
            if u < rate:
                return name
            u -= rate
        return None

    async def chat_completions(self, request: web.Request) -> web.StreamResponse:
        """``POST /v1/chat/completions``."""
        self.counts["requests"] += 1
        try:
            body = json.loads(await request.read())
        except (json.JSONDecodeError, UnicodeDecodeError, RecursionError) as exc:
            return _error_response(400, f"the request body is not valid JSON: {exc}", "invalid_request_error")
        try:
            messages, n, sampling = _parse_request(body)
        except _Error as exc:
            return _error_response(exc.status, str(exc), exc.kind)

        cfg = self.config
        fault = self._draw_fault()
        garbage = self._rng.random() < cfg.garbage_rate
        delay = cfg.latency + (self._rng.uniform(-cfg.latency_jitter, cfg.latency_jitter) if cfg.latency_jitter else 0)
        if fault is not None:
            self.counts[fault] += 1
        if fault == "stall":
            await asyncio.sleep(cfg.stall_seconds)
        if fault == "rate_limit":
            return _error_response(429, "rate limit reached (injected)", "rate_limit_error",
                                   headers={"Retry-After": f"{cfg.retry_after:g}"})
        if fault == "failure":
            return _error_response(500, "internal server error (injected)", "server_error")
        if cfg.poison_rate and _prompt_fraction(messages) < cfg.poison_rate:
            self.counts["poisoned"] += 1
            return _error_response(500, "this prompt always fails (injected poison)", "server_error")
        if delay > 0:
            await asyncio.sleep(delay)

        try:
            completions = await self.agent.act(messages, n=n, sampling=sampling)
        except UnsupportedInputError as exc:  # the request, not the server, is at fault: a 400 is not retried
            return _error_response(400, str(exc), "invalid_request_error")
        except Exception as exc:  # a broken agent is the server's fault: 500, which clients retry
            return _error_response(500, f"the served agent failed: {type(exc).__name__}: {exc}", "server_error")
        if garbage:
            self.counts["garbage"] += 1
            completions = [Completion(text=garbage_text(self._rng)) for _ in completions]
        payload = self._render(messages, completions, sampling, fault == "empty_choices")
        stream = bool(body.get("stream"))
        data = _sse_events(payload, bool((body.get("stream_options") or {}).get("include_usage"))) if stream \
            else json.dumps(payload).encode()
        if fault == "malformed":
            data = data[: len(data) // 2] + b"<html>502 Bad Gateway</html>"
        content_type = "text/event-stream" if stream else "application/json"
        if fault == "drop":
            return await self._drop_midway(request, data, content_type)
        if fault is None:
            self.counts["answered"] += 1  # well-formed answers only
        return web.Response(body=data, content_type=content_type)

    async def _drop_midway(self, request: web.Request, data: bytes, content_type: str) -> web.StreamResponse:
        """Promise the whole body, send half of it, then cut the connection."""
        response = web.StreamResponse(headers={"Content-Type": content_type, "Content-Length": str(len(data))})
        await response.prepare(request)
        await response.write(data[: len(data) // 2])
        if request.transport is not None:
            request.transport.abort()
        return response

    def _render(self, messages: list[dict[str, str]], completions: list[Completion], sampling: SamplingParams,
                empty: bool) -> dict[str, Any]:
        """The chat-completion JSON for ``completions`` with ``usage`` filled in.

        Text from an agent that counts its own tokens (a model) is passed through; text from one that
        does not (the built-in policies, injected garbage) is cut to ``max_tokens`` by :func:`count_tokens`.
        """
        choices = []
        completion_tokens = reasoning_tokens = 0
        for index, completion in enumerate(completions):
            if completion.completion_tokens is None:  # a built-in policy: enforce max_tokens by our count
                text, cut = truncate_to_tokens(completion.text, sampling.max_tokens)
            else:  # a model backend already stopped at max_tokens of its own tokens
                text, cut = completion.text, False
            finish = "length" if cut else (completion.finish_reason or "stop")
            message: dict[str, Any] = {"role": "assistant", "content": text}
            if self.config.reasoning_field:
                thoughts = _THINK_RE.findall(text)
                message["content"] = _THINK_RE.sub("", text).strip()
                message["reasoning_content"] = "\n".join(t.strip() for t in thoughts)
                reasoning_tokens += count_tokens(message["reasoning_content"])
            used = completion.completion_tokens
            completion_tokens += used if used is not None else count_tokens(text)
            choices.append({"index": index, "message": message, "finish_reason": finish, "logprobs": None})
        prompt_tokens = completions[0].prompt_tokens if completions and completions[0].prompt_tokens else sum(
            count_tokens(content_text(m["content"])) for m in messages)
        usage: dict[str, Any] = {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                                 "total_tokens": prompt_tokens + completion_tokens}
        if self.config.reasoning_field:
            usage["completion_tokens_details"] = {"reasoning_tokens": reasoning_tokens}
        return {
            "id": f"chatcmpl-{uuid.uuid4().hex[:24]}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": self.config.served_model,
            "choices": [] if empty else choices,
            "usage": usage,
        }


async def run_server(config: ServeConfig, agent: Agent | None = None, *, ready: threading.Event | None = None,
                     bound: list[int] | None = None, stop: asyncio.Event | None = None) -> None:
    """Serve until ``stop`` is set (or forever); print the listening line once the socket is bound."""
    api_key = config.api_key()  # before the agent loads: a missing key is an error in the command
    server = ChatCompletionServer(config, agent if agent is not None else make_server_agent(config), api_key)
    runner = web.AppRunner(server.app(), handler_cancellation=True, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, config.host, config.port, backlog=1024, reuse_address=True)
    await site.start()
    port = runner.addresses[0][1]
    if bound is not None:
        bound.append(port)
    print(f"{LISTENING_PREFIX}http://{config.host}:{port}/v1", flush=True)
    if not config.loopback_only:  # which ServeConfig allows only with a key
        print(f"ragen-eval serve: bound to {config.host}, beyond loopback: requests need the API key in "
              f"${config.api_key_env}", file=sys.stderr, flush=True)
    if ready is not None:
        ready.set()
    try:
        await (stop.wait() if stop is not None else asyncio.Event().wait())
    finally:
        await runner.cleanup()
        await server.agent.aclose()


@contextmanager
def serve_in_thread(config: ServeConfig, agent: Agent | None = None) -> Iterator[str]:
    """Run a server on a background thread (its own event loop) and yield its base URL; stop it on exit."""
    import threading

    loop = asyncio.new_event_loop()
    ready, bound, stop = threading.Event(), [], asyncio.Event()
    failure: list[BaseException] = []

    def target() -> None:
        asyncio.set_event_loop(loop)
        try:
            loop.run_until_complete(run_server(config, agent, ready=ready, bound=bound, stop=stop))
        except BaseException as exc:  # surfaced to the caller below
            failure.append(exc)
            ready.set()
        finally:
            loop.close()

    thread = threading.Thread(target=target, name="ragen-eval-serve", daemon=True)
    thread.start()
    ready.wait(timeout=60)
    if failure or not bound:
        raise RuntimeError(f"ragen-eval serve did not start: {failure[0] if failure else 'timed out'}")
    try:
        yield f"http://{config.host}:{bound[0]}/v1"
    finally:
        loop.call_soon_threadsafe(stop.set)
        thread.join(timeout=30)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the ``serve`` options to ``parser`` (used by ``ragen-eval serve`` and ``python -m ragen_eval.serve``)."""
    d = ServeConfig()
    parser.add_argument("--agent", default=d.agent,
                        help="random | oracle | default (the embedded checkpoint) | a transformers checkpoint directory")
    parser.add_argument("--host", default=d.host,
                        help="interface to bind (default: loopback only); beyond loopback, --api-key-env is required")
    parser.add_argument("--port", type=int, default=d.port, help="TCP port; 0 picks a free one")
    parser.add_argument("--model-name", default=None, help="model id reported by /v1/models (default: the agent)")
    parser.add_argument("--device", default=d.device, help="torch device for a checkpoint agent")
    parser.add_argument("--latency", type=float, default=d.latency, help="seconds added to every answered request")
    parser.add_argument("--latency-jitter", type=float, default=d.latency_jitter,
                        help="uniform +- seconds around --latency")
    parser.add_argument("--failure-rate", type=float, default=d.failure_rate, help="probability of an HTTP 500")
    parser.add_argument("--rate-limit-rate", type=float, default=d.rate_limit_rate,
                        help="probability of an HTTP 429 with Retry-After")
    parser.add_argument("--retry-after", type=float, default=d.retry_after, help="seconds sent in Retry-After")
    parser.add_argument("--stall-rate", type=float, default=d.stall_rate,
                        help="probability that a request hangs for --stall-seconds")
    parser.add_argument("--stall-seconds", type=float, default=d.stall_seconds, help="length of a stall")
    parser.add_argument("--malformed-rate", type=float, default=d.malformed_rate,
                        help="probability of a 200 whose body is not JSON")
    parser.add_argument("--empty-choices-rate", type=float, default=d.empty_choices_rate,
                        help="probability of a 200 with no choices")
    parser.add_argument("--drop-rate", type=float, default=d.drop_rate,
                        help="probability that the connection is cut halfway through the body")
    parser.add_argument("--garbage-rate", type=float, default=d.garbage_rate,
                        help="probability that the model text is replaced by garbage (bytes, 100 KB, fake tags)")
    parser.add_argument("--poison-rate", type=float, default=d.poison_rate,
                        help="fraction of prompts (chosen by content hash) that fail with HTTP 500 every time")
    parser.add_argument("--reasoning-field", action="store_true",
                        help="return <think> text in message.reasoning_content, as reasoning models do")
    parser.add_argument("--fault-seed", type=int, default=d.fault_seed, help="seed of the fault-injection RNG")
    parser.add_argument("--api-key-env", default=None, metavar="NAME",
                        help="require the key held in this environment variable on /v1 routes "
                             "(bearer token or Basic-auth password); default: no key")


def config_from_args(args: argparse.Namespace) -> ServeConfig:
    """A :class:`ServeConfig` from parsed ``serve`` arguments (extra attributes are ignored)."""
    names = {f.name for f in fields(ServeConfig)}
    return ServeConfig(**{k: v for k, v in vars(args).items() if k in names})


async def _serve_until_signalled(config: ServeConfig) -> None:
    """Serve until SIGTERM or SIGINT, then shut down cleanly (close connections, release the model)."""
    import signal

    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    await run_server(config, stop=stop)


def main(args: argparse.Namespace) -> int:
    """Run the server in the foreground until interrupted; returns the process exit code."""
    try:
        config = config_from_args(args)
        config.api_key()  # fail now, with the other argument errors, if the key's variable is unset
    except ValueError as exc:
        print(f"ragen-eval serve: error: {exc}", file=sys.stderr)
        return 2
    print(f"ragen-eval serve: {json.dumps({k: v for k, v in asdict(config).items() if v != getattr(ServeConfig(), k)})}",
          file=sys.stderr, flush=True)
    try:
        asyncio.run(_serve_until_signalled(config))
    except KeyboardInterrupt:
        pass
    except ValueError as exc:
        print(f"ragen-eval serve: error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    _parser = argparse.ArgumentParser(prog="python -m ragen_eval.serve", description=__doc__.split("\n\n")[0],
                                      allow_abbrev=False)
    add_arguments(_parser)
    sys.exit(main(_parser.parse_args()))
