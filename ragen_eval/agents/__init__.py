"""Agents: the built-ins and the model backends, built by :func:`make_agent`.

Heavy or optional libraries load only when a backend is built: vllm and torch inside their agents,
and the openai backend (httpx and openai, the ``[eval]`` extra) here, on first use.
"""

from __future__ import annotations

import inspect

from typing import Any

from ragen_eval.agents.base import Agent, Completion, SamplingParams
from ragen_eval.agents.builtin import OracleAgent, RandomAgent
from ragen_eval.agents.hf_agent import HFAgent
from ragen_eval.agents.vllm_agent import VLLMAgent
from ragen_eval.embedded_model import resolve_model_path


def make_agent(
    backend: str,
    model: str,
    *,
    base_urls: list[str] | None = None,
    api_key: str | None = None,
    concurrency: int = 32,
    timeout: float = 60.0,
    max_retries: int = 5,
    requests_per_second: float | None = None,
    seed: int = 0,
    model_args: dict[str, Any] | None = None,
) -> Agent:
    """Build the agent for ``backend`` (builtin, openai, vllm, hf) and ``model``.

    ``model`` is ``random``/``oracle`` for builtin, the served model name for openai, and a
    checkpoint directory (or ``default``, the checkpoint embedded in the package) for vllm and hf. ``seed`` seeds the built-in random agent and the hf sampler;
    ``model_args`` go to the vllm engine (``dtype``, ``max_model_len``, ...) or to ``HFAgent``.
    """
    if backend == "builtin":
        if model == "random":
            return RandomAgent(seed=seed)
        if model == "oracle":
            return OracleAgent()
        raise ValueError(f"the builtin backend has 'random' and 'oracle', not {model!r}")
    if backend == "openai":
        from ragen_eval.agents.openai_agent import OpenAIChatAgent  # needs the [eval] extra

        if not base_urls:
            raise ValueError("the openai backend needs at least one base URL")
        return OpenAIChatAgent(model, base_urls, api_key, concurrency=concurrency, timeout=timeout,
                               max_retries=max_retries, requests_per_second=requests_per_second)
    if backend == "vllm":
        return VLLMAgent(resolve_model_path(model), **(model_args or {}))
    if backend == "hf":
        try:
            import torch  # noqa: F401
            import transformers  # noqa: F401
        except ImportError as exc:
            raise RuntimeError(f"the hf backend (and --model default) needs torch and transformers ({exc}); "
                               "install them with: bash scripts/install.sh") from None
        known = set(inspect.signature(HFAgent).parameters) - {"model_path"}
        unknown = sorted(set(model_args or {}) - known)
        if unknown:  # once a TypeError traceback from HFAgent.__init__
            raise ValueError(f"unknown --model-args {unknown} for the hf backend; it takes {sorted(known)}")
        return HFAgent(resolve_model_path(model), **{"seed": seed, **(model_args or {})})
    raise ValueError(f"unknown backend {backend!r}; choose builtin, openai, vllm or hf")


__all__ = ["Agent", "Completion", "SamplingParams", "make_agent"]
