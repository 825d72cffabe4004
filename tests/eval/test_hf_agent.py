"""HFAgent on the tiny local checkpoint: batching, padding, seeding, and serving it over HTTP."""

from __future__ import annotations

import asyncio

import pytest

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
