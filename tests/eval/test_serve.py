"""``ragen-eval serve``: the OpenAI-compatible surface, fault injection, and the built-in chat policies.

Everything goes over real loopback HTTP: raw ``httpx`` for the wire format, the ``openai`` client
(through :class:`OpenAIChatAgent`) for play.
"""

from __future__ import annotations

import asyncio
import json
import math
import os
import signal
import subprocess
import sys

import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragen_eval.agents.base import Completion, SamplingParams
from ragen_eval.serve import LISTENING_PREFIX, ServeConfig, count_tokens, serve_in_thread, truncate_to_tokens


class FixedAgent:
    """Always answers ``text``."""

    name = "fixed"

    def __init__(self, text: str = "<think>ok</think><answer>Up</answer>") -> None:
        self.text = text

    async def act(self, messages, *, n=1, sampling=SamplingParams(), episode=None) -> list[Completion]:
        return [Completion(text=self.text) for _ in range(n)]

    async def aclose(self) -> None:
        pass


def body(content: str = "hello", **extra) -> dict:
    return {"model": "m", "messages": [{"role": "user", "content": content}], **extra}


def post(url: str, payload, client: httpx.Client | None = None) -> httpx.Response:
    client = client or httpx.Client()
    data = payload if isinstance(payload, (bytes, str)) else json.dumps(payload)
    return client.post(url + "/chat/completions", content=data, headers={"Content-Type": "application/json"})


# --- the wire format --------------------------------------------------------------------------------


def test_models_endpoint_and_a_well_formed_completion():
    with serve_in_thread(ServeConfig(port=0, model_name="tiny-oracle"), FixedAgent()) as url:
        models = httpx.get(url + "/models").json()
        reply = post(url, body("one two three", n=2)).json()
    assert models["object"] == "list" and [m["id"] for m in models["data"]] == ["tiny-oracle"]
    assert reply["object"] == "chat.completion" and reply["model"] == "tiny-oracle"
    assert [c["index"] for c in reply["choices"]] == [0, 1]
    for choice in reply["choices"]:
        assert choice["message"] == {"role": "assistant", "content": "<think>ok</think><answer>Up</answer>"}
        assert choice["finish_reason"] == "stop"
    # Per choice: <think> and <answer> are 3 tokens each ('<', name, '>'), the closing tags 4, plus 'ok' and 'Up'.
    assert reply["usage"] == {"prompt_tokens": 3, "completion_tokens": 2 * 16, "total_tokens": 35}


@pytest.mark.parametrize(("payload", "needle"), [
    (b"{not json", "not valid JSON"),
    (b"\xff\xfe", "not valid JSON"),
    (b"[" * 100_000, "not valid JSON"),
    ([1, 2], "JSON object"),
    ({"model": "m"}, "'messages'"),
    ({"model": "m", "messages": []}, "'messages'"),
    ({"model": "m", "messages": [{"content": "x"}]}, "role"),
    ({"model": "m", "messages": [{"role": "user", "content": 5}]}, "content"),
    (body(n=0), "'n'"),
    (body(n=True), "'n'"),
    (body(max_tokens=0), "max_tokens"),
    (body(temperature=-1), "temperature"),
    (body(seed="x"), "seed"),
    (body(stream="yes"), "stream"),
    (body(stream=True, stream_options=[1]), "stream_options"),
])
def test_bad_requests_get_a_400_with_an_openai_error_body(payload, needle):
    with serve_in_thread(ServeConfig(port=0), FixedAgent()) as url:
        response = post(url, payload)
    assert response.status_code == 400
    error = response.json()["error"]
    assert needle in error["message"] and error["type"] == "invalid_request_error"


@pytest.mark.parametrize("reasoning_field", [False, True])
def test_a_streamed_completion_carries_the_same_answer_as_a_plain_one(reasoning_field):
    """``stream=true`` (what verifiers' chat harness sends): OpenAI's client reassembles the plain reply."""
    import openai

    text = "<think>ok then</think><answer>Up || Left</answer> and more words"
    config = ServeConfig(port=0, model_name="m", reasoning_field=reasoning_field)
    with serve_in_thread(config, FixedAgent(text)) as url:
        plain = post(url, body("a b", n=2, max_tokens=12)).json()
        client = openai.OpenAI(base_url=url, api_key="unused")
        chunks = list(client.chat.completions.create(model="m", messages=[{"role": "user", "content": "a b"}], n=2,
                                                     max_tokens=12, stream=True,
                                                     stream_options={"include_usage": True}))
        unasked = list(client.chat.completions.create(model="m", messages=[{"role": "user", "content": "a b"}],
                                                      stream=True))
        client.close()
    streamed: dict[int, dict] = {}
    for chunk in chunks[:-1]:
        for choice in chunk.choices:
            got = streamed.setdefault(choice.index, {"content": "", "reasoning_content": None})
            got["content"] += choice.delta.content or ""
            extra = (choice.delta.model_extra or {}).get("reasoning_content")
            if extra is not None:
                got["reasoning_content"] = extra
            got["finish_reason"] = choice.finish_reason
    assert sorted(streamed) == [0, 1]
    for choice in plain["choices"]:
        got = streamed[choice["index"]]
        assert got["content"] == choice["message"]["content"] and got["finish_reason"] == choice["finish_reason"]
        assert got["reasoning_content"] == choice["message"].get("reasoning_content")
    assert plain["choices"][0]["finish_reason"] == "length"  # 12 tokens cut the text: the cut is streamed too
    assert chunks[-1].choices == [] and chunks[-1].usage.model_dump(exclude_none=True) == plain["usage"]
    assert all(chunk.usage is None for chunk in unasked)  # usage only when stream_options asks for it


def test_content_parts_and_max_completion_tokens_are_understood():
    parts = [{"type": "text", "text": "a b"}, {"type": "image_url", "image_url": {"url": "data:image/png;base64,"}},
             {"type": "text", "text": " c"}]
    with serve_in_thread(ServeConfig(port=0), FixedAgent("one two three four")) as url:
        reply = post(url, {"model": "m", "messages": [{"role": "user", "content": parts}],
                           "max_completion_tokens": 2}).json()
    assert reply["usage"]["prompt_tokens"] == 3
    assert reply["choices"][0]["message"]["content"] == "one two "
    assert reply["choices"][0]["finish_reason"] == "length"


@given(st.text(max_size=300), st.integers(1, 60))
def test_truncation_keeps_a_prefix_of_at_most_max_tokens(text, max_tokens):
    cut, was_cut = truncate_to_tokens(text, max_tokens)
    assert text.startswith(cut)
    assert count_tokens(cut) == min(max_tokens, count_tokens(text))
    assert was_cut == (count_tokens(text) > max_tokens)


def test_token_count_is_words_and_marks():
    assert count_tokens("") == 0
    assert count_tokens("<answer>Up || Down</answer>") == 3 + 1 + 2 + 1 + 4
    assert count_tokens("naïve café, 3.5") == 6


@pytest.mark.parametrize(("kwargs", "needle"), [
    ({"failure_rate": 1.5}, "failure-rate"),
    ({"garbage_rate": -0.1}, "garbage-rate"),
    ({"failure_rate": 0.6, "stall_rate": 0.6}, "sum to <= 1"),
    ({"latency": -1.0}, "latency"),
    ({"latency": float("nan")}, "--latency must be a finite number >= 0, got nan"),
    ({"latency_jitter": float("inf")}, "--latency-jitter must be a finite number >= 0, got inf"),
    ({"stall_seconds": float("nan")}, "--stall-seconds must be a finite number >= 0"),
    ({"retry_after": float("inf")}, "--retry-after must be a finite number >= 0"),
    ({"port": 70000}, "port"),
])
def test_serve_config_rejects_bad_settings(kwargs, needle):
    with pytest.raises(ValueError, match=needle):
        ServeConfig(**kwargs)


# --- fault injection --------------------------------------------------------------------------------


def test_fault_frequencies_match_their_rates():
    rates = {"failure_rate": 0.2, "rate_limit_rate": 0.1, "malformed_rate": 0.1, "empty_choices_rate": 0.1}
    trials = 600
    with serve_in_thread(ServeConfig(port=0, fault_seed=11, retry_after=7, **rates), FixedAgent()) as url:
        with httpx.Client() as client:
            responses = [post(url, body(f"x{i}"), client) for i in range(trials)]
        counts = httpx.get(url + "/stats").json()
    observed = {
        "failure": sum(r.status_code == 500 for r in responses),
        "rate_limit": sum(r.status_code == 429 and r.headers["Retry-After"] == "7" for r in responses),
        "malformed": sum(r.status_code == 200 and not _is_json(r.content) for r in responses),
        "empty_choices": sum(r.status_code == 200 and _is_json(r.content) and r.json()["choices"] == []
                             for r in responses),
    }
    for name, rate in rates.items():
        key = name.removesuffix("_rate")
        assert observed[key] == counts[key]
        # Binomial(600, rate) within 4.5 standard deviations.
        assert abs(observed[key] - trials * rate) <= 4.5 * math.sqrt(trials * rate * (1 - rate)), (key, observed)
    assert counts["requests"] == trials
    assert counts["answered"] == trials - sum(observed.values())


def _is_json(data: bytes) -> bool:
    try:
        json.loads(data)
    except ValueError:
        return False
    return True


class BrokenAgent:
    """Raises on every call, like a model backend that ran out of memory."""

    name = "broken"

    async def act(self, messages, *, n=1, sampling=SamplingParams(), episode=None):
        raise RuntimeError("out of memory")

    async def aclose(self) -> None:
        pass


def test_an_agent_that_raises_gives_a_500_and_the_server_lives_on():
    with serve_in_thread(ServeConfig(port=0), BrokenAgent()) as url:
        with httpx.Client() as client:
            responses = [post(url, body(), client) for _ in range(3)]
            alive = client.get(url.removesuffix("/v1") + "/health").json()
    assert [r.status_code for r in responses] == [500] * 3
    assert "RuntimeError: out of memory" in responses[0].json()["error"]["message"]
    assert alive == {"status": "ok"}


def test_a_dropped_connection_sends_half_a_body():
    with serve_in_thread(ServeConfig(port=0, drop_rate=1.0), FixedAgent()) as url:
        with pytest.raises(httpx.RemoteProtocolError):
            post(url, body())


def test_poisoned_prompts_fail_every_time_and_others_never():
    with serve_in_thread(ServeConfig(port=0, poison_rate=0.25), FixedAgent()) as url:
        with httpx.Client() as client:
            first = [post(url, body(f"prompt {i}"), client).status_code for i in range(200)]
            second = [post(url, body(f"prompt {i}"), client).status_code for i in range(200)]
    assert first == second
    assert set(first) == {200, 500}
    assert abs(first.count(500) - 50) <= 4.5 * math.sqrt(200 * 0.25 * 0.75)


def test_garbage_is_valid_json_with_broken_text():
    with serve_in_thread(ServeConfig(port=0, garbage_rate=1.0, fault_seed=5), FixedAgent()) as url:
        with httpx.Client() as client:
            replies = [post(url, body(f"g{i}", max_tokens=100_000), client).json() for i in range(40)]
    texts = [r["choices"][0]["message"]["content"] for r in replies]
    assert "<think>ok</think><answer>Up</answer>" not in texts
    assert any(len(t) >= 100_000 for t in texts)  # the 100 KB kind
    assert any("</answer></answer>" in t for t in texts)  # the fake-tag kind
    assert "" in texts


def test_latency_is_added_to_every_answer():
    with serve_in_thread(ServeConfig(port=0, latency=0.2), FixedAgent()) as url:
        with httpx.Client() as client:
            post(url, body(), client)  # warm the connection
            response = post(url, body(), client)
    assert response.elapsed.total_seconds() >= 0.2


# --- the command line -------------------------------------------------------------------------------


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_serve_as_a_process_announces_its_port_and_stops_cleanly(sig):
    proc = subprocess.Popen([sys.executable, "-m", "ragen_eval.serve", "--agent", "random", "--port", "0"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONUNBUFFERED": "1"})
    try:
        line = proc.stdout.readline()
        assert line.startswith(LISTENING_PREFIX), line
        url = line[len(LISTENING_PREFIX):].strip()
        assert httpx.get(url + "/models", timeout=10).json()["data"][0]["id"] == "random"
    finally:
        proc.send_signal(sig)
        assert proc.wait(timeout=20) == 0
        proc.stdout.close()
        proc.stderr.close()


@pytest.mark.parametrize(("args", "needle"), [(["--agent", "/no/such/dir"], "checkpoint directory"),
                                              (["--failure-rate", "2"], "failure-rate")])
def test_serve_refuses_bad_arguments_with_exit_code_2(args, needle):
    done = subprocess.run([sys.executable, "-m", "ragen_eval.serve", "--port", "0", *args], capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 2
    assert needle in done.stderr


# --- the built-in chat policies, played through HTTP -----------------------------------------------


def play_over_http(url: str, env: str, seeds: list[int], sampling: SamplingParams = SamplingParams(), **episode_kw):
    """Play ``env`` on ``seeds`` through OpenAIChatAgent -> serve; return the finished TextEpisodes."""
    from ragen_envs.text import TextEpisode

    from ragen_eval.agents.openai_agent import OpenAIChatAgent

    async def play(agent, seed):
        episode = TextEpisode(env, seed, **episode_kw)
        while not episode.done:
            (completion,) = await agent.act(episode.messages, sampling=sampling)
            assert completion.error is None, completion.error
            episode.step(completion.text, finish_reason=completion.finish_reason,
                         reasoning=completion.reasoning_text)
        return episode

    async def go():
        agent = OpenAIChatAgent("served", [url], None, concurrency=16)
        try:
            return await asyncio.gather(*(play(agent, seed) for seed in seeds))
        finally:
            await agent.aclose()

    return asyncio.run(go())


def play_in_process(agent, env: str, seeds: list[int], **episode_kw):
    from ragen_envs.text import TextEpisode

    async def play(seed):
        episode = TextEpisode(env, seed, **episode_kw)
        while not episode.done:
            (completion,) = await agent.act(episode.messages, episode=episode)
            episode.step(completion.text, finish_reason=completion.finish_reason)
        return episode

    async def go():
        return await asyncio.gather(*(play(seed) for seed in seeds))

    return asyncio.run(go())


GAMES = ["sokoban", "frozenlake", "frozenlake_det", "bandit", "bandit_heldout", "bandit_reversed"]


@pytest.mark.parametrize("env", GAMES)
def test_served_random_plays_valid_actions_and_is_a_function_of_the_request(env):
    pytest.importorskip("ragen_envs.text")
    seeds = list(range(8))
    with serve_in_thread(ServeConfig(port=0, agent="random")) as url:
        first = play_over_http(url, env, seeds)
        again = play_over_http(url, env, seeds)
    for episode in first:
        record = episode.record()
        for turn in record["turns"]:
            assert turn["format_ok"], turn["format_errors"]
            assert turn["actions_parsed"] and not turn["actions_dropped"]
    assert [e.record()["turns"] for e in first] == [e.record()["turns"] for e in again]


@pytest.mark.parametrize("env", GAMES)
def test_served_oracle_matches_the_in_process_oracle(env):
    pytest.importorskip("ragen_envs.text")
    from ragen_eval.agents.builtin import OracleAgent

    seeds = list(range(12))
    # Sokoban under RAGEN's 10-action budget, which some of these levels do not fit, so that the served
    # oracle must read the budget from the chat as well as the board.
    budget = {"config": {"max_turns": 5, "max_actions_per_turn": 5, "max_actions_per_episode": 10}} \
        if env == "sokoban" else {}
    with serve_in_thread(ServeConfig(port=0, agent="oracle")) as url:
        served = play_over_http(url, env, seeds, **budget)
    local = play_in_process(OracleAgent(), env, seeds, **budget)
    assert [e.success for e in served] == [e.success for e in local]
    assert [e.total_reward for e in served] == pytest.approx([e.total_reward for e in local])
    for episode in served:
        assert all(turn["format_ok"] for turn in episode.record()["turns"])
    if env == "sokoban":  # optimal play wins exactly the levels whose optimum fits the 10-action budget
        assert [e.success for e in served] == [e.certificate["moves"] <= 10 for e in served]
        assert any(e.success for e in served) and not all(e.success for e in served)
    if env in ("frozenlake_det", "bandit", "bandit_heldout", "bandit_reversed"):
        assert all(e.success for e in served)


def test_served_oracle_counts_reasoning_sent_in_a_separate_field():
    pytest.importorskip("ragen_envs.text")
    with serve_in_thread(ServeConfig(port=0, agent="oracle", reasoning_field=True)) as url:
        episodes = play_over_http(url, "sokoban", [0, 1])
    for episode in episodes:
        assert episode.success
        turn = episode.record()["turns"][0]
        assert turn["reasoning"] == turn["think"] == "optimal play from the state shown"
        assert turn["format_ok"] and "<think>" not in turn["response"]


def test_garbage_output_is_scored_never_raised():
    pytest.importorskip("ragen_envs.text")
    config = ServeConfig(port=0, agent="oracle", garbage_rate=1.0, fault_seed=2)
    with serve_in_thread(config) as url:
        episodes = play_over_http(url, "sokoban", list(range(10)), sampling=SamplingParams(max_tokens=100_000))
        truncated = play_over_http(url, "frozenlake", list(range(10)), sampling=SamplingParams(max_tokens=50))
    for episode in episodes + truncated:
        record = episode.record()
        assert not record["success"]
        assert not any(turn["format_ok"] for turn in record["turns"])
        assert record["total_reward"] < 0  # every turn paid the format penalty


def test_unreadable_chats_get_an_honest_format_error():
    from ragen_eval.agents.chat_policies import ChatOracleAgent, ChatRandomAgent

    chat = [{"role": "user", "content": "What is the capital of France?"}]
    for agent in (ChatRandomAgent(), ChatOracleAgent()):
        (completion,) = asyncio.run(agent.act(chat))
        assert completion.text.startswith("<think>I cannot read this chat")
        assert completion.text.endswith("<answer></answer>")


def test_served_oracle_reads_revealed_payoffs():
    pytest.importorskip("ragen_envs.text")
    # The safe arm now pays 0.5 > 0.25 (the risky arm's mean), and only the revealed rules say so.
    env_config = {"reveal_payoffs": True, "low_risk_reward": 0.5}
    with serve_in_thread(ServeConfig(port=0, agent="oracle")) as url:
        episodes = play_over_http(url, "bandit", list(range(6)), env_config=env_config)
    assert all(e.success for e in episodes)
    assert {e.record()["turns"][0]["actions_executed"][0] for e in episodes} == {"Phoenix"}


@settings(max_examples=200, deadline=None)
@given(st.lists(st.fixed_dictionaries({"role": st.sampled_from(["system", "user", "assistant"]),
                                       "content": st.text(max_size=400)}), min_size=1, max_size=4),
       st.integers(0, 2**31 - 1))
def test_chat_policies_answer_any_chat_without_raising(messages, seed):
    from ragen_eval.agents.chat_policies import ChatOracleAgent, ChatRandomAgent

    for agent in (ChatRandomAgent(), ChatOracleAgent()):
        (completion,) = asyncio.run(agent.act(messages, sampling=SamplingParams(seed=seed)))
        assert isinstance(completion.text, str) and completion.text.endswith("</answer>")


@settings(max_examples=150, deadline=None)
@given(env=st.sampled_from(["sokoban", "frozenlake", "bandit"]), seed=st.integers(0, 50),
       cut=st.floats(0, 1), junk=st.text(alphabet="#_OX\u221aPSG \n.|<>", max_size=80))
def test_chat_oracle_survives_a_corrupted_real_chat(env, seed, cut, junk):
    pytest.importorskip("ragen_envs.text")
    from ragen_envs.text import TextEpisode

    from ragen_eval.agents.chat_policies import ChatOracleAgent

    messages = [dict(m) for m in TextEpisode(env, seed).messages]
    text = messages[-1]["content"]
    at = int(cut * len(text))
    messages[-1]["content"] = text[:at] + junk + text[at + len(junk):]
    (completion,) = asyncio.run(ChatOracleAgent().act(messages))
    assert completion.text.endswith("</answer>")
