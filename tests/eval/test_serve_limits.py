"""``ragen-eval serve`` under hostile or heavy requests: linear prompt reading, a free event loop while
an agent works, 400 for bad bodies, the optional API key, and an oracle that solves hard levels.

All over real loopback HTTP (raw ``httpx``); the Boxoban-style level is generated and written to a
file by the test itself.
"""

from __future__ import annotations

import subprocess
import sys
import threading
import time

import httpx
import pytest

from ragen_envs.sokoban import ACTION_NAMES, format_boxoban, format_level, generate, load_boxoban
from ragen_envs.sokoban.text import RAGEN_SYMBOLS, STANDARD_SYMBOLS
from ragen_envs.text import TextEpisode
from ragen_eval.serve import ServeConfig, serve_in_thread

from tests.eval.test_serve import FixedAgent, body, post

#: A 10x10, six-box level whose optimal search expands about 311,000 states: more than the 200,000 the
#: served oracle allowed itself before, about two seconds of search on this machine.
HARD_LEVEL_CONFIG = {"height": 10, "width": 10, "num_boxes": 6, "min_pushes": 12, "search_budget": 40_000}
HARD_LEVEL_SEED = 10


def chat_for_level(level_text: str) -> list[dict[str, str]]:
    """A real first-turn ``boxoban`` chat whose grid is replaced by ``level_text`` (standard notation)."""
    to_ragen = {STANDARD_SYMBOLS[kind]: RAGEN_SYMBOLS[kind] for kind in STANDARD_SYMBOLS}
    to_ragen[" "] = RAGEN_SYMBOLS["floor"]
    grid = "\n".join("".join(to_ragen[ch] for ch in row) for row in level_text.splitlines())
    messages = TextEpisode("boxoban", 0).messages
    last = messages[-1]["content"]
    head, _, rest = last.rpartition("State:\n")
    messages[-1] = {"role": "user", "content": head + "State:\n" + grid + rest[rest.index("\nActions left"):]}
    return messages


def test_the_oracle_solves_a_level_past_the_old_budget_without_blocking_health(tmp_path):
    path = tmp_path / "levels.txt"
    path.write_text(format_boxoban([generate(HARD_LEVEL_CONFIG, HARD_LEVEL_SEED)]))
    (level,) = load_boxoban(path)
    messages = chat_for_level(format_level(level))
    health_seconds: list[float] = []
    with serve_in_thread(ServeConfig(port=0, agent="oracle"), None) as url:
        root = url.removesuffix("/v1")
        answer: dict = {}
        request = threading.Thread(target=lambda: answer.update(
            post(url, {"model": "oracle", "messages": messages, "temperature": 0}, httpx.Client(timeout=60)).json()))
        request.start()
        with httpx.Client(timeout=5) as client:
            while request.is_alive():
                start = time.perf_counter()
                assert client.get(root + "/health").status_code == 200
                health_seconds.append(time.perf_counter() - start)
                time.sleep(0.05)
        request.join()
    text = answer["choices"][0]["message"]["content"]
    # Before, the search stopped at its cap and the answer was "<answer></answer>" with the reason.
    # (Solving here again to compare moves would double the test's time; the solver's optimality
    # has its own tests.)
    moves = text.rpartition("<answer>")[2].removesuffix("</answer>").split(" || ")
    assert len(moves) == 5 and set(moves) <= set(ACTION_NAMES), text
    assert len(health_seconds) >= 5 and max(health_seconds) < 0.5  # /health answered all through the search


def test_a_huge_prompt_is_read_in_linear_time():
    # 6,500 turn headers after the last whole turn: before, each one started a scan to the end of the text.
    header = "Turn 1 of 5 (5 left, this one included). State:\n"
    messages = chat_for_level("#####\n#@$.#\n#####")
    messages[-1]["content"] += "\n" + header * 6500
    assert len(messages[-1]["content"]) > 313_000
    with serve_in_thread(ServeConfig(port=0, agent="oracle"), None) as url:
        start = time.perf_counter()
        reply = post(url, {"model": "oracle", "messages": messages}, httpx.Client(timeout=10)).json()
        seconds = time.perf_counter() - start
    assert reply["choices"][0]["message"]["content"].endswith("<answer>Right</answer>")
    assert seconds < 2.0


@pytest.mark.parametrize(("payload", "message"), [
    (body(temperature=float("nan")), "'temperature' must be a finite number"),
    (body(top_p=float("inf")), "'top_p' must be a finite number"),
    ({"model": "m", "messages": [{"role": "user", "content": [{"type": "text", "text": 5}]}]}, "must be a string"),
    ({"model": "m", "messages": [{"role": "user", "content": [{"type": "text", "text": None}]}]}, "must be a string"),
    ({"model": "m", "messages": [{"role": "user", "content": [{"type": "text"}]}]}, "must be a string"),
    ({"model": "m", "messages": [{"role": "user", "content": ["just a string"]}]}, "must be an object"),
])
def test_bad_request_bodies_get_400_not_a_retried_500(payload, message):
    with serve_in_thread(ServeConfig(port=0), FixedAgent()) as url:
        response = post(url, payload)  # json.dumps writes NaN and Infinity as Python's json reads them
        assert post(url, body()).status_code == 200  # and the server still serves
    assert response.status_code == 400, response.text
    assert message in response.json()["error"]["message"]


def test_the_api_key_guards_v1_routes_but_not_health(monkeypatch):
    monkeypatch.setenv("RAGEN_TEST_SERVE_KEY", "k-123")
    with serve_in_thread(ServeConfig(port=0, api_key_env="RAGEN_TEST_SERVE_KEY"), FixedAgent()) as url:
        root = url.removesuffix("/v1")
        without = post(url, body())
        wrong = httpx.post(url + "/chat/completions", json=body(), headers={"Authorization": "Bearer nope"})
        bearer = httpx.post(url + "/chat/completions", json=body(), headers={"Authorization": "Bearer k-123"})
        basic = httpx.post(url + "/chat/completions", json=body(), auth=("anyone", "k-123"))
        models = httpx.get(url + "/models")
        health = httpx.get(root + "/health")
    assert without.status_code == wrong.status_code == models.status_code == 401
    assert without.json()["error"]["type"] == "authentication_error"
    assert bearer.status_code == basic.status_code == health.status_code == 200


def test_an_unset_api_key_variable_is_a_one_line_error_before_serving(monkeypatch):
    monkeypatch.delenv("RAGEN_TEST_UNSET_KEY", raising=False)
    done = subprocess.run([sys.executable, "-m", "ragen_eval.cli", "serve", "--port", "0",
                           "--api-key-env", "RAGEN_TEST_UNSET_KEY"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.strip() == ("ragen-eval serve: error: --api-key-env RAGEN_TEST_UNSET_KEY: "
                                   "that environment variable is unset or empty")


def test_binding_beyond_loopback_needs_a_key_and_says_which_guards_the_server(monkeypatch, capfd):
    monkeypatch.setenv("RAGEN_TEST_SERVE_KEY", "k")
    with serve_in_thread(ServeConfig(host="0.0.0.0", port=0, api_key_env="RAGEN_TEST_SERVE_KEY"), FixedAgent()):
        pass
    with serve_in_thread(ServeConfig(port=0), FixedAgent()):
        pass
    err = capfd.readouterr().err.splitlines()
    notices = [line for line in err if "beyond loopback" in line]
    assert notices == ["ragen-eval serve: bound to 0.0.0.0, beyond loopback: requests need the API key in "
                       "$RAGEN_TEST_SERVE_KEY"]


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "", "example.org"])
def test_binding_beyond_loopback_without_a_key_is_refused_before_binding(host):
    # Before, the server bound every interface with only a warning; the env servers refuse (exit 2), and so does it.
    with pytest.raises(ValueError, match=r"makes the server reachable beyond this machine: require a key with "
                                         r"--api-key-env NAME"):
        ServeConfig(host=host, port=0)
    if host == "0.0.0.0":
        done = subprocess.run([sys.executable, "-m", "ragen_eval.cli", "serve", "--host", host, "--port", "0"],
                              capture_output=True, text=True, timeout=60)
        assert done.returncode == 2 and done.stdout == ""
        assert done.stderr.strip().splitlines() == [
            "ragen-eval serve: error: --host 0.0.0.0 makes the server reachable beyond this machine: require a key "
            "with --api-key-env NAME (the key in environment variable NAME)"]

