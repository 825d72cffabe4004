"""No hangs, bounded cost: the HTTP client against servers that misbehave below the JSON level.

Each test runs a real loopback server: ``ragen-eval serve`` where it fits, else a raw asyncio socket
server that writes exactly the bytes under test (a trickled body, a lone surrogate, deep nesting).
"""

from __future__ import annotations

import asyncio
import json
import socket
import threading
import time
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager

import pytest

from ragen_envs.text import MAX_REPLY_CHARS

from ragen_eval.agents.base import Completion
from ragen_eval.agents.openai_agent import OpenAIChatAgent
from ragen_eval.cli import EXIT_OK, main
from ragen_eval.config import EvalConfig
from ragen_eval.runner import play_episode
from ragen_eval.serve import ServeConfig, serve_in_thread

from tests.eval.test_openai_agent import TRANSPORTS, EchoAgent, chat, expected_text

Handler = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]


@contextmanager
def raw_server(handler: Handler) -> Iterator[str]:
    """An asyncio TCP server on loopback, on its own thread, running ``handler`` per connection."""
    loop = asyncio.new_event_loop()
    ready = threading.Event()
    holder: dict[str, asyncio.AbstractServer] = {}

    async def guarded(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            await handler(reader, writer)
        except (ConnectionError, asyncio.CancelledError):
            pass  # the client hung up: what the timeout tests expect
        finally:
            writer.close()

    async def start() -> None:
        holder["server"] = await asyncio.start_server(guarded, "127.0.0.1", 0)
        ready.set()

    thread = threading.Thread(target=lambda: (loop.run_until_complete(start()), loop.run_forever()), daemon=True)
    thread.start()
    assert ready.wait(10)
    port = holder["server"].sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        async def stop() -> None:
            holder["server"].close()
            for task in asyncio.all_tasks():
                if task is not asyncio.current_task():
                    task.cancel()

        asyncio.run_coroutine_threadsafe(stop(), loop).result(10)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(10)


async def read_request(reader: asyncio.StreamReader) -> bytes:
    """Read one HTTP request (headers and a Content-Length body); return the body."""
    head = await reader.readuntil(b"\r\n\r\n")
    length = 0
    for line in head.split(b"\r\n"):
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value)
    return await reader.readexactly(length)


def reply_with(body: bytes) -> Handler:
    """A handler that answers every request on the connection with HTTP 200 and ``body``."""
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while True:
            try:
                await read_request(reader)
            except asyncio.IncompleteReadError:
                return
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: "
                         + str(len(body)).encode() + b"\r\n\r\n" + body)
            await writer.drain()
    return handler


def completion_body(content_json: str) -> bytes:
    """A chat-completion body whose message content is the JSON string literal ``content_json``."""
    return ('{"choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": '
            + content_json + '}}], "usage": {"prompt_tokens": 1, "completion_tokens": 1}}').encode()


def play_sokoban(url: str) -> dict:
    """One Sokoban episode (several turns) through :func:`play_episode` and an agent on ``url``; its record."""
    async def go() -> dict:
        agent = OpenAIChatAgent("m", url, max_retries=0)
        try:
            return await play_episode(agent, "sokoban", 0, EvalConfig(envs=["sokoban"], episodes=1))
        finally:
            await agent.aclose()

    return asyncio.run(go())


def act(url: str, messages=None, **kwargs) -> tuple[Completion, float]:
    """One request through a fresh agent; the completion and the seconds it took (never more than 30)."""
    kwargs = {"max_retries": 0, "backoff_initial": 0.01, "backoff_max": 0.01, **kwargs}

    async def go() -> tuple[Completion, float]:
        agent = OpenAIChatAgent("m", url, kwargs.pop("api_key", None), **kwargs)
        start = time.perf_counter()
        try:
            (completion,) = await asyncio.wait_for(agent.act(messages or chat(0)), 30)
        finally:
            await agent.aclose()
        return completion, time.perf_counter() - start

    return asyncio.run(go())


# --- credentials in the base URL ---------------------------------------------------------------------


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_credentials_in_the_base_url_are_sent_as_basic_auth(transport, monkeypatch):
    monkeypatch.setenv("RAGEN_TEST_SERVE_KEY", "s3cret")
    config = ServeConfig(port=0, api_key_env="RAGEN_TEST_SERVE_KEY")
    with serve_in_thread(config, EchoAgent()) as url:
        with_user_info = url.replace("http://", "http://user:s3cret@")
        good, _ = act(with_user_info, http_backend=transport, api_key="ignored-bearer")
        wrong, _ = act(url.replace("http://", "http://user:wrong@"), http_backend=transport, max_retries=2)
        bearer, _ = act(url, http_backend=transport, api_key="s3cret")
    assert good.error is None and good.text == expected_text(chat(0))
    assert bearer.error is None
    assert wrong.error.startswith("HTTP 401") and "1 attempt)" in wrong.error  # a bad key is not retried


# --- a query in the base URL -----------------------------------------------------------------------------

KEY = "KEY-0123456789"


def recording(targets: list[str], answer: bytes) -> Handler:
    """Records each request's target; answers ``answer`` to ``/v1/chat/completions?api_key=KEY``, and to any
    other target a 404 whose body echoes the target, as some gateways do."""
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while True:
            try:
                head = await reader.readuntil(b"\r\n\r\n")
            except asyncio.IncompleteReadError:
                return
            length = next((int(line.partition(b":")[2]) for line in head.split(b"\r\n")
                           if line.lower().startswith(b"content-length:")), 0)
            await reader.readexactly(length)
            target = head.split(b" ")[1].decode()
            targets.append(target)
            status, body = ((b"200 OK", answer) if target == f"/v1/chat/completions?api_key={KEY}" else
                            (b"404 Not Found", json.dumps({"error": {"message": f"no route {target}"}}).encode()))
            writer.write(b"HTTP/1.1 " + status + b"\r\nContent-Type: application/json\r\nContent-Length: "
                         + str(len(body)).encode() + b"\r\n\r\n" + body)
            await writer.drain()
    return handler


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_a_query_in_the_base_url_goes_with_every_request_and_stays_out_of_errors(transport):
    targets: list[str] = []
    with raw_server(recording(targets, completion_body('"<answer>Up</answer>"'))) as url:
        first, _ = act(f"{url}?api_key={KEY}", http_backend=transport)
        second, _ = act(f"{url}/?api_key={KEY}", http_backend=transport)  # a trailing slash reads the same
        wrong, _ = act(f"{url}?api_key=WRONG-0123456789", http_backend=transport)
    assert first.error is None and second.error is None and first.text == "<answer>Up</answer>"
    assert targets[:2] == [f"/v1/chat/completions?api_key={KEY}"] * 2  # before: /v1/?api_key=KEYchat/completions
    assert wrong.error == "HTTP 404: no route /v1/chat/completions?api_key=*** (gave up after 1 attempt)"


def test_a_query_in_the_base_url_never_reaches_the_run_directory(tmp_path, capsys):
    targets: list[str] = []
    with raw_server(recording(targets, completion_body('"<answer>Up</answer>"'))) as url:
        assert main(["--model", "m", "--base-url", f"{url}?api_key={KEY}", "--env", "bandit", "--episodes", "2",
                     "--out", str(tmp_path), "--run-name", "gateway", "--no-progress"]) == EXIT_OK
    assert targets and set(targets) == {f"/v1/chat/completions?api_key={KEY}"}
    run = tmp_path / "gateway"
    assert json.loads((run / "config.json").read_text())["eval_config"]["base_urls"] == [url]
    assert all(KEY not in path.read_text() for path in run.iterdir() if path.is_file())
    assert KEY not in "".join(capsys.readouterr())


# --- a refused connection ------------------------------------------------------------------------------


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_a_refused_connection_is_reported_as_refused_not_as_a_timeout(transport):
    with socket.socket() as sock:  # a port that was just free: nothing listens there
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    completion, seconds = act(f"http://127.0.0.1:{port}/v1", http_backend=transport, timeout=20, max_retries=1)
    assert completion.error == f"connection refused by http://127.0.0.1:{port}/v1 (gave up after 2 attempts)"
    assert seconds < 5


# --- a server that trickles bytes ----------------------------------------------------------------------


def trickle(chunked: bool) -> Handler:
    """Headers at once, then one byte of body every 50 ms: a promised 1 MB body, or a chunked one without end."""
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await read_request(reader)
        framing = b"Transfer-Encoding: chunked" if chunked else b"Content-Length: 1000000"
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n" + framing + b"\r\n\r\n")
        while True:
            writer.write(b"1\r\n \r\n" if chunked else b" ")
            await writer.drain()
            await asyncio.sleep(0.05)
    return handler


@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize("chunked", [False, True], ids=["content-length", "endless-chunked"])
def test_timeout_bounds_the_whole_request_against_a_trickling_server(chunked, transport):
    with raw_server(trickle(chunked)) as url:
        completion, seconds = act(url, http_backend=transport, timeout=0.5, max_retries=1)
    assert completion.error == "timeout after 0.5 s (gave up after 2 attempts)"
    assert seconds < 2.5  # two attempts of 0.5 s and a short backoff; before, one byte in 50 ms held it forever


# --- text that UTF-8 cannot encode ----------------------------------------------------------------------


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_a_reply_with_lone_surrogates_is_kept_and_the_next_request_still_encodes(transport):
    reply = r'"<think>odd \ud800 and \udfff, a pair \ud83d\ude00</think><answer>Up</answer>"'
    with raw_server(reply_with(completion_body(reply))) as url:
        first, _ = act(url, http_backend=transport)
        follow_up = [*chat(0), {"role": "assistant", "content": first.text}, {"role": "user", "content": "again"}]
        second, _ = act(url, follow_up, http_backend=transport)
    assert first.error is None and second.error is None
    assert first.text == "<think>odd \ufffd and \ufffd, a pair \U0001F600</think><answer>Up</answer>"
    first.text.encode("utf-8")  # would raise on a lone surrogate


def test_an_episode_with_surrogate_replies_is_played_scored_and_stored():
    reply = json.dumps("<think>\ud800</think><answer>Up</answer>")  # ensure_ascii: the \ud800 escape
    with raw_server(reply_with(completion_body(reply))) as url:
        record = play_sokoban(url)
    assert record["error"] is None and len(record["turns"]) > 1  # later requests carried the reply back
    assert all(turn["format_ok"] and turn["actions_parsed"] == ["Up"] for turn in record["turns"])
    json.dumps(record, ensure_ascii=False).encode("utf-8")


# --- deeply nested JSON ---------------------------------------------------------------------------------


def test_a_deeply_nested_body_is_a_retried_error_without_a_traceback(capfd):
    body = b"[" * 200_000 + b"]" * 200_000
    with raw_server(reply_with(body)) as url:
        completion, _ = act(url, max_retries=1)
    assert completion.error == ("malformed response: the JSON body is nested too deeply to read "
                                "(gave up after 2 attempts)")
    assert "Traceback" not in capfd.readouterr().err


# --- oversized replies ----------------------------------------------------------------------------------


def body_sizes(sizes: list[int], answer: bytes) -> Handler:
    """Records the size of each request body; answers every request with HTTP 200 and ``answer``."""
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while True:
            try:
                sizes.append(len(await read_request(reader)))
            except asyncio.IncompleteReadError:
                return
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: "
                         + str(len(answer)).encode() + b"\r\n\r\n" + answer)
            await writer.drain()
    return handler


def test_an_oversized_reply_is_scored_in_full_and_capped_in_the_record_and_the_chat():
    # 2 MB of think text, then a valid answer: scoring must see the answer at the very end.
    huge = "<think>" + "x" * 2_000_000 + "</think><answer>Up</answer>"
    sizes: list[int] = []
    with raw_server(body_sizes(sizes, completion_body(json.dumps(huge)))) as url:
        record = play_sokoban(url)
    assert record["error"] is None and len(record["turns"]) == len(sizes) > 2
    for turn in record["turns"]:
        assert turn["format_ok"] and turn["actions_parsed"] == ["Up"]
        assert turn["response"] == huge[:MAX_REPLY_CHARS]
        assert turn["capped"] == {"response": len(huge), "think": 2_000_000}
        assert len(turn["think"]) == MAX_REPLY_CHARS
    assert len(json.dumps(record)) < (2 * MAX_REPLY_CHARS + 10_000) * len(record["turns"])
    # Each later request carries the earlier replies back, capped: it grows by at most one cap a turn.
    # Before, it grew by the whole 2 MB reply a turn (request bodies 1.9 KB -> 8.4 MB by turn 5).
    assert all(later - earlier < MAX_REPLY_CHARS + 5_000 for earlier, later in zip(sizes, sizes[1:]))
    assert sizes[-1] < sizes[0] + (len(sizes) - 1) * (MAX_REPLY_CHARS + 5_000)


def test_replies_within_the_cap_are_stored_whole():
    text = "<think>" + "y" * 1000 + "</think><answer>Up</answer>"
    with serve_in_thread(ServeConfig(port=0), EchoAgent(text=text, completion_tokens=5)) as url:
        record = play_sokoban(url)
    assert all(turn["response"] == text and "capped" not in turn for turn in record["turns"])


def test_a_slow_answer_within_the_timeout_is_not_cut():
    with serve_in_thread(ServeConfig(port=0, latency=0.3), EchoAgent()) as url:
        completion, seconds = act(url, timeout=2.0)
    assert completion.error is None and 0.3 <= seconds < 2.0
