"""HFAgent on the tiny local checkpoint: continuous batching, padding, prefix reuse, seeding, serving over HTTP."""

from __future__ import annotations

import asyncio

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragen_eval.agents.base import SamplingParams

pytest.importorskip("torch")
pytest.importorskip("transformers")

GREEDY = SamplingParams(temperature=0.0, max_tokens=12)


@pytest.fixture(scope="module")
def hf_agent(tiny_model_dir):
    from ragen_eval.agents.hf_agent import HFAgent

    return HFAgent(str(tiny_model_dir))


def prompts(count: int) -> list[list[dict[str, str]]]:
    # Different lengths, so the batch really needs left padding.
    return [[{"role": "system", "content": "You play Sokoban."},
             {"role": "user", "content": "Turn 1. State: " + "#_P_O " * (i + 1) + "Answer as <answer>Up</answer>."}]
            for i in range(count)]


def act_all(agent, chats, sampling=GREEDY, n=1):
    async def go():
        return await asyncio.gather(*(agent.act(chat, n=n, sampling=sampling) for chat in chats))

    return asyncio.run(go())


def test_concurrent_calls_become_one_batch_with_exact_token_counts(hf_agent):
    chats = prompts(6)
    before = len(hf_agent.batch_sizes)
    results = act_all(hf_agent, chats)
    assert hf_agent.batch_sizes[before:] == [6]
    for chat, (completion,) in zip(chats, results):
        expected_prompt = len(hf_agent.tokenizer.apply_chat_template(chat, add_generation_prompt=True, tokenize=True,
                                                                     return_dict=True)["input_ids"])
        assert completion.prompt_tokens == expected_prompt
        assert 1 <= completion.completion_tokens <= GREEDY.max_tokens
        assert completion.finish_reason in ("stop", "length")
        assert (completion.finish_reason == "length") == (completion.completion_tokens == GREEDY.max_tokens)
        assert completion.error is None


def test_a_batched_greedy_answer_equals_the_answer_alone(hf_agent):
    chats = prompts(5)
    together = [r[0].text for r in act_all(hf_agent, chats)]
    alone = [act_all(hf_agent, [chat])[0][0].text for chat in chats]
    assert together == alone


def test_seeded_sampling_repeats_and_leaves_the_global_rng_alone(hf_agent):
    import torch

    sampling = SamplingParams(temperature=1.0, max_tokens=10, seed=123)
    state = torch.get_rng_state()
    first = act_all(hf_agent, prompts(2), sampling=sampling, n=3)
    second = act_all(hf_agent, prompts(2), sampling=sampling, n=3)
    assert torch.equal(state, torch.get_rng_state())
    assert [[c.text for c in r] for r in first] == [[c.text for c in r] for r in second]
    assert len({c.text for c in first[0]}) > 1  # n samples from a random model differ


def test_a_directory_without_a_model_is_a_clear_error(tmp_path):
    from ragen_eval.agents.hf_agent import HFAgent

    with pytest.raises(ValueError, match="cannot load"):
        HFAgent(str(tmp_path))


def test_serve_a_checkpoint_over_http_gives_the_in_process_answer(hf_agent, tiny_model_dir):
    from ragen_eval.agents.openai_agent import OpenAIChatAgent
    from ragen_eval.serve import ServeConfig, serve_in_thread

    chats = prompts(3)
    sampling = SamplingParams(temperature=0.0, max_tokens=30)
    local = [r[0] for r in act_all(hf_agent, chats, sampling=sampling)]
    async def through_http(url):
        client = OpenAIChatAgent("tiny", [url], None)
        try:
            return await asyncio.gather(*(client.act(chat, sampling=sampling) for chat in chats))
        finally:
            await client.aclose()

    with serve_in_thread(ServeConfig(port=0, agent=str(tiny_model_dir))) as url:
        served = [r[0] for r in asyncio.run(through_http(url))]
    # The server passes the model's own text, finish reason and token counts through unchanged.
    for got, want in zip(served, local):
        assert (got.text, got.finish_reason, got.prompt_tokens, got.completion_tokens) == (
            want.text, want.finish_reason, want.prompt_tokens, want.completion_tokens)


def test_a_sampled_reply_does_not_depend_on_the_other_requests_in_flight(hf_agent):
    # Each sample has its own generator, so batching changes nothing; one RNG per batch would.
    sampling = SamplingParams(temperature=1.0, max_tokens=16, seed=7)
    chats = prompts(4)
    together = [r[0].text for r in act_all(hf_agent, chats, sampling=sampling)]
    alone = [act_all(hf_agent, [chat], sampling=sampling)[0][0].text for chat in chats]
    assert together == alone
    assert len(set(together)) > 1


def test_a_short_reply_is_not_held_back_by_a_long_one_that_started_first(hf_agent):
    long_request = SamplingParams(temperature=0.0, max_tokens=300)
    short_request = SamplingParams(temperature=0.0, max_tokens=2)
    finished: list[str] = []

    async def ask(name, chat, sampling):
        (completion,) = await hf_agent.act(chat, sampling=sampling)
        finished.append(name)
        return completion

    async def go():
        before = len(hf_agent.batch_sizes)
        first = asyncio.create_task(ask("long", prompts(1)[0], long_request))
        while not hf_agent._batch.rows:  # wait until the long reply is being decoded
            await asyncio.sleep(0.001)
        second = asyncio.create_task(ask("short", prompts(3)[2], short_request))
        results = await asyncio.gather(first, second)
        return results, hf_agent.batch_sizes[before:]

    (long_reply, short_reply), admissions = asyncio.run(go())
    assert long_reply.completion_tokens == 300 and long_reply.finish_reason == "length"
    assert short_reply.completion_tokens == 2
    assert admissions == [1, 1]  # the second request joined the batch in flight
    assert finished == ["short", "long"]


def test_a_later_turn_reuses_the_cached_prefix_and_answers_as_without_it(hf_agent, tiny_model_dir):
    from ragen_eval.agents.hf_agent import HFAgent

    plain = HFAgent(str(tiny_model_dir), prefix_cache_tokens=0)
    sampling = SamplingParams(temperature=0.0, max_tokens=20)
    first_turns = prompts(3)
    replies = [r[0].text for r in act_all(hf_agent, first_turns, sampling=sampling)]
    # Second turns: each conversation goes on; a fresh prompt of another length shares the batch,
    # so reused prefixes of different lengths sit next to padding in one forward pass.
    second_turns = [chat + [{"role": "assistant", "content": reply}, {"role": "user", "content": f"Turn 2, go {i}."}]
                    for i, (chat, reply) in enumerate(zip(first_turns, replies))] + prompts(5)[4:]
    reused_before = hf_agent._batch.reused_tokens
    cached = [r[0].text for r in act_all(hf_agent, second_turns, sampling=sampling)]
    assert hf_agent._batch.reused_tokens - reused_before > sum(
        len(hf_agent.tokenizer.apply_chat_template(chat, add_generation_prompt=True)) for chat in first_turns) // 2
    assert plain._batch.reused_tokens == 0
    assert cached == [r[0].text for r in act_all(plain, second_turns, sampling=sampling)]


def _top_p_set(probs: list[float], top_p: float) -> set[int]:
    """The smallest set of most likely tokens whose probability reaches ``top_p`` (ties: any order)."""
    order = sorted(range(len(probs)), key=lambda i: -probs[i])
    kept, mass = set(), 0.0
    for i in order:
        kept.add(i)
        mass += probs[i]
        if mass >= top_p - 1e-6:
            break
    threshold = min(probs[i] for i in kept)
    return kept | {i for i, p in enumerate(probs) if abs(p - threshold) < 1e-6}


@settings(max_examples=60, deadline=None)
@given(logits=st.lists(st.floats(-8, 8, width=32), min_size=2, max_size=12),
       temperature=st.sampled_from([0.0, 0.3, 1.0, 2.0]), top_p=st.sampled_from([0.1, 0.5, 0.9, 1.0]), seed=st.integers(0, 2**31))
def test_a_chosen_token_lies_in_the_top_p_set_and_greedy_is_argmax(logits, temperature, top_p, seed):
    import torch

    from ragen_eval.agents.kv_batching import DecodeRow, choose_tokens

    row = DecodeRow(owner=None, prompt_ids=[1], max_tokens=4, temperature=temperature, top_p=top_p,
                    generator=torch.Generator().manual_seed(seed))
    (token,) = choose_tokens(torch.tensor([logits]), [row])
    if temperature == 0:
        assert logits[token] == max(logits)
    else:
        probs = torch.softmax(torch.tensor(logits, dtype=torch.float64) / temperature, dim=0).tolist()
        assert token in _top_p_set(probs, top_p)
