"""`python -m ragen_envs.server`: the games over loopback HTTP, checked against in-process episodes.

Every test talks to a real server on 127.0.0.1 through the standard library's HTTP client. The
reference for every trajectory is a :class:`TextEpisode` played in this process with the same replies.
"""

from __future__ import annotations

import http.client
import json
import random
import subprocess
import sys
import threading
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragen_envs import split_seeds
from ragen_envs.server import MAX_BODY_BYTES, EpisodeStore, start_server
from ragen_envs.server.app import DRAIN_CAP_BYTES
from ragen_envs.text import TextEpisode, format_reply

GAMES = ("bandit", "simple_sokoban", "frozenlake")


def call(url: str, method: str, path: str, body: object = None, *, raw: bytes | None = None) -> tuple[int, dict]:
    """(status, JSON body) of one request; HTTP errors are returned, not raised."""
    data = raw if raw is not None else None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url + path, method=method, data=data,
                                     headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


@pytest.fixture
def served():
    """Start a server with the given store (default: a fresh one); every server is shut down after the test."""
    started = []

    def start(store: EpisodeStore | None = None) -> str:
        server, _ = start_server(store=store)
        started.append(server)
        return server.url

    yield start
    for server in started:
        server.shutdown()
        server.server_close()


def _replies(index: int, action_names: list[str], count: int = 6) -> list[str]:
    """A fixed mix of valid, multi-action, misspelt and malformed replies for episode ``index``."""
    rng = random.Random(index)
    replies = []
    for _ in range(count):
        kind = rng.random()
        picked = [rng.choice(action_names) for _ in range(rng.randint(1, 3))]
        if kind < 0.6:
            replies.append(format_reply(picked, thought=f"try {index}"))
        elif kind < 0.75:
            replies.append(format_reply([name.lower() for name in picked] + ["jump"], thought="x"))
        elif kind < 0.9:
            replies.append(f"I would go {picked[0]}")  # no tags: a format error, penalised
        else:
            replies.append("<think>a</think><answer></answer>")
    return replies


def test_200_concurrent_episodes_equal_in_process_ones(served):
    url = served(EpisodeStore(max_episodes=256))
    seeds = {game: split_seeds("test", 67, env=game) for game in GAMES}
    jobs = [(GAMES[i % 3], seeds[GAMES[i % 3]][i // 3], i) for i in range(200)]
    # Every episode is opened before any is played, so all 200 are live on the server at once.
    with ThreadPoolExecutor(max_workers=32) as pool:
        opened = list(pool.map(lambda job: call(url, "POST", "/reset", {"env": job[0], "seed": job[1]}), jobs))
    assert all(status == 200 for status, _ in opened)
    assert len({body["episode_id"] for _, body in opened}) == 200
    assert call(url, "GET", "/health")[1]["episodes"] == 200

    def play(job_and_opened):
        (env, seed, index), (_, first) = job_and_opened
        replies = _replies(index, first["info"]["action_names"])
        observed = {"messages": [first["messages"]], "rewards": [], "done": []}
        for reply in replies:
            status, body = call(url, "POST", "/step", {"episode_id": first["episode_id"], "reply": reply})
            assert status == 200, body
            observed["messages"].append(body["messages"])
            observed["rewards"].append(body["reward"])
            observed["done"].append(body["done"])
            if body["done"]:
                break
        observed["record"] = call(url, "GET", f"/state/{first['episode_id']}")[1]["record"]
        return observed

    with ThreadPoolExecutor(max_workers=32) as pool:
        remote = list(pool.map(play, zip(jobs, opened)))

    ends = set()
    for (env, seed, index), (_, first), got in zip(jobs, opened, remote):
        local = TextEpisode(env, seed)
        expected = {"messages": [local.messages], "rewards": [], "done": []}
        for reply in _replies(index, list(local.game.action_names)):
            turn = local.step(reply)
            expected["messages"].append(local.messages)
            expected["rewards"].append(turn["reward"] + turn["penalty"])
            expected["done"].append(local.done)
            if local.done:
                break
        expected["record"] = json.loads(json.dumps(local.record()))
        assert got == expected, f"episode {index} ({env}, seed {seed}) differs from the in-process one"
        assert first["info"]["certificate"] == expected["record"]["certificate"]
        ends.add(local.end_reason)
    # The replies won, lost and ran out of turns, so the comparison covered each way an episode ends.
    assert {"success", "failure", "max_turns"} <= ends


@pytest.fixture(scope="module")
def shared_url():
    """One server for the property test below (hypothesis reruns a test body, not its fixtures)."""
    server, _ = start_server()
    yield server.url
    server.shutdown()
    server.server_close()


_REPLY_PARTS = st.sampled_from(["<think>", "</think>", "<answer>", "</answer>", "||", "Up", "down", "LEFT", "right",
                                "jump", " ", "\n", "north", "<ANSWER>"])


@settings(max_examples=40, deadline=None)
@given(env=st.sampled_from(["simple_sokoban", "frozenlake", "frozenlake_det"]), seed=st.integers(0, 10**6),
       replies=st.lists(st.lists(_REPLY_PARTS, max_size=12).map("".join) | st.text(max_size=40), min_size=1,
                        max_size=6))
def test_any_replies_score_as_in_process(shared_url, env, seed, replies):
    _, opened = call(shared_url, "POST", "/reset", {"env": env, "seed": seed})
    local = TextEpisode(env, seed)
    for reply in replies:
        status, body = call(shared_url, "POST", "/step", {"episode_id": opened["episode_id"], "reply": reply})
        if local.done:
            assert status == 409
            break
        turn = json.loads(json.dumps(local.step(reply)))
        assert status == 200 and body["turn"] == turn and body["messages"] == local.messages
        assert body["reward"] == turn["reward"] + turn["penalty"]
    assert call(shared_url, "POST", "/close", {"episode_id": opened["episode_id"]})[1]["record"] == \
        json.loads(json.dumps(local.record()))


def test_action_names_play_as_a_well_formed_reply(served):
    url = served()
    _, opened = call(url, "POST", "/reset", {"env": "simple_sokoban", "seed": 7,
                                             "protocol": {"think": False, "max_turns": 3}})
    local = TextEpisode("simple_sokoban", 7, {"think": False, "max_turns": 3})
    solution = local.certificate["solution"]
    status, body = call(url, "POST", "/step", {"episode_id": opened["episode_id"], "action": solution[:2]})
    turn = local.step(format_reply(solution[:2]))
    assert status == 200 and body["turn"] == json.loads(json.dumps(turn)) and turn["format_ok"]
    _, single = call(url, "POST", "/step", {"episode_id": opened["episode_id"], "action": solution[2]})
    assert single["turn"]["actions_executed"] == [solution[2]]


def test_a_seedless_reset_draws_a_seed_that_replays_the_level(served):
    url = served()
    _, body = call(url, "POST", "/reset", {"env": "simple_sokoban"})
    replayed = TextEpisode("simple_sokoban", body["info"]["seed"])
    assert body["messages"] == replayed.messages


@pytest.mark.parametrize(("method", "path", "body", "status", "words"), [
    ("POST", "/reset", {"env": "no_such_game"}, 400, "unknown environment"),
    ("POST", "/reset", {"seed": 1}, 400, "missing field 'env'"),
    ("POST", "/reset", {"env": "bandit", "seed": -3}, 400, "0..2**63-1"),
    ("POST", "/reset", {"env": "bandit", "seed": "3"}, 400, "wrong type"),
    ("POST", "/reset", {"env": "bandit", "protocol": {"max_turn": 2}}, 400, "unknown ProtocolConfig fields"),
    # Refused at reset: a width rendered 40 MB, and a bad spec failed only after the next turn was played.
    ("POST", "/reset", {"env": "sokoban", "protocol": {"turn_template": "{turns_left:>20000000}"}}, 400, "bare"),
    ("POST", "/reset", {"env": "bandit", "protocol": {"feedback_template": "{errors:d}"}}, 400, "bare"),
    ("POST", "/reset", {"env": "simple_sokoban", "env_config": {"height": 7}}, 403, "presets as they are"),
    ("POST", "/reset", {"env": "CartPole-v1"}, 400, "unknown environment"),
    ("POST", "/reset", {"env": "bandit", "sed": 1}, 400, "unknown field(s) ['sed']"),
    ("POST", "/reset", [1, 2], 400, "JSON object"),
    ("POST", "/step", {"episode_id": "nope", "reply": "x"}, 404, "no live episode"),
    ("POST", "/step", {"episode_id": "nope"}, 400, "exactly one of"),
    ("POST", "/close", {"episode_id": "nope"}, 404, "no live episode"),
    ("GET", "/state/nope", None, 404, "no live episode"),
    ("GET", "/reset", None, 405, "not allowed"),
    ("POST", "/health", {}, 405, "not allowed"),
    ("GET", "/v1/models", None, 404, "no route"),
])
def test_bad_requests_get_a_clear_4xx(served, method, path, body, status, words):
    url = served()
    got_status, got = call(url, method, path, body)
    assert got_status == status
    assert words in got["error"] and "\n" not in got["error"]


def test_bodies_that_are_not_json_or_too_large_are_refused(served):
    url = served()
    assert call(url, "POST", "/reset", raw=b"{not json")[0] == 400
    status, body = call(url, "POST", "/reset", raw=b" " * (MAX_BODY_BYTES + 1))
    assert status == 413 and "limit" in body["error"]
    assert call(url, "GET", "/health")[0] == 200  # the server is still serving


def test_a_body_claimed_beyond_the_drain_cap_is_refused_without_being_read(served):
    host, port = served().removeprefix("http://").split(":")
    connection = http.client.HTTPConnection(host, int(port), timeout=60)
    connection.putrequest("POST", "/reset")
    connection.putheader("Content-Length", str(DRAIN_CAP_BYTES + 1))
    connection.endheaders(b"{}")  # far fewer bytes than claimed: the server must not wait for the rest
    response = connection.getresponse()
    assert response.status == 413 and "limit" in json.loads(response.read())["error"]
    assert response.getheader("Connection") == "close"
    connection.close()


def test_a_finished_episode_refuses_steps_until_it_is_closed(served):
    url = served()
    _, body = call(url, "POST", "/reset", {"env": "bandit", "seed": 1})
    episode_id = body["episode_id"]
    assert call(url, "POST", "/step", {"episode_id": episode_id, "action": "Phoenix"})[1]["done"]
    status, refused = call(url, "POST", "/step", {"episode_id": episode_id, "action": "Phoenix"})
    assert status == 409 and "already ended" in refused["error"]
    status, closed = call(url, "POST", "/close", {"episode_id": episode_id})
    assert status == 200 and closed["record"]["num_turns"] == 1
    assert call(url, "GET", f"/state/{episode_id}")[0] == 404


class FakeClock:
    """A monotonic clock the test moves by hand."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_idle_episodes_expire_and_touched_ones_stay(served):
    clock = FakeClock()
    url = served(EpisodeStore(max_episodes=8, idle_timeout_s=60, clock=clock))
    ids = [call(url, "POST", "/reset", {"env": "frozenlake", "seed": s})[1]["episode_id"] for s in range(2)]
    clock.now = 50
    assert call(url, "GET", f"/state/{ids[1]}")[0] == 200  # touching restarts its idle clock
    clock.now = 100
    assert call(url, "POST", "/step", {"episode_id": ids[0], "action": "Left"})[0] == 404
    assert call(url, "POST", "/step", {"episode_id": ids[1], "action": "Left"})[0] == 200
    assert call(url, "GET", "/health")[1]["episodes"] == 1


def test_a_full_server_reuses_finished_slots_and_refuses_beyond(served):
    url = served(EpisodeStore(max_episodes=2, idle_timeout_s=600))
    first = call(url, "POST", "/reset", {"env": "bandit", "seed": 1})[1]["episode_id"]
    call(url, "POST", "/reset", {"env": "bandit", "seed": 2})
    status, full = call(url, "POST", "/reset", {"env": "bandit", "seed": 3})
    assert status == 503 and "unfinished" in full["error"]
    call(url, "POST", "/step", {"episode_id": first, "action": "Dragon"})  # finishes: its slot may be reused
    assert call(url, "POST", "/reset", {"env": "bandit", "seed": 3})[0] == 200
    assert call(url, "GET", f"/state/{first}")[0] == 404


def test_steps_of_one_episode_never_interleave(served):
    # Many clients send the same episode's turns at once: each turn is played whole, one after another.
    url = served()
    _, body = call(url, "POST", "/reset", {"env": "frozenlake", "seed": 5, "protocol": {"max_turns": 40,
                                                                                       "max_actions_per_episode": 40}})
    barrier = threading.Barrier(8)

    def send(_):
        barrier.wait()
        return call(url, "POST", "/step", {"episode_id": body["episode_id"], "reply": "no tags"})

    with ThreadPoolExecutor(max_workers=8) as pool:
        results = list(pool.map(send, range(8)))
    assert sorted(b["turn"]["turn"] for _, b in results) == list(range(1, 9))
    assert call(url, "GET", f"/state/{body['episode_id']}")[1]["info"]["total_reward"] == pytest.approx(-0.8)


def test_the_command_line_serves_on_loopback_and_rejects_bad_flags():
    process = subprocess.Popen([sys.executable, "-m", "ragen_envs.server", "--port", "0"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = process.stdout.readline()
        assert line.startswith("ragen_envs.server: listening on http://127.0.0.1:")
        url = line.split("listening on ")[1].strip()
        assert call(url, "GET", "/health")[1]["status"] == "ok"
        assert call(url, "GET", "/envs")[1]["envs"][0]["env_id"].startswith("ragen/")
    finally:
        process.terminate()
        process.wait(timeout=30)
    bad = subprocess.run([sys.executable, "-m", "ragen_envs.server", "--max-episodes", "0"],
                         capture_output=True, text=True, timeout=60)
    assert bad.returncode != 0 and "--max-episodes" in bad.stderr.strip().splitlines()[-1]


def test_replies_leave_without_waiting_for_the_client_s_ack(served, monkeypatch):
    """A reply is two writes (headers, body): with Nagle's algorithm on, each request of a kept-alive connection
    waited about 40 ms for the client's delayed ACK. The server's accepted sockets must send at once."""
    import socket

    from ragen_envs.server.app import EnvRequestHandler

    seen: list[int] = []
    setup = EnvRequestHandler.setup

    def recording_setup(handler: EnvRequestHandler) -> None:
        setup(handler)
        seen.append(handler.connection.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY))

    monkeypatch.setattr(EnvRequestHandler, "setup", recording_setup)
    url = served()
    connection = http.client.HTTPConnection(url.split("//", 1)[1], timeout=30)
    for _ in range(3):
        connection.request("GET", "/health")
        assert connection.getresponse().read()
    connection.close()
    assert seen and all(seen), seen
