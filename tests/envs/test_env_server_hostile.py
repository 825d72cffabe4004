"""`python -m ragen_envs.server` against hostile clients: each probe of issue 26, on a real server on loopback.

Every probe here once got through: unbounded generation, server paths as level files, no token beyond
loopback, one client taking every episode slot, unbounded connections, a deeply nested body answered
500, and a seedless reset on a level file failing.
"""

from __future__ import annotations

import http.client
import json
import os
import socket
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from ragen_envs.server import ClientPolicy, EpisodeStore, start_server
from ragen_envs.server import app as server_app
from ragen_envs.server.policy import DEFAULT_ENV_CONFIG_LIMITS, DEFAULT_PROTOCOL_LIMITS, MAX_TEMPLATE_PLACEHOLDERS
from ragen_envs.sokoban import SokobanConfig, format_boxoban, generate
from ragen_envs.sokoban import level_files
from ragen_envs.text import MAX_REPLY_CHARS, TextEpisode

HOSTILE = {"height": 30, "width": 30, "num_boxes": 8, "search_budget": 10_000_000, "max_attempts": 1_000_000}
TOKEN = "test-token-" + "k" * 24
pytestmark = pytest.mark.usefixtures("fresh_level_sets")  # level sets load from disk in every test


def request(url: str, method: str, path: str, body: object = None, *, raw: bytes | None = None,
            headers: dict[str, str] | None = None, source: str | None = None) -> tuple[int, dict]:
    """(status, JSON body) of one request on a fresh connection, from loopback address ``source`` if given."""
    host, port = url.removeprefix("http://").rsplit(":", 1)
    connection = http.client.HTTPConnection(host, int(port), timeout=60,
                                            source_address=(source, 0) if source else None)
    try:
        data = raw if raw is not None else None if body is None else json.dumps(body).encode()
        connection.request(method, path, body=data, headers={"Content-Type": "application/json", **(headers or {})})
        response = connection.getresponse()
        return response.status, json.loads(response.read())
    finally:
        connection.close()


@pytest.fixture
def serve():
    """Start servers with the given policy and store; all are shut down after the test."""
    started = []

    def start(policy: ClientPolicy | None = None, store: EpisodeStore | None = None, host: str = "127.0.0.1") -> str:
        server, _ = start_server(host, 0, store, policy=policy)
        started.append(server)
        return f"http://127.0.0.1:{server.server_address[1]}"

    yield start
    for server in started:
        server.shutdown()
        server.server_close()


@pytest.fixture
def level_dir(tmp_path) -> Path:
    """An operator's levels directory (three levels, one malformed file) and a level file outside it."""
    levels = [generate(SokobanConfig(height=6, width=6, num_boxes=1), seed) for seed in range(3)]
    root = tmp_path / "served"
    root.mkdir()
    (root / "three.txt").write_text(format_boxoban(levels), encoding="utf-8")
    (root / "bad.txt").write_text("; 0\n#####\n#@$X#\n#####\n", encoding="utf-8")
    (tmp_path / "private").mkdir()
    (tmp_path / "private" / "outside.txt").write_text(format_boxoban(levels[:1]), encoding="utf-8")
    return root


# -- unbounded work per request ------------------------------------------------------------------------------


def test_the_unbounded_generation_probe_is_refused_at_once(serve):
    url = serve()
    start = time.monotonic()
    status, body = request(url, "POST", "/reset", {"env": "sokoban", "env_config": HOSTILE})
    assert status == 403 and "not open to clients" in body["error"]
    opened = serve(ClientPolicy(env_config_limits=DEFAULT_ENV_CONFIG_LIMITS))
    status, body = request(opened, "POST", "/reset", {"env": "sokoban", "env_config": HOSTILE})
    assert status == 403 and "env_config.height=30 is over this server's limit of 10" in body["error"]
    assert time.monotonic() - start < 5


def test_generation_is_stopped_at_the_budget_and_builds_wait_their_turn(serve):
    # The operator opened every field without a ceiling: the deadline alone must stop the probe.
    unbounded = {game: {name: None for name in limits} for game, limits in DEFAULT_ENV_CONFIG_LIMITS.items()}
    url = serve(ClientPolicy(env_config_limits=unbounded, generation_timeout_s=1.0, max_concurrent_generations=1))
    outcomes: dict[str, tuple[int, dict, float]] = {}
    start = time.monotonic()

    def send(name: str, body: dict) -> None:
        status, answer = request(url, "POST", "/reset", body)
        outcomes[name] = (status, answer, time.monotonic() - start)

    hostile = threading.Thread(target=send, args=("hostile", {"env": "sokoban", "seed": 1, "env_config": HOSTILE}))
    hostile.start()
    time.sleep(0.5)  # the hostile build holds the only builder by now
    send("bandit", {"env": "bandit", "seed": 1})
    hostile.join()
    status, answer, hostile_done = outcomes["hostile"]
    assert status == 422 and "budget of 1s" in answer["error"] and 1.0 <= hostile_done < 5
    status, answer, bandit_done = outcomes["bandit"]
    # A Bandit build takes milliseconds: this one waited for the builder the hostile build held.
    assert status == 200 and bandit_done >= hostile_done - 0.2
    assert request(url, "GET", "/health")[1]["episodes"] == 1


def test_a_step_costs_bounded_time_and_an_over_long_reply_is_refused_unplayed(serve):
    url = serve()
    episode_id = request(url, "POST", "/reset", {"env": "frozenlake", "seed": 1})[1]["episode_id"]
    start = time.monotonic()  # a "<" and a run of spaces once held the server for seconds (40,000: 25 s)
    status, body = request(url, "POST", "/step", {"episode_id": episode_id, "reply": "<" + " " * 30_000 + "x"})
    assert status == 200 and not body["turn"]["format_ok"] and time.monotonic() - start < 2
    status, body = request(url, "POST", "/step", {"episode_id": episode_id, "reply": "x" * (MAX_REPLY_CHARS + 1)})
    assert status == 413 and f"{MAX_REPLY_CHARS}-character limit" in body["error"]
    assert request(url, "GET", f"/state/{episode_id}")[1]["info"]["turn"] == 1  # the refused reply played no turn


def test_a_template_of_many_placeholders_is_refused_before_it_renders(serve):
    """1,170 ``{rules}`` fit the 8,192-character template ceiling and once made a 1.2 MB reset answer."""
    url = serve()
    rules = TextEpisode("sokoban", 0).env.unwrapped.rules_text()
    status, body = request(url, "POST", "/reset", {"env": "sokoban", "seed": 0,
                                                   "protocol": {"intro_template": "{rules}" * 1170}})
    assert status == 403 and body["error"] == ("protocol.intro_template holds 1170 placeholders; this server renders "
                                               f"at most {MAX_TEMPLATE_PLACEHOLDERS} per template")
    most = {"intro_template": "{rules}" * MAX_TEMPLATE_PLACEHOLDERS}
    status, body = request(url, "POST", "/reset", {"env": "sokoban", "seed": 0, "protocol": most})
    assert status == 200 and body["observation"].count(rules) == MAX_TEMPLATE_PLACEHOLDERS


def test_an_answer_is_strict_json_or_a_500(serve):
    # An operator who lifts the penalty's ceiling lets -1e308 twice make -inf, once sent as "-Infinity".
    url = serve(ClientPolicy(protocol_limits={**DEFAULT_PROTOCOL_LIMITS, "format_penalty": None}))
    episode_id = request(url, "POST", "/reset", {"env": "sokoban", "seed": 1,
                                                 "protocol": {"format_penalty": -1e308}})[1]["episode_id"]
    assert request(url, "POST", "/step", {"episode_id": episode_id, "reply": "bad"})[0] == 200
    host, port = url.removeprefix("http://").rsplit(":", 1)
    connection = http.client.HTTPConnection(host, int(port), timeout=60)
    connection.request("POST", "/step", body=json.dumps({"episode_id": episode_id, "reply": "bad"}))
    response = connection.getresponse()
    answer = json.loads(response.read(), parse_constant=lambda name: pytest.fail(f"{name} is not JSON"))
    connection.close()
    assert response.status == 500 and "NaN or infinity" in answer["error"]


# -- level files: names from the operator's directories, never a client's path --------------------------------


def test_level_files_are_served_by_name_only_and_leak_nothing(serve, level_dir, tmp_path):
    cache = tmp_path / "cache"
    url = serve(ClientPolicy(levels_dirs=(level_dir,), cache_dir=cache))
    outside = tmp_path / "private" / "outside.txt"
    status, body = request(url, "POST", "/reset", {"env": "sokoban", "env_config": {"levels": str(outside)}})
    assert status == 403 and "levels" in body["error"]
    for name in (str(outside), "../private/outside.txt", "/etc/passwd"):
        status, body = request(url, "POST", "/reset", {"env": "sokoban", "levels": name})
        assert status == 400 and "not a path" in body["error"]
    # Whether a file exists outside the directories cannot be told from the answer.
    answers = {name: request(url, "POST", "/reset", {"env": "sokoban", "levels": name})
               for name in ("outside.txt", "no_such_file.txt")}
    assert {status for status, _ in answers.values()} == {404}
    assert [b["error"].replace(n, "NAME") for n, (_, b) in answers.items()] == \
        ["no level set 'NAME' on this server (GET /policy lists them)"] * 2
    # A malformed file of the operator's: the error names the file by its name, not by its path.
    status, body = request(url, "POST", "/reset", {"env": "sokoban", "levels": "bad.txt", "seed": 0})
    assert status == 400 and body["error"].startswith("bad.txt: level 0") and str(tmp_path) not in body["error"]
    status, body = request(url, "POST", "/reset", {"env": "sokoban", "levels": "three.txt", "seed": 1})
    local = TextEpisode("sokoban", 1, env_config={"levels": str(level_dir / "three.txt")})
    assert status == 200 and body["messages"] == local.messages
    assert body["info"]["env_config"]["levels"] == "three.txt"
    state = request(url, "GET", f"/state/{body['episode_id']}")[1]
    assert str(tmp_path) not in json.dumps(body) + json.dumps(state)
    assert request(url, "GET", "/policy")[1]["levels"] == ["bad.txt", "three.txt"]
    # Certificates went to the server's cache directory; nothing was written beside any level file.
    assert sorted(p.name for p in level_dir.iterdir()) == ["bad.txt", "three.txt"]
    assert sorted(p.name for p in outside.parent.iterdir()) == ["outside.txt"]
    assert len(list(cache.glob("*.json"))) == 1 and not (tmp_path / "user_cache").exists()


def test_a_level_set_over_the_size_cap_is_not_read(serve, level_dir, monkeypatch):
    url = serve(ClientPolicy(levels_dirs=(level_dir,), max_level_bytes=64))
    monkeypatch.setattr(level_files, "load_level_set", lambda *a, **k: pytest.fail("the oversized set was read"))
    status, body = request(url, "POST", "/reset", {"env": "sokoban", "levels": "three.txt"})
    assert status == 403 and "over this server's limit of 64" in body["error"]


def test_a_seedless_reset_on_a_level_file_plays_one_of_its_levels(serve, level_dir, tmp_path):
    url = serve(ClientPolicy(levels_dirs=(level_dir,), cache_dir=tmp_path / "cache"))
    seeds = []
    for _ in range(20):
        status, body = request(url, "POST", "/reset", {"env": "sokoban", "levels": "three.txt"})
        assert status == 200, body
        seeds.append(body["info"]["seed"])
        local = TextEpisode("sokoban", body["info"]["seed"], env_config={"levels": str(level_dir / "three.txt")})
        assert body["messages"] == local.messages
    assert set(seeds) == {0, 1, 2}  # each of the three drawn (all 20 the same pair: 1 in 10**3)


# -- access: a token beyond loopback, a share of the slots per client, a cap on connections -------------------


def test_binding_beyond_loopback_needs_a_token(serve, monkeypatch):
    with pytest.raises(ValueError, match="--auth-token-env"):
        start_server("0.0.0.0", 0)
    result = subprocess.run([sys.executable, "-m", "ragen_envs.server", "--host", "0.0.0.0", "--port", "0"],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 2 and "--auth-token-env" in result.stderr.strip().splitlines()[-1]
    result = subprocess.run([sys.executable, "-m", "ragen_envs.server", "--auth-token-env", "RAGEN_NO_SUCH_VAR"],
                            capture_output=True, text=True, timeout=60, env={**os.environ, "RAGEN_NO_SUCH_VAR": ""})
    assert result.returncode == 2 and "RAGEN_NO_SUCH_VAR" in result.stderr
    url = serve(ClientPolicy(auth_token=TOKEN), host="0.0.0.0")
    for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": TOKEN}):
        status, body = request(url, "POST", "/reset", {"env": "bandit", "seed": 1}, headers=headers)
        assert status == 401 and "Bearer" in body["error"]
    assert request(url, "GET", "/health")[0] == 401
    status, body = request(url, "POST", "/reset", {"env": "bandit", "seed": 1},
                           headers={"Authorization": f"Bearer {TOKEN}"})
    assert status == 200 and body["info"]["seed"] == 1


def test_the_command_line_serves_with_a_token_from_the_environment():
    env = {**os.environ, "RAGEN_SERVER_TOKEN": TOKEN}
    process = subprocess.Popen([sys.executable, "-m", "ragen_envs.server", "--host", "0.0.0.0", "--port", "0",
                                "--auth-token-env", "RAGEN_SERVER_TOKEN"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        line = process.stdout.readline()
        port = line.strip().rsplit(":", 1)[1]
        url = f"http://127.0.0.1:{port}"
        assert request(url, "GET", "/health")[0] == 401
        assert request(url, "GET", "/health", headers={"Authorization": f"Bearer {TOKEN}"})[0] == 200
    finally:
        process.terminate()
        _, stderr = process.communicate(timeout=30)
    assert TOKEN not in line + stderr


@pytest.mark.parametrize("token", ["s3cret-token\n", " s3cret-token", "s3cret-t\u00f6ken"])
def test_a_token_no_client_can_send_is_refused_at_startup(token):
    # The server once started (exit 0) and answered every request 401: it strips the token a client sends, and
    # reads the header as Latin-1, so a trailing newline or a non-ASCII character could never match.
    result = subprocess.run([sys.executable, "-m", "ragen_envs.server", "--port", "0", "--auth-token-env", "T"],
                            capture_output=True, text=True, timeout=30, env={**os.environ, "T": token})
    assert result.returncode == 2 and result.stdout == ""
    assert "--auth-token-env T: auth_token must be a bearer token" in result.stderr and token not in result.stderr


def test_one_client_cannot_take_every_episode_slot(serve):
    url = serve()  # the defaults: 1,024 slots, at most 256 per client
    with ThreadPoolExecutor(max_workers=8) as pool:
        answers = list(pool.map(lambda s: request(url, "POST", "/reset", {"env": "frozenlake", "seed": s}),
                                range(260)))
    assert sorted(status for status, _ in answers) == [200] * 256 + [429] * 4
    assert "its limit" in next(b["error"] for s, b in answers if s == 429)
    # Another client (another loopback address) still gets episodes.
    assert request(url, "POST", "/reset", {"env": "frozenlake", "seed": 1}, source="127.0.0.2")[0] == 200
    # A finished episode of the client makes room for its next one.
    finished = next(b["episode_id"] for s, b in answers if s == 200)
    request(url, "POST", "/close", {"episode_id": finished})
    assert request(url, "POST", "/reset", {"env": "frozenlake", "seed": 1})[0] == 200
    assert request(url, "POST", "/reset", {"env": "frozenlake", "seed": 2})[0] == 429


def test_connections_beyond_the_cap_get_a_503_and_are_closed(serve):
    url = serve(ClientPolicy(max_connections=3))
    port = int(url.rsplit(":", 1)[1])
    held = [socket.create_connection(("127.0.0.1", port), timeout=10) for _ in range(3)]
    try:
        time.sleep(0.2)  # every held connection has its thread by now
        extra = socket.create_connection(("127.0.0.1", port), timeout=10)
        answer = b""
        while chunk := extra.recv(4096):
            answer += chunk
        extra.close()
        head, _, body = answer.partition(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 503") and b"3 connections" in body
    finally:
        for connection in held:
            connection.close()
    deadline, served = time.monotonic() + 10, False
    while not served and time.monotonic() < deadline:  # the closed connections' threads give their places back
        try:
            served = request(url, "GET", "/health")[0] == 200
        except ConnectionError:
            pass
        time.sleep(0.05)
    # Judged on the loop's own answer: one more request could race the thread that answered it, which
    # gives its place back just after the client has read the reply.
    assert served


def test_headers_trickled_byte_by_byte_lose_their_connection_at_the_deadline(serve, monkeypatch):
    # Slowloris: the idle timeout restarted on every byte, so two sockets trickling header bytes held both
    # connections of this server for ever and every other client got a 503.
    monkeypatch.setattr(server_app, "HEADER_TIMEOUT_S", 1.0)
    url = serve(ClientPolicy(max_connections=2))
    port = int(url.rsplit(":", 1)[1])
    held = [socket.create_connection(("127.0.0.1", port), timeout=10) for _ in range(2)]
    start, closed = time.monotonic(), set()
    try:
        for connection in held:
            connection.sendall(b"GET /health HTTP/1.1\r\n")
        while len(closed) < len(held) and time.monotonic() - start < 10:
            time.sleep(0.2)
            for i, connection in enumerate(held):
                try:
                    connection.sendall(b"X")
                except OSError:
                    closed.add(i)
        assert len(closed) == len(held) and time.monotonic() - start < 5
    finally:
        for connection in held:
            connection.close()
    deadline = time.monotonic() + 5  # each closed connection's thread gives its place back just after closing it
    while request(url, "GET", "/health")[0] != 200 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert request(url, "GET", "/health")[0] == 200


# -- malformed bodies: always a 400 ---------------------------------------------------------------------------


@pytest.mark.parametrize(("raw", "words"), [
    (b"[" * 10_000 + b"]" * 10_000, "nests deeper"),
    (b'{"env": "bandit", "x": ' + b"[" * 40 + b"]" * 40 + b"}", "nests deeper"),
    (b'{"env": "bandit", "protocol": {"format_penalty": NaN}}', "NaN"),
    (b'{"env": "bandit", "seed": 1' + b"0" * 5000 + b"}", "not JSON"),
    (b'{"env": "bandit", "seed": 18446744073709551616}', "0..2**63-1"),
    (b'{"env": "\xff"}', "not JSON"),
    (b'{"env": "bandit", "levels": 3}', "wrong type"),
])
def test_every_malformed_body_gets_a_400(serve, raw, words):
    url = serve()
    status, body = request(url, "POST", "/reset", raw=raw)
    assert status == 400 and words in body["error"] and "\n" not in body["error"]
    assert request(url, "GET", "/health")[0] == 200


def test_bodies_whose_length_is_unknown_are_refused_and_the_connection_closed(serve):
    host, port = serve().removeprefix("http://").split(":")
    for header, value in (("Transfer-Encoding", "chunked"), ("Content-Length", "-5")):
        connection = http.client.HTTPConnection(host, int(port), timeout=60)
        connection.putrequest("POST", "/reset")
        connection.putheader(header, value)
        connection.endheaders()
        if header == "Transfer-Encoding":
            connection.send(b'2\r\n{}\r\n0\r\n\r\n')
        response = connection.getresponse()
        assert response.status == 400 and response.getheader("Connection") == "close"
        assert "length" in json.loads(response.read())["error"].lower()
        connection.close()
