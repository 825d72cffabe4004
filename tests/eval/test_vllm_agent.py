"""VLLMAgent on the tiny local checkpoint, with the CPU build of vLLM: one model load for the whole file.

Run with ``python -m pytest -m vllm tests/eval/test_vllm_agent.py``; the load takes about a minute on
two cores. The engine runs in this process (``VLLM_ENABLE_V1_MULTIPROCESSING=0``), so no worker
process re-imports the test module.
"""

from __future__ import annotations

import asyncio
import os

import pytest

from ragen_eval.agents.base import SamplingParams

pytestmark = [pytest.mark.vllm, pytest.mark.slow]

CPU_ENGINE = {"dtype": "float32", "max_model_len": 1024, "enforce_eager": True, "gpu_memory_utilization": 0.2,
              "seed": 0}


@pytest.fixture(scope="module")
def vllm_agent(tiny_model_dir):
    pytest.importorskip("vllm")
    for key, value in {"VLLM_CPU_KVCACHE_SPACE": "1", "HF_HUB_OFFLINE": "1",
                       "VLLM_ENABLE_V1_MULTIPROCESSING": "0"}.items():
        os.environ.setdefault(key, value)
    from ragen_eval.agents.vllm_agent import VLLMAgent

    agent = VLLMAgent(str(tiny_model_dir), **CPU_ENGINE)
    yield agent
    asyncio.run(agent.aclose())


def chats(count: int) -> list[list[dict[str, str]]]:
    return [[{"role": "user", "content": f"Turn 1. State: {'#_P_O ' * (i + 1)}. Answer as <answer>Up</answer>."}]
            for i in range(count)]


def act_all(agent, prompts, sampling, n=1):
    async def go():
        return await asyncio.gather(*(agent.act(p, n=n, sampling=sampling) for p in prompts))

    return asyncio.run(go())


def test_vllm_backend_batches_a_turn_and_reports_real_token_counts(vllm_agent, tiny_model_dir):
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(tiny_model_dir))
    prompts = chats(8)

    # One turn of eight episodes is one LLM.chat call.
    before = len(vllm_agent.batch_sizes)
    greedy = act_all(vllm_agent, prompts, SamplingParams(temperature=0.0, max_tokens=16))
    assert vllm_agent.batch_sizes[before:] == [8]
    for prompt, (completion,) in zip(prompts, greedy):
        expected = len(tokenizer.apply_chat_template(prompt, add_generation_prompt=True, tokenize=True,
                                                     return_dict=True)["input_ids"])
        assert completion.prompt_tokens == expected
        assert 1 <= completion.completion_tokens <= 16
        assert completion.finish_reason in ("stop", "length")
        assert (completion.finish_reason == "length") == (completion.completion_tokens == 16)

    # Greedy decoding does not depend on what else is in the batch.
    alone = act_all(vllm_agent, prompts[:1], SamplingParams(temperature=0.0, max_tokens=16))
    assert alone[0][0].text == greedy[0][0].text

    # A request seed makes sampling repeatable; n samples of a random model differ.
    sampled = SamplingParams(temperature=1.0, max_tokens=12, seed=7)
    first = act_all(vllm_agent, prompts[:2], sampled, n=3)
    second = act_all(vllm_agent, prompts[:2], sampled, n=3)
    assert [[c.text for c in r] for r in first] == [[c.text for c in r] for r in second]
    assert len({c.text for c in first[0]}) > 1
