"""vLLM as the rollout engine of ``ragen-train`` (``rollout_engine=vllm``).

``vllm.LLM`` runs in the trainer's own process (``VLLM_ENABLE_V1_MULTIPROCESSING=0``), so the
actor's tensors reach it by reference: before each step's rollout :meth:`VLLMRolloutEngine.load_weights`
hands the actor's ``state_dict`` to vLLM's in-place weight reload (``reload_weights`` on the worker,
which also redoes any kernel-specific repacking of the weights) and drops the prefix cache, whose
keys and values the old weights computed. Nothing is written to disk.

The engine generates from the exact token ids stored in each trajectory (``TokensPrompt``) and
returns token ids, so :func:`ragen_train.rollout.rollout` lays out the turns and the loss mask
exactly as for the ``hf`` engine. Each request carries its own sampling seed, so a rollout is
reproducible for a given ``generation_seed`` and does not depend on how vLLM batches requests.

On vLLM's CPU build (tests, this repository's CI) set ``VLLM_CPU_KVCACHE_SPACE`` (GiB) in the
environment; ``gpu_memory_utilization`` is then a share of host memory. See docs/train.md.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

import torch
from torch import nn


class VLLMRolloutEngine:
    """An in-process ``vllm.LLM`` behind the :class:`ragen_train.rollout.RolloutEngine` protocol.

    Args:
        model_path: the checkpoint vLLM starts from (its architecture must be the actor's; the
            weights are replaced by :meth:`load_weights` anyway).
        dtype: the actor's dtype, so sampling and scoring use the same precision.
        max_model_len: the longest sequence vLLM holds (the trainer passes ``max_seq_len``).
        gpu_memory_utilization: fraction of GPU memory (host memory on the CPU build) vLLM reserves.
        enforce_eager: skip CUDA-graph capture.
        seed: the engine's own seed (requests carry their own as well).
    """

    def __init__(
        self,
        model_path: str | Path,
        *,
        dtype: torch.dtype | str = "auto",
        max_model_len: int,
        gpu_memory_utilization: float,
        enforce_eager: bool = True,
        seed: int = 0,
    ) -> None:
        if not 0.0 < gpu_memory_utilization <= 1.0:
            raise ValueError(f"gpu_memory_utilization must be a fraction in (0, 1], got {gpu_memory_utilization!r}")
        if not isinstance(max_model_len, int) or max_model_len < 2:
            raise ValueError(f"max_model_len must be an int >= 2, got {max_model_len!r}")
        try:
            import vllm
        except ImportError as exc:
            raise ImportError("rollout_engine=vllm needs the vllm package (pip install 'ragen-envs[vllm]'), "
                              "which is not installed; use rollout_engine=hf") from exc
        # Weights are synced by handing tensors to the engine; that needs the engine in this process.
        os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")
        if vllm.envs.VLLM_ENABLE_V1_MULTIPROCESSING:
            raise ValueError("the vLLM rollout engine must run in the trainer's process to receive its weights; "
                             "unset VLLM_ENABLE_V1_MULTIPROCESSING or set it to 0")
        self._vllm = vllm
        self.max_model_len = max_model_len
        self.llm = vllm.LLM(model=str(model_path), dtype=dtype, max_model_len=max_model_len,
                            gpu_memory_utilization=gpu_memory_utilization, enforce_eager=enforce_eager, seed=seed)

    def generate(
        self,
        prompts: list[list[int]],
        *,
        max_new_tokens: int,
        temperature: float,
        top_p: float,
        stop_ids: Sequence[int],
        seeds: Sequence[int],
    ) -> list[list[int]]:
        """One reply per prompt, from the prompt's exact ids, cut after its first stop id (kept).

        Replies stop on ``stop_ids`` only (vLLM's own EOS rule is switched off, since the rollout's
        stop ids already include it) or after ``max_new_tokens``, or where the sequence would pass
        ``max_model_len``. ``temperature=0`` is greedy; ``seeds[i]`` seeds request ``i``.
        """
        if len(seeds) != len(prompts):
            raise ValueError(f"need one seed per prompt, got {len(seeds)} seeds for {len(prompts)} prompts")
        if not prompts:
            return []
        too_long = [len(p) for p in prompts if len(p) >= self.max_model_len]
        if too_long:
            raise ValueError(f"a prompt of {max(too_long)} tokens leaves no room to generate within "
                             f"max_model_len={self.max_model_len}")
        from vllm.inputs import TokensPrompt

        stops = [int(i) for i in stop_ids]
        params = [
            self._vllm.SamplingParams(n=1, temperature=temperature, top_p=top_p, top_k=0, seed=int(seed),
                                      max_tokens=min(max_new_tokens, self.max_model_len - len(prompt)),
                                      stop_token_ids=stops, ignore_eos=True, detokenize=False)
            for prompt, seed in zip(prompts, seeds)
        ]
        outputs = self.llm.generate([TokensPrompt(prompt_token_ids=list(p)) for p in prompts], params,
                                    use_tqdm=False)
        stop_set = set(stops)
        replies = []
        for output in outputs:
            ids = list(output.outputs[0].token_ids)
            cut = next((k + 1 for k, tok in enumerate(ids) if tok in stop_set), len(ids))
            replies.append(ids[:cut])
        return replies

    @torch.no_grad()
    def load_weights(self, model: nn.Module) -> None:
        """Copy ``model``'s current weights (a ``transformers`` causal LM, unwrapped) into the engine.

        The tensors are passed by reference to vLLM's in-place reload, which maps the
        checkpoint-format names onto its own layers (fused projections, tied embeddings) and copies
        them; then the prefix cache is reset, since its entries came from the old weights.
        """
        weights = [(name, tensor.detach()) for name, tensor in model.state_dict().items()]
        self.llm.collective_rpc("reload_weights", kwargs={"weights_iterator": weights, "is_checkpoint_format": True})
        self.llm.reset_prefix_cache()

    def close(self) -> None:
        """Stop the engine and release its memory (the object is unusable afterwards)."""
        llm, self.llm = self.llm, None
        if llm is None:
            return
        core = getattr(getattr(llm, "llm_engine", None), "engine_core", None)
        if callable(getattr(core, "shutdown", None)):
            core.shutdown()
        del llm
