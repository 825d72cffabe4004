"""BatchedAgent and TurnBatcher: concurrent act calls become batches, answered in order, failures surfaced."""

from __future__ import annotations

import asyncio

import pytest

from ragen_eval.agents.base import Agent, Completion, SamplingParams
from ragen_eval.agents.vllm_agent import BatchedAgent


class EchoAgent(BatchedAgent):
    """Answers each request with its last message, n times, tagged with the batch it ran in."""

    def __init__(self, max_batch_size: int = 64, fail: bool = False, drop: bool = False) -> None:
        self.name = "echo"
        self.fail, self.drop = fail, drop
        super().__init__(max_batch_size)

    def _run_batch(self, requests):
        if self.fail:
            raise RuntimeError("the model fell over")
        batch = len(self.batch_sizes) - 1  # the batcher records a batch before running it
        answers = [[Completion(text=f"{r.messages[-1]['content']}@{batch}:{k}:{r.sampling.seed}") for k in range(r.n)]
                   for r in requests]
        return answers[:-1] if self.drop else answers

    async def aclose(self) -> None:
        """Nothing to release."""


def ask(agent, prompts, n=1):
    async def go():
        return await asyncio.gather(*(agent.act([{"role": "user", "content": p}], n=n,
                                                sampling=SamplingParams(seed=i)) for i, p in enumerate(prompts)))
    return asyncio.run(go())


def test_concurrent_calls_become_batches_answered_in_order():
    agent = EchoAgent(max_batch_size=4)
    assert isinstance(agent, Agent)
    prompts = [f"p{i}" for i in range(10)]
    answers = ask(agent, prompts, n=2)
    assert agent.batch_sizes == [4, 4, 2]
    for i, completions in enumerate(answers):
        batch = i // 4
        assert [c.text for c in completions] == [f"p{i}@{batch}:{k}:{i}" for k in range(2)]


def test_bad_n_and_failed_batches_reach_the_caller():
    with pytest.raises(ValueError, match="n must be >= 1, got 0"):
        ask(EchoAgent(), ["x"], n=0)
    with pytest.raises(RuntimeError, match="fell over"):
        ask(EchoAgent(fail=True), ["x", "y"])
    with pytest.raises(RuntimeError, match="returned 1 results for 2 requests"):
        ask(EchoAgent(drop=True), ["x", "y"])
    with pytest.raises(TypeError, match="abstract"):
        BatchedAgent(4)
