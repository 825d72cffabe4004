"""An agent that talks to any OpenAI-compatible chat-completions endpoint.

OpenAI itself, vLLM's server, llama.cpp, Ollama, SGLang and ``ragen-eval serve`` all speak the
same ``/v1/chat/completions`` API, so one client covers them. The agent owns everything that makes
a long evaluation survive a flaky network: bounded concurrency, a per-request timeout, retries with
exponential backoff and full jitter that honour ``Retry-After``, and an optional request-rate cap.

What is retried and what is not:

* retried: HTTP 408, 409, 429, 500, 502-504 and the 52x/529 codes of CDNs and overloaded APIs,
  timeouts, refused and dropped connections, bodies that are not valid JSON (or nested too deeply to
  read), and responses with no choices. These are the provider's problems, not the model's.
* not retried: other 4xx (a bad key or an unknown model will not fix itself), and a response cut
  off by the length limit (``finish_reason == "length"``): that is the model's answer, which the
  text protocol scores as a format error ("truncated").

``timeout`` bounds the whole request, from sending it to the last byte of the body, so a server
that trickles bytes cannot hold a request longer than a silent one (the transports' own timeouts
only bound the wait for each read).

When a request fails for good the agent returns ``Completion(text="", error=...)`` rather than
raising, so the runner ends that one episode with a recorded error and the run goes on.
"""

from __future__ import annotations

import asyncio
import email.utils
import json
import math
import random
import time
from typing import TYPE_CHECKING, Any

import httpx
import openai

from ragen_eval.agents.base import Completion, SamplingParams, require_replies
from ragen_eval.redaction import check_base_url, mask_secrets, redact_url, split_endpoint

if TYPE_CHECKING:
    from ragen_envs.text import TextEpisode

#: Status codes that say "try again later" rather than "this request is wrong".
RETRYABLE_STATUS = frozenset({408, 409, 429, 500, 502, 503, 504, 520, 521, 522, 523, 524, 529})


#: Connections per pool; an endpoint gets ``ceil(concurrency / POOL_CONNECTIONS)`` pools.
POOL_CONNECTIONS = 8


HTTP_BACKENDS = ("auto", "httpx", "aiohttp")


def _make_http_client(backend: str, concurrency: int, timeout: float) -> tuple[Any, str]:
    """An HTTP client for ``AsyncOpenAI`` and the transport it uses (``aiohttp`` or ``httpx``)."""
    if backend not in HTTP_BACKENDS:
        raise ValueError(f"http_backend must be one of {HTTP_BACKENDS}, got {backend!r}")
    if backend in ("auto", "aiohttp"):
        # openai ships the aiohttp transport (vendored in 3.x, the ``aiohttp`` extra in 1.x); without
        # it the class exists but raises RuntimeError when built.
        factory = getattr(openai, "DefaultAioHttpClient", None)
        try:
            if factory is None:
                raise RuntimeError(f"openai {openai.__version__} has no DefaultAioHttpClient")
            return factory(timeout=timeout), "aiohttp"
        except (RuntimeError, ImportError) as exc:
            if backend == "aiohttp":
                raise ValueError(f"http_backend='aiohttp' is unavailable ({exc}); "
                                 "pip install 'openai[aiohttp]' or use 'httpx'") from exc
    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=POOL_CONNECTIONS)
    # Redirects are followed as openai's own client and the aiohttp transport do (httpx drops the
    # Authorization header when a redirect leaves the origin).
    return httpx.AsyncClient(limits=limits, timeout=timeout, follow_redirects=True), "httpx"


def _closed_by_server(error: BaseException) -> bool:
    """Whether ``error`` is aiohttp's word for a connection the server closed (not a timeout): openai's aiohttp
    transport maps it to a connect timeout, which would report a dropped connection as one."""
    try:
        import aiohttp
    except ImportError:  # no aiohttp, no aiohttp transport
        return False
    return isinstance(error, aiohttp.ClientConnectionError) and not isinstance(error, TimeoutError)


class _Pool:
    """One ``AsyncOpenAI`` client (one httpx connection pool) and the requests it has in flight."""

    def __init__(self, client: openai.AsyncOpenAI) -> None:
        self.client = client
        self.in_flight = 0


class RequestRateLimiter:
    """Spaces request starts at least ``1 / requests_per_second`` apart (an async, per-agent limiter)."""

    def __init__(self, requests_per_second: float) -> None:
        if not requests_per_second > 0:
            raise ValueError(f"requests_per_second must be positive, got {requests_per_second!r}")
        self.interval = 1.0 / float(requests_per_second)
        self._next_start = 0.0
        self._lock = asyncio.Lock()

    async def wait(self) -> None:
        """Return when the next request may start."""
        async with self._lock:
            now = time.monotonic()
            start = max(now, self._next_start)
            self._next_start = start + self.interval
        if start > now:
            await asyncio.sleep(start - now)


def parse_retry_after(headers: httpx.Headers | None) -> float | None:
    """Seconds to wait from ``retry-after-ms`` or ``Retry-After`` (seconds or an HTTP date), if present."""
    if headers is None:
        return None
    millis = headers.get("retry-after-ms")
    if millis is not None:
        try:
            return max(0.0, float(millis) / 1000.0)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


class OpenAIChatAgent:
    """Chat completions from one or more OpenAI-compatible base URLs, used round-robin.

    Args:
        model: the model name the endpoint expects (``gpt-4o-mini``, a vLLM served name, ...).
        base_urls: one or more endpoints such as ``http://127.0.0.1:8000/v1``; requests rotate over
            them, and a retry goes to the next one, so one dead server slows a run but does not stop it.
            User info in a URL (``http://user:KEY@host/v1``) is sent as HTTP Basic auth instead of the key,
            and a query (``https://host/v1?api_key=KEY``) is sent with every request.
        api_key: the key sent as a bearer token; ``None`` for local servers that ignore it. The agent
            never writes it anywhere (``describe()`` and ``repr`` leave it out).
        concurrency: the most requests in flight at once.
        timeout: seconds one HTTP request may take in all, body included, before it counts as failed
            (and is retried).
        max_retries: retries after the first attempt; ``max_retries + 1`` attempts in all.
        requests_per_second: optional cap on the rate at which requests start.
        backoff_initial: the first retry waits up to this many seconds (full jitter), doubling after.
        backoff_max: no backoff wait exceeds this, nor does an honoured ``Retry-After``.
        extra_body: extra JSON fields sent with every request (e.g. ``{"top_k": 20}`` for vLLM); they
            override the fields the agent sets.
        jitter_seed: seeds the jitter's private RNG, so retry timing is reproducible in tests.
        http_backend: the transport under the openai client: ``"aiohttp"`` (``openai.DefaultAioHttpClient``,
            about half the CPU per request of httpx), ``"httpx"``, or ``"auto"``: aiohttp when this openai
            install has it (vendored in openai 3.x, the ``openai[aiohttp]`` extra in 1.x), else httpx.
    """

    def __init__(
        self,
        model: str,
        base_urls: list[str] | str,
        api_key: str | None = None,
        concurrency: int = 32,
        timeout: float = 60.0,
        max_retries: int = 5,
        requests_per_second: float | None = None,
        *,
        backoff_initial: float = 0.5,
        backoff_max: float = 30.0,
        extra_body: dict[str, Any] | None = None,
        jitter_seed: int | None = None,
        http_backend: str = "auto",
    ) -> None:
        if not isinstance(model, str) or not model:
            raise ValueError(f"model must be a non-empty string, got {model!r}")
        urls = [base_urls] if isinstance(base_urls, str) else list(base_urls)
        if not urls:
            raise ValueError("base_urls is empty: give at least one endpoint such as http://127.0.0.1:8000/v1")
        for url in urls:
            check_base_url(url)
        if not isinstance(concurrency, int) or concurrency < 1:
            raise ValueError(f"concurrency must be an integer >= 1, got {concurrency!r}")
        if not timeout > 0:
            raise ValueError(f"timeout must be positive, got {timeout!r}")
        if not isinstance(max_retries, int) or max_retries < 0:
            raise ValueError(f"max_retries must be an integer >= 0, got {max_retries!r}")
        if backoff_initial < 0 or backoff_max < 0:
            raise ValueError("backoff_initial and backoff_max must be >= 0")
        self.name = model
        self.model = model
        self.base_urls = urls
        self.concurrency = concurrency
        self.timeout = float(timeout)
        self.max_retries = max_retries
        self.requests_per_second = requests_per_second
        self.backoff_initial = float(backoff_initial)
        self.backoff_max = float(backoff_max)
        self.extra_body = dict(extra_body or {})
        self._api_key = api_key  # kept only to mask it where a server echoes it into an error
        self._limiter = RequestRateLimiter(requests_per_second) if requests_per_second is not None else None
        self._semaphore = asyncio.Semaphore(concurrency)
        self._rng = random.Random(jitter_seed)
        self._next_url = 0
        first_client, self.http_backend = _make_http_client(http_backend, concurrency, self.timeout)
        # httpx: each endpoint gets several small connection pools instead of one big one, because
        # httpcore scans every connection of a pool on every request event (one pool of 64
        # connections costs several times the CPU of eight pools of 8; docs/benchmarks/eval.md).
        # aiohttp's connector has no such cost, so one client per endpoint serves.
        shards = 1 if self.http_backend == "aiohttp" else max(1, math.ceil(concurrency / POOL_CONNECTIONS))
        http_clients = [first_client] + [_make_http_client(self.http_backend, concurrency, self.timeout)[0]
                                         for _ in range(len(urls) * shards - 1)]
        endpoints = [split_endpoint(url) for url in urls]
        self._pools = [
            [_Pool(openai.AsyncOpenAI(
                base_url=url,
                default_query=query or None,  # the base URL's query, on every request
                api_key=api_key if api_key is not None else "EMPTY",
                max_retries=0,  # retries are ours: we rotate endpoints and honour Retry-After
                timeout=self.timeout,
                http_client=http_clients[u * shards + k],
                # Overrides the bearer key, as httpx's own handling of URL credentials would.
                default_headers={"Authorization": basic_auth} if basic_auth else None,
            )) for k in range(shards)]
            for u, (url, basic_auth, query) in enumerate(endpoints)
        ]
        #: Counters a caller may log: requests sent, retries made, requests that failed for good.
        self.stats = {"requests": 0, "retries": 0, "failures": 0}

    def __repr__(self) -> str:
        return f"OpenAIChatAgent(model={self.model!r}, base_urls={self.describe()['base_urls']!r})"

    def describe(self) -> dict[str, Any]:
        """What a run's config.json records about this agent: endpoints without secrets, limits."""
        return {
            "backend": "openai",
            "model": self.model,
            "base_urls": [redact_url(u) for u in self.base_urls],
            "concurrency": self.concurrency,
            "timeout": self.timeout,
            "max_retries": self.max_retries,
            "requests_per_second": self.requests_per_second,
            "http_backend": self.http_backend,
        }

    async def act(
        self,
        messages: list[dict[str, str]],
        *,
        n: int = 1,
        sampling: SamplingParams = SamplingParams(),
        episode: TextEpisode | None = None,
    ) -> list[Completion]:
        """Request ``n`` completions; on a permanent failure return ``n`` completions with ``error`` set."""
        require_replies(n)
        body: dict[str, Any] = {
            "model": self.model,
            "messages": messages,
            "temperature": sampling.temperature,
            "top_p": sampling.top_p,
            "max_tokens": sampling.max_tokens,
        }
        if n != 1:
            body["n"] = n
        if sampling.seed is not None:
            body["seed"] = sampling.seed
        body.update(self.extra_body)
        async with self._semaphore:
            return await self._request_with_retries(body, n)

    async def _request_with_retries(self, body: dict[str, Any], n: int) -> list[Completion]:
        last_error = ""
        for attempt in range(self.max_retries + 1):
            url_index = self._next_url % len(self._pools)
            pools = self._pools[url_index]
            self._next_url += 1
            pool = min(pools, key=lambda p: p.in_flight)
            if self._limiter is not None:
                await self._limiter.wait()
            self.stats["requests"] += 1
            retry_after: float | None = None
            pool.in_flight += 1
            try:
                # The generic ``post`` of the openai client (auth, base URL, timeouts, error mapping)
                # with the body as plain JSON: the typed ``chat.completions.create`` walks every
                # message through its TypedDict transform, about 2 ms of CPU per request.
                async with asyncio.timeout(self.timeout):
                    response = await pool.client.post("/chat/completions", body=body, cast_to=httpx.Response)
                return completions_from_json(json.loads(response.content), n)
            except openai.APIStatusError as exc:
                last_error = f"HTTP {exc.status_code}: {_short(_error_message(exc))}"
                if exc.status_code not in RETRYABLE_STATUS:
                    break
                retry_after = parse_retry_after(exc.response.headers)
            except (openai.APIConnectionError, TimeoutError) as exc:  # APITimeoutError is an APIConnectionError
                last_error = self._connection_error(exc, url_index)
            except RecursionError:
                last_error = "malformed response: the JSON body is nested too deeply to read"
            except (ValueError, TypeError, KeyError, AttributeError) as exc:
                # A 200 whose body is not the chat-completion JSON it should be (JSONDecodeError is a ValueError).
                last_error = f"malformed response: {_short(str(exc))}"
            finally:
                pool.in_flight -= 1
            if attempt < self.max_retries:
                self.stats["retries"] += 1
                await asyncio.sleep(self._backoff(attempt, retry_after))
        self.stats["failures"] += 1
        attempts = attempt + 1
        # The error is stored with the episode; a server may have echoed the request's URL or key into it.
        error = mask_secrets(f"{last_error} (gave up after {attempts} attempt{'s' if attempts > 1 else ''})",
                             self.base_urls, (self._api_key,))
        return [Completion(text="", error=error) for _ in range(n)]

    def _connection_error(self, exc: BaseException, url_index: int) -> str:
        """What went wrong below HTTP, from the exception chain: a refused connection, a timeout, or other."""
        # openai's aiohttp transport maps a refused connection to ConnectTimeout, so the mapped class
        # cannot be trusted; the OS error at the bottom of the chain can.
        chain = []
        link: BaseException | None = exc
        while link is not None and link not in chain:
            chain.append(link)
            link = link.__cause__ or link.__context__
        if any(isinstance(link, ConnectionRefusedError) for link in chain):
            return f"connection refused by {redact_url(self.base_urls[url_index])}"
        dropped = next((link for link in chain if _closed_by_server(link)), None)
        if dropped is not None:
            return f"connection error: {_short(str(dropped) or type(dropped).__name__)}"
        if isinstance(exc, (openai.APITimeoutError, TimeoutError)):
            return f"timeout after {self.timeout:g} s"
        return f"connection error: {_short(str(exc.__cause__ or exc))}"

    def _backoff(self, attempt: int, retry_after: float | None) -> float:
        """Seconds before retry ``attempt + 1``: the server's ``Retry-After`` if given, else full jitter."""
        if retry_after is not None:
            return min(retry_after, self.backoff_max)
        ceiling = min(self.backoff_max, self.backoff_initial * (2.0**attempt))
        return self._rng.uniform(0.0, ceiling)

    async def aclose(self) -> None:
        """Close every connection pool."""
        for pools in self._pools:
            for pool in pools:
                await pool.client.close()


def completions_from_json(data: Any, n: int) -> list[Completion]:
    """Completions from a chat-completion response body; ValueError if it is not one or has no choices."""
    if not isinstance(data, dict):
        raise ValueError(f"the response body is a JSON {type(data).__name__}, not an object")
    choices = data.get("choices")
    if not isinstance(choices, list):
        raise ValueError("the response has no 'choices' list")
    if not choices:
        raise ValueError("the response had no choices")
    usage = data.get("usage") if isinstance(data.get("usage"), dict) else {}
    details = usage.get("completion_tokens_details") if isinstance(usage.get("completion_tokens_details"), dict) else {}
    prompt_tokens = _int_or_none(usage.get("prompt_tokens"))
    # Usage covers all n choices; per-choice figures are not reported, so share them out.
    completion_tokens = _share(_int_or_none(usage.get("completion_tokens")), len(choices))
    reasoning_tokens = _share(_int_or_none(details.get("reasoning_tokens")), len(choices))
    out = []
    for choice in choices:
        message = choice.get("message") if isinstance(choice, dict) else None
        if not isinstance(message, dict):
            raise ValueError("a choice has no 'message' object")
        content = message.get("content")
        if content is not None and not isinstance(content, str):
            raise ValueError(f"message content is a {type(content).__name__}, not a string")
        # vLLM and DeepSeek send ``reasoning_content``; OpenRouter and newer servers send ``reasoning``.
        reasoning = message.get("reasoning_content") or message.get("reasoning")
        if reasoning is not None and not isinstance(reasoning, str):
            reasoning = json.dumps(reasoning)
        finish = choice.get("finish_reason")
        out.append(Completion(
            text=encodable(content or ""),
            finish_reason=finish if isinstance(finish, str) else None,
            prompt_tokens=prompt_tokens,
            completion_tokens=completion_tokens,
            reasoning_text=encodable(reasoning) if reasoning is not None else None,
            reasoning_tokens=reasoning_tokens,
        ))
    return out


def encodable(text: str) -> str:
    """``text`` with each lone surrogate (valid in JSON's ``\\ud800``, not in UTF-8) replaced by U+FFFD.

    A reply is sent back in the next request's messages, and UTF-8 cannot encode a lone surrogate:
    left in, it would make every later request of the episode fail. Paired surrogates are joined.
    """
    if text.isascii():
        return text
    return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")


def _int_or_none(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _error_message(exc: openai.APIStatusError) -> str:
    """The server's own error text (OpenAI-style ``{"error": {"message": ...}}``) when it sent one."""
    body = exc.body
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict) and isinstance(inner.get("message"), str):
            return inner["message"]
    return exc.message


def _share(total: int | None, n: int) -> int | None:
    if total is None or n == 1:
        return total
    return round(total / n)


def _short(text: str, limit: int = 200) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."
