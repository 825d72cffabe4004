"""A local ``transformers`` checkpoint as an agent (``ragen-eval --backend hf --model PATH``).

Any causal LM directory with a tokenizer that has a chat template works: a Qwen2.5 or Llama download,
a ``ragen-train`` checkpoint, or the tiny random models of :mod:`ragen_train.tiny`. Concurrent
``act`` calls are batched (:class:`~ragen_eval.agents.batching.TurnBatcher`) into one left-padded
``generate`` per group of identical sampling settings.

Sampling draws from torch's RNG. To stay reproducible without touching anyone else's random state,
each batch runs inside ``torch.random.fork_rng`` seeded from the agent's ``seed`` and the batch's
index (or from the request's own ``seed`` when it gives one).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ragen_eval.agents.base import Completion
from ragen_eval.agents.batching import BatchedAgent, ChatRequest


class HFAgent(BatchedAgent):
    """Chat completions from a ``transformers`` causal LM, batched per turn.

    Args:
        model_path: a directory holding the model and its tokenizer (``save_pretrained`` format).
        device: torch device, ``"cpu"`` by default.
        dtype: torch dtype name for the weights (``"float32"``, ``"bfloat16"``, ...); None keeps the saved one.
        max_batch_size: the most prompts in one ``generate`` call.
        seed: base seed of the sampling RNG.
    """

    def __init__(self, model_path: str, device: str = "cpu", *, dtype: str | None = None,
                 max_batch_size: int = 64, seed: int = 0) -> None:
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        self.name = str(model_path)
        self.model_path = str(model_path)
        self.device = device
        self.seed = seed
        try:
            self.tokenizer = AutoTokenizer.from_pretrained(self.model_path)
        except (OSError, ValueError) as exc:
            raise ValueError(f"cannot load a tokenizer from {self.model_path!r}: {exc}") from exc
        if not getattr(self.tokenizer, "chat_template", None):
            raise ValueError(f"the tokenizer in {self.model_path!r} has no chat template; HFAgent needs one")
        # Batched generation appends after the prompt, so pad on the left.
        self.tokenizer.padding_side = "left"
        if self.tokenizer.pad_token_id is None:
            self.tokenizer.pad_token = self.tokenizer.eos_token
        kwargs: dict[str, Any] = {}
        if dtype is not None:
            kwargs["dtype"] = getattr(torch, dtype)
        try:
            self.model = AutoModelForCausalLM.from_pretrained(self.model_path, **kwargs).to(device)
        except (OSError, ValueError) as exc:
            raise ValueError(f"cannot load a causal LM from {self.model_path!r}: {exc}") from exc
        self.model.eval()
        eos = self.model.generation_config.eos_token_id
        eos_ids = list(eos) if isinstance(eos, (list, tuple)) else [eos]
        if self.tokenizer.eos_token_id is not None:
            eos_ids.append(self.tokenizer.eos_token_id)
        self._eos_ids = frozenset(i for i in eos_ids if i is not None)
        self._batches_run = 0
        super().__init__(max_batch_size)

    def describe(self) -> dict[str, Any]:
        """What a run's config.json records about this agent."""
        return {"backend": "hf", "model": self.model_path, "device": self.device, "seed": self.seed}

    def _run_batch(self, requests: Sequence[ChatRequest]) -> list[list[Completion]]:
        groups: dict[tuple[Any, ...], list[int]] = {}
        for i, request in enumerate(requests):
            s = request.sampling
            groups.setdefault((s.temperature, s.top_p, s.max_tokens, s.seed, request.n), []).append(i)
        results: list[list[Completion]] = [[] for _ in requests]
        for indices in groups.values():
            answers = self._generate([requests[i] for i in indices])
            for i, answer in zip(indices, answers):
                results[i] = answer
        return results

    def _generate(self, requests: Sequence[ChatRequest]) -> list[list[Completion]]:
        """One ``generate`` call for requests that share sampling settings and ``n``."""
        import torch

        sampling, n = requests[0].sampling, requests[0].n
        prompts = [self.tokenizer.apply_chat_template(r.messages, tokenize=False, add_generation_prompt=True)
                   for r in requests]
        encoded = self.tokenizer(prompts, return_tensors="pt", padding=True, add_special_tokens=False).to(self.device)
        prompt_lengths = encoded["attention_mask"].sum(dim=1).tolist()
        seed = sampling.seed if sampling.seed is not None else self.seed * 1_000_003 + self._batches_run
        self._batches_run += 1
        greedy = sampling.temperature == 0
        options: dict[str, Any] = {"max_new_tokens": sampling.max_tokens, "num_return_sequences": n,
                                   "do_sample": not greedy, "pad_token_id": self.tokenizer.pad_token_id}
        if not greedy:
            options.update(temperature=sampling.temperature, top_p=sampling.top_p, top_k=0)
        with torch.random.fork_rng(devices=[]), torch.no_grad():
            torch.manual_seed(seed)
            output = self.model.generate(**encoded, **options)
        new_tokens = output[:, encoded["input_ids"].shape[1]:].tolist()
        answers = []
        for i in range(len(requests)):
            completions = []
            for tokens in new_tokens[i * n:(i + 1) * n]:
                end = next((k for k, t in enumerate(tokens) if t in self._eos_ids), None)
                kept = tokens if end is None else tokens[:end]
                completions.append(Completion(
                    text=self.tokenizer.decode(kept, skip_special_tokens=True),
                    finish_reason="stop" if end is not None else "length",
                    prompt_tokens=int(prompt_lengths[i]),
                    completion_tokens=len(kept) + (0 if end is None else 1),
                ))
            answers.append(completions)
        return answers

    async def aclose(self) -> None:
        """Nothing to release beyond memory; kept for the Agent protocol."""
