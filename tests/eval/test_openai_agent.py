"""OpenAIChatAgent against a real HTTP server on loopback (``ragen_eval.serve``), with the real ``openai`` client.

The served agent here is a small deterministic one defined below, so these tests do not need the games;
tests/eval/test_serve.py covers the built-in random and oracle chat policies.
"""

from __future__ import annotations

import asyncio
import email.utils
import hashlib
import socket
import threading
import time

import httpx
import openai
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ragen_eval.agents.base import Completion, SamplingParams
from ragen_eval.agents.openai_agent import OpenAIChatAgent, parse_retry_after
from ragen_eval.redaction import redact_args, redact_url
from ragen_eval.serve import ServeConfig, serve_in_thread


def expected_text(messages: list[dict[str, str]]) -> str:
    """What :class:`EchoAgent` answers: a pure function of the chat, so retries must not change it."""
    digest = hashlib.sha256(messages[-1]["content"].encode()).hexdigest()[:8]
    return f"<think>seen {digest}</think><answer>Up</answer>"


class EchoAgent:
    """Answers :func:`expected_text`; counts the requests in flight to check the client's concurrency bound."""

    name = "echo"

    def __init__(self, delay: float = 0.0, text: str | None = None, completion_tokens: int | None = None) -> None:
        self.delay = delay
        self.text = text
        self.completion_tokens = completion_tokens
        self.in_flight = 0
        self.max_in_flight = 0
        self.calls = 0

    async def act(self, messages, *, n=1, sampling=SamplingParams(), episode=None) -> list[Completion]:
        self.calls += 1
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            if self.delay:
                await asyncio.sleep(self.delay)
            text = self.text if self.text is not None else expected_text(messages)
            return [Completion(text=text, completion_tokens=self.completion_tokens) for _ in range(n)]
        finally:
            self.in_flight -= 1

    async def aclose(self) -> None:
        pass


def chat(i: int) -> list[dict[str, str]]:
    return [{"role": "system", "content": "play"}, {"role": "user", "content": f"state number {i}"}]


def run_agent(url: str | list[str], prompts: list[list[dict[str, str]]], sampling: SamplingParams = SamplingParams(),
              n: int = 1, **kwargs) -> tuple[list[list[Completion]], dict[str, int], float]:
    """Send every prompt concurrently through a fresh agent; return completions, agent stats and seconds taken."""
    urls = [url] if isinstance(url, str) else url
    kwargs = {"backoff_initial": 0.01, "backoff_max": 0.05, "jitter_seed": 0, **kwargs}

    async def go():
        agent = OpenAIChatAgent("echo", urls, None, **kwargs)
        start = time.perf_counter()
        try:
            results = await asyncio.gather(*(agent.act(p, n=n, sampling=sampling) for p in prompts))
        finally:
            await agent.aclose()
        return results, dict(agent.stats), time.perf_counter() - start

    return asyncio.run(go())


def server_stats(url: str) -> dict[str, int]:
    return httpx.get(url.removesuffix("/v1") + "/v1/stats").json()


def test_round_trip_returns_text_usage_and_finish_reason():
    with serve_in_thread(ServeConfig(port=0), EchoAgent(completion_tokens=7)) as url:
        prompts = [chat(i) for i in range(5)]
        results, stats, _ = run_agent(url, prompts)
    for prompt, (completion,) in zip(prompts, results):
        assert completion.error is None
        assert completion.text == expected_text(prompt)
        assert completion.finish_reason == "stop"
        assert completion.completion_tokens == 7
        # "play" (1 token) + "state number i" (3 tokens) as the server counts words and marks.
        assert completion.prompt_tokens == 4
    assert stats == {"requests": 5, "retries": 0, "failures": 0}


def _aiohttp_transport_installed() -> bool:
    agent = OpenAIChatAgent("m", ["http://127.0.0.1:1/v1"], http_backend="auto")
    asyncio.run(agent.aclose())
    return agent.http_backend == "aiohttp"


TRANSPORTS = ["httpx", pytest.param("aiohttp", marks=pytest.mark.skipif(
    not _aiohttp_transport_installed(), reason="this openai install has no aiohttp transport"))]


@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize("fault", ["failure_rate", "rate_limit_rate", "malformed_rate", "empty_choices_rate",
                                   "drop_rate", "stall_rate"])
def test_every_fault_kind_is_retried_until_the_answer_is_right(fault, transport):
    config = ServeConfig(port=0, fault_seed=3, retry_after=0.01, stall_seconds=30.0, **{fault: 0.5})
    prompts = [chat(i) for i in range(12)]
    with serve_in_thread(config, EchoAgent()) as url:
        # A stall is caught by the timeout, so that one stays short; for every other fault a timeout on a
        # loaded machine (a slow answer, not a fault) would be one more retry than the faults explain.
        timeout = 2.0 if fault == "stall_rate" else 30.0
        results, stats, _ = run_agent(url, prompts, timeout=timeout, max_retries=12, http_backend=transport)
        counts = server_stats(url)
    assert [r[0].text for r in results] == [expected_text(p) for p in prompts]
    assert all(r[0].error is None for r in results)
    injected = counts[fault.removesuffix("_rate")]
    assert injected > 0, counts  # the fault really happened ...
    assert stats["retries"] == injected  # ... and each one cost exactly one retry
    assert counts["requests"] == stats["requests"] == 12 + injected


@pytest.mark.parametrize(("fault", "message"), [("failure_rate", "HTTP 500"), ("malformed_rate", "malformed"),
                                                ("empty_choices_rate", "no choices"), ("drop_rate", "connection"),
                                                ("stall_rate", "timeout")])
def test_a_request_that_keeps_failing_returns_an_error_completion(fault, message):
    with serve_in_thread(ServeConfig(port=0, stall_seconds=30.0, **{fault: 1.0}), EchoAgent()) as url:
        results, stats, _ = run_agent(url, [chat(0)], n=2, timeout=0.3, max_retries=2)
        assert server_stats(url)["requests"] == 3
    assert len(results[0]) == 2
    for completion in results[0]:
        assert completion.text == "" and message in completion.error and "3 attempts" in completion.error
    assert stats == {"requests": 3, "retries": 2, "failures": 1}


def test_retry_after_is_honoured_and_capped():
    with serve_in_thread(ServeConfig(port=0, rate_limit_rate=1.0, retry_after=0.4), EchoAgent()) as url:
        # backoff_initial=0 makes the jittered wait zero, so any time spent waiting comes from Retry-After.
        _, _, honoured = run_agent(url, [chat(0)], max_retries=2, backoff_initial=0.0, backoff_max=10.0)
        _, _, capped = run_agent(url, [chat(0)], max_retries=2, backoff_initial=0.0, backoff_max=0.05)
    assert 0.8 <= honoured < 2.0
    assert capped < 0.5


def test_client_errors_are_not_retried():
    with serve_in_thread(ServeConfig(port=0), EchoAgent()) as url:
        results, stats, _ = run_agent(url.removesuffix("/v1") + "/no-such-path/v1", [chat(0)], max_retries=5)
    assert stats == {"requests": 1, "retries": 0, "failures": 1}
    assert "HTTP 404" in results[0][0].error


def test_a_truncated_answer_is_returned_once_not_retried():
    long_text = "<think>" + "word " * 50 + "</think><answer>Up</answer>"
    with serve_in_thread(ServeConfig(port=0), EchoAgent(text=long_text)) as url:
        results, stats, _ = run_agent(url, [chat(0)], sampling=SamplingParams(max_tokens=10))
    completion = results[0][0]
    assert completion.finish_reason == "length" and completion.error is None
    assert completion.text == "<think>" + "word " * 7  # '<', 'think', '>' and 7 words are 10 tokens
    assert completion.completion_tokens == 10
    assert stats["requests"] == 1


def test_reasoning_content_and_reasoning_tokens_are_read():
    with serve_in_thread(ServeConfig(port=0, reasoning_field=True), EchoAgent(text="<think>go up now</think>"
                                                                              "<answer>Up</answer>")) as url:
        results, _, _ = run_agent(url, [chat(0)])
    completion = results[0][0]
    assert completion.text == "<answer>Up</answer>"
    assert completion.reasoning_text == "go up now"
    assert completion.reasoning_tokens == 3


def test_n_completions_share_the_usage():
    with serve_in_thread(ServeConfig(port=0), EchoAgent(completion_tokens=6)) as url:
        results, _, _ = run_agent(url, [chat(0)], n=3)
    assert [c.text for c in results[0]] == [expected_text(chat(0))] * 3
    assert [c.completion_tokens for c in results[0]] == [6, 6, 6]  # 18 in usage, shared by 3


def test_concurrency_is_bounded():
    served = EchoAgent(delay=0.05)
    with serve_in_thread(ServeConfig(port=0), served) as url:
        run_agent(url, [chat(i) for i in range(24)], concurrency=4)
    assert served.calls == 24
    assert served.max_in_flight == 4


def test_requests_per_second_spaces_request_starts():
    with serve_in_thread(ServeConfig(port=0), EchoAgent()) as url:
        _, _, unlimited = run_agent(url, [chat(i) for i in range(10)])
        _, _, limited = run_agent(url, [chat(i) for i in range(10)], requests_per_second=20.0)
    # Ten starts 50 ms apart take at least 9 intervals.
    assert limited >= 0.45 > unlimited


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_requests_rotate_over_base_urls_and_skip_a_dead_one():
    first, second = EchoAgent(), EchoAgent()
    with serve_in_thread(ServeConfig(port=0), first) as url_a, serve_in_thread(ServeConfig(port=0), second) as url_b:
        prompts = [chat(i) for i in range(10)]
        run_agent([url_a, url_b], prompts, concurrency=1)
        assert (first.calls, second.calls) == (5, 5)
        dead = f"http://127.0.0.1:{_closed_port()}/v1"
        results, stats, _ = run_agent([dead, url_a], prompts, concurrency=1, max_retries=1)
    assert [r[0].text for r in results] == [expected_text(p) for p in prompts]
    assert stats["failures"] == 0 and stats["retries"] >= 1


def test_the_api_key_is_never_shown_and_urls_are_redacted():
    agent = OpenAIChatAgent("m", ["https://user:hunter2@api.example.com/v1?key=hunter2"], "sk-secret-123")
    shown = repr(agent) + str(agent.describe())
    assert "sk-secret-123" not in shown and "hunter2" not in shown
    assert agent.describe()["base_urls"] == ["https://api.example.com/v1"]
    assert redact_url("http://127.0.0.1:8000/v1") == "http://127.0.0.1:8000/v1"
    assert redact_url("https://user:pw@[::1]:8443/v1?api_key=k#k") == "https://[::1]:8443/v1"
    asyncio.run(agent.aclose())


@pytest.mark.parametrize("status", [401, 500])
def test_a_key_the_server_echoes_into_its_error_is_masked(status):
    """A provider answering "Incorrect API key provided: sk-..." put the key into the error each episode stores."""
    import json
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    class Echoing(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 (http.server's name)
            self.rfile.read(int(self.headers.get("Content-Length", 0)))
            key = self.headers.get("Authorization", "").removeprefix("Bearer ")
            body = json.dumps({"error": {"message": f"Incorrect API key provided: {key}; also {key[:-2]}xy"}})
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body.encode())

        def log_message(self, *args) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Echoing)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    key = "sk-proj-SECRETKEY123456789"

    async def go() -> Completion:
        agent = OpenAIChatAgent("m", f"http://127.0.0.1:{server.server_port}/v1", key, max_retries=1,
                                backoff_initial=0.0, backoff_max=0.0)
        try:
            return (await agent.act([{"role": "user", "content": "hi"}], n=1, sampling=SamplingParams()))[0]
        finally:
            await agent.aclose()

    try:
        completion = asyncio.run(go())
    finally:
        server.shutdown()
        server.server_close()
    assert completion.error is not None and f"HTTP {status}" in completion.error
    assert "SECRETKEY" not in completion.error and "Incorrect API key provided: ***" in completion.error


def _one_shot_server(answer: bytes) -> tuple[socket.socket, threading.Thread]:
    """A loopback socket that reads each request and sends ``answer`` (b"": closes without a word)."""
    listener = socket.create_server(("127.0.0.1", 0))

    def serve() -> None:
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            with conn:
                conn.recv(65536)
                if answer:
                    conn.sendall(answer)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    return listener, thread


def _ask(url: str, backend: str) -> Completion:
    async def go() -> Completion:
        agent = OpenAIChatAgent("m", url, None, max_retries=0, timeout=20, http_backend=backend)
        try:
            return (await agent.act([{"role": "user", "content": "hi"}], n=1, sampling=SamplingParams()))[0]
        finally:
            await agent.aclose()

    return asyncio.run(go())


@pytest.mark.parametrize("backend", ["httpx", "aiohttp"])
def test_a_dropped_connection_is_called_one_and_a_redirect_is_followed(backend):
    """aiohttp's transport reported a server that hung up as a timeout; httpx did not follow a 307."""
    dropping, _ = _one_shot_server(b"")
    try:
        dropped = _ask(f"http://127.0.0.1:{dropping.getsockname()[1]}/v1", backend)
    finally:
        dropping.close()
    assert dropped.error is not None and "connection error" in dropped.error and "timeout" not in dropped.error
    with serve_in_thread(ServeConfig(port=0), EchoAgent()) as url:
        target = url + "/chat/completions"
        moved, _ = _one_shot_server(b"HTTP/1.1 307 Temporary Redirect\r\nLocation: " + target.encode()
                                    + b"\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
        try:
            answered = _ask(f"http://127.0.0.1:{moved.getsockname()[1]}/v1", backend)
        finally:
            moved.close()
    assert answered.error is None and answered.text.startswith("<think>seen ")


@pytest.mark.parametrize(("args", "stored"), [
    (["--api-key=abc", "--token", "abc", "--password=x"], ["--api-key=***", "--token", "***", "--password=***"]),
    (["--model-name=sk-proj-0123456789ab", "hf_0123456789abcdefgh"], ["--model-name=***", "***"]),
    (["--x", "ghp_0123456789abcdefABCDEF", "--y=AKIA0123456789ABCDEF"], ["--x", "***", "--y=***"]),
    (["--z", "9f8e7d6c5b4a39281706f5e4d3c2b1a0ffee"], ["--z", "***"]),  # 36 hex characters: key-like
    # Variable names, numbers, model names and paths stay readable.
    (["--api-key-env=OPENAI_API_KEY", "--api-key-env", "MY_KEY", "--latency=0.2", "--failure-rate", "-1"],
     ["--api-key-env=OPENAI_API_KEY", "--api-key-env", "MY_KEY", "--latency=0.2", "--failure-rate", "-1"]),
    (["--agent", "runs/sft/bandit-format", "--model-name", "Qwen2.5-7B-Instruct"],
     ["--agent", "runs/sft/bandit-format", "--model-name", "Qwen2.5-7B-Instruct"]),
    # A secret's name is a word (`token`), not a part of one (`tokens`, `tokenizer`); camelCase is read too.
    (["--max-tokens=5", "--tokenizer", "org/tok", "--authToken", "t", "--hf_token=t"],
     ["--max-tokens=5", "--tokenizer", "org/tok", "--authToken", "***", "--hf_token=***"]),
])
def test_redact_args_hides_key_like_values_and_secret_options(args, stored):
    assert redact_args(args) == stored


@pytest.mark.parametrize(("kwargs", "needle"), [
    ({"base_urls": []}, "base_urls is empty"),
    ({"base_urls": ["ftp://x"]}, "http://"),
    ({"concurrency": 0}, "concurrency"),
    ({"timeout": 0}, "timeout"),
    ({"max_retries": -1}, "max_retries"),
    ({"requests_per_second": 0}, "requests_per_second"),
    ({"model": ""}, "model"),
    ({"http_backend": "curl"}, "http_backend"),
])
def test_bad_arguments_raise_clear_errors(kwargs, needle):
    arguments = {"model": "m", "base_urls": ["http://127.0.0.1:1/v1"], **kwargs}
    with pytest.raises(ValueError, match=needle):
        OpenAIChatAgent(**arguments)


def test_retry_after_header_forms():
    assert parse_retry_after(httpx.Headers({"Retry-After": "2.5"})) == 2.5
    assert parse_retry_after(httpx.Headers({"retry-after-ms": "1500", "Retry-After": "9"})) == 1.5
    date = email.utils.formatdate(time.time() + 30, usegmt=True)
    assert 28 <= parse_retry_after(httpx.Headers({"Retry-After": date})) <= 31
    assert parse_retry_after(httpx.Headers({"Retry-After": "soon"})) is None
    assert parse_retry_after(httpx.Headers({})) is None
    assert parse_retry_after(httpx.Headers({"Retry-After": "-4"})) == 0.0


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**16), rates=st.lists(st.floats(0.0, 0.09), min_size=6, max_size=6))
def test_any_mix_of_faults_gives_the_clean_answers(seed, rates):
    names = ["failure_rate", "rate_limit_rate", "malformed_rate", "empty_choices_rate", "drop_rate", "stall_rate"]
    config = ServeConfig(port=0, fault_seed=seed, retry_after=0.0, stall_seconds=30.0, **dict(zip(names, rates)))
    prompts = [chat(i) for i in range(8)]
    with serve_in_thread(config, EchoAgent()) as url:
        results, stats, _ = run_agent(url, prompts, timeout=0.3, max_retries=20)
    assert [r[0].text for r in results] == [expected_text(p) for p in prompts]
    assert stats["failures"] == 0


def test_http_backend_auto_prefers_aiohttp_when_openai_has_it():
    agent = OpenAIChatAgent("m", ["http://127.0.0.1:1/v1"], http_backend="auto")
    has_factory = hasattr(openai, "DefaultAioHttpClient")
    assert agent.http_backend in ("aiohttp", "httpx")
    assert agent.describe()["http_backend"] == agent.http_backend
    if not has_factory:
        assert agent.http_backend == "httpx"
    asyncio.run(agent.aclose())
    explicit = OpenAIChatAgent("m", ["http://127.0.0.1:1/v1"], concurrency=20, http_backend="httpx")
    assert explicit.http_backend == "httpx" and len(explicit._pools[0]) == 3  # ceil(20 / 8) small pools
    asyncio.run(explicit.aclose())
