"""A local ``transformers`` checkpoint as an agent (``ragen-eval --backend hf --model PATH``).

Any causal LM directory with a tokenizer that has a chat template works: a Qwen2.5 or Llama download,
a ``ragen-train`` checkpoint, or the tiny random models of :mod:`ragen_train.tiny`. A vision-language
checkpoint (its config has a ``vision_config``: LLaVA, Qwen2-VL, ...) is loaded with ``AutoProcessor`` and
``AutoModelForImageTextToText`` and plays image observations: its processor's chat template renders the
``image_url`` content parts and its image processor reads their data URLs. It generates one request at a
time (``generate``), not continuously batched.

Generation is continuously batched (:class:`~ragen_eval.agents.kv_batching.KVBatch`): the ``act``
calls of concurrent episodes share one KV cache, decoded one token per step on a worker thread so
the event loop keeps playing the games. A reply leaves the batch the moment it ends and the next
turn of any episode joins at the next step, so the model is never idle waiting for the slowest
reply of a turn.

Sampling is reproducible without touching anyone else's random state: each sample draws from its
own ``torch.Generator``, seeded from the agent's ``seed``, the request's ``seed``, the episode
(game and level seed) when the runner names it, the messages and the sample's index. A reply
therefore does not depend on concurrency or on which other episodes were in flight. A request
that names neither a seed nor an episode (a client of ``ragen-eval serve``) also mixes in its
arrival number, so repeating a prompt gives fresh samples.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import copy
import hashlib
import json
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ragen_eval.agents.base import Completion, SamplingParams, UnsupportedInputError, require_replies
from ragen_eval.devices import torch_device

if TYPE_CHECKING:
    from ragen_envs.text import TextEpisode

    from ragen_eval.agents.kv_batching import DecodeRow


def _is_vision_language(model_path: str) -> bool:
    """Whether the checkpoint's config names a vision tower (``vision_config``), as image-text-to-text models do."""
    try:
        config = json.loads((Path(model_path) / "config.json").read_text())
    except (OSError, ValueError):
        return False  # not a readable local checkpoint: AutoTokenizer reports what is wrong
    return isinstance(config, dict) and "vision_config" in config


def _one_line(exc: BaseException) -> str:
    """``exc``'s message on one line: transformers' loading errors span several, and the CLI's errors are one."""
    return " ".join(str(exc).split())


@dataclass
class _Request:
    """One ``act`` call: its rows are in flight until all ``n`` samples are finished."""

    messages: list[dict[str, str]]
    n: int
    sampling: SamplingParams
    seed_key: str
    future: asyncio.Future[list[Completion]]
    completions: list[Completion | None]


class HFAgent:
    """Chat completions from a ``transformers`` causal LM, continuously batched over a KV cache.

    Args:
        model_path: a directory holding the model and its tokenizer (``save_pretrained`` format).
        device: torch device, ``"cpu"`` by default.
        dtype: torch dtype name for the weights (``"float32"``, ``"bfloat16"``, ...); None keeps the saved one.
        max_batch_size: the most samples decoded together; further requests wait for a free row.
        seed: base seed of the sampling RNGs.
        steps_per_call: the most decoding steps per worker-thread call while no reply finishes;
            bounds how long a newly arrived request waits to join.
        prefix_cache_tokens: tokens of finished conversations whose keys and values are kept, so a
            later turn (or another level of the same game) prefills only what is new; 0 turns it off.
        threads: torch threads of the decoding thread on CPU; None leaves one core to the games and
            the harness (all but one, at least one). Small batched steps gain little from more threads,
            and a harness starved of its core stalls every episode.
    """

    def __init__(self, model_path: str, device: str = "cpu", *, dtype: str | None = None,
                 max_batch_size: int = 64, seed: int = 0, steps_per_call: int = 16,
                 prefix_cache_tokens: int = 32768, threads: int | None = None) -> None:
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        from ragen_eval.agents.kv_batching import KVBatch

        if max_batch_size < 1:
            raise ValueError(f"max_batch_size must be >= 1, got {max_batch_size}")
        if steps_per_call < 1:
            raise ValueError(f"steps_per_call must be >= 1, got {steps_per_call}")
        if threads is not None and threads < 1:
            raise ValueError(f"threads must be >= 1, got {threads}")
        if prefix_cache_tokens < 0:
            raise ValueError(f"prefix_cache_tokens must be >= 0, got {prefix_cache_tokens}")
        # Checked before loading: each once failed inside torch with a traceback (exit 1, not 2).
        if dtype is not None and not isinstance(getattr(torch, str(dtype), None), torch.dtype):
            raise ValueError(f"dtype must name a torch dtype (float32, bfloat16, float16, ...), got {dtype!r}")
        torch_device(device)
        self.name = str(model_path)
        self.model_path = str(model_path)
        self.device = device
        self.seed = seed
        self.max_batch_size = max_batch_size
        self.steps_per_call = steps_per_call
        self.threads = threads if threads is not None else max(1, (os.cpu_count() or 1) - 1)
        #: The processor of a vision-language checkpoint (None for a text-only causal LM).
        self.processor: Any = None
        try:
            if _is_vision_language(self.model_path):
                from transformers import AutoProcessor

                self.processor = AutoProcessor.from_pretrained(self.model_path)
                self.tokenizer = self.processor.tokenizer
            else:
                self.tokenizer = AutoTokenizer.from_pretrained(self.model_path)
        except (OSError, ValueError) as exc:
            raise ValueError(f"cannot load a tokenizer from {self.model_path!r}: {_one_line(exc)}") from exc
        if not getattr(self.processor or self.tokenizer, "chat_template", None):
            raise ValueError(f"the tokenizer in {self.model_path!r} has no chat template; HFAgent needs one")
        pad_id = self.tokenizer.pad_token_id if self.tokenizer.pad_token_id is not None else self.tokenizer.eos_token_id
        kwargs: dict[str, Any] = {}
        if dtype is not None:
            kwargs["dtype"] = getattr(torch, dtype)
        try:
            if self.processor is not None:
                from transformers import AutoModelForImageTextToText

                model_class: Any = AutoModelForImageTextToText
            else:
                model_class = AutoModelForCausalLM
            self.model = model_class.from_pretrained(self.model_path, **kwargs).to(device)
        except (OSError, ValueError) as exc:
            raise ValueError(f"cannot load a causal LM from {self.model_path!r}: {_one_line(exc)}") from exc
        self.model.eval()
        eos = self.model.generation_config.eos_token_id
        eos_ids = list(eos) if isinstance(eos, (list, tuple)) else [eos]
        if self.tokenizer.eos_token_id is not None:
            eos_ids.append(self.tokenizer.eos_token_id)
        self._eos_ids = frozenset(i for i in eos_ids if i is not None)
        self._pad_id = pad_id or 0
        self._batch = KVBatch(self.model, self._eos_ids, self._pad_id,
                              prefix_tokens=prefix_cache_tokens)
        self._pending: list[_Request] = []
        # One thread does all the model work: torch's thread setting and malloc's per-thread arenas
        # then stay with it (a pool of threads each grew its own heap: 2.0 GB peak instead of 1.4).
        self._executor = concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="hf-decode")
        self._worker: asyncio.Task[None] | None = None
        self._arrivals = 0
        #: How many requests joined the batch at each admission (for tests and logs).
        self.batch_sizes: list[int] = []

    def describe(self) -> dict[str, Any]:
        """What a run's config.json records about this agent."""
        return {"backend": "hf", "model": self.model_path, "device": self.device, "seed": self.seed,
                "threads": self.threads, "vision": self.processor is not None}

    async def act(
        self,
        messages: list[dict[str, str]],
        *,
        n: int = 1,
        sampling: SamplingParams = SamplingParams(),
        episode: TextEpisode | None = None,
    ) -> list[Completion]:
        """``n`` replies to ``messages``, decoded together with every other request in flight."""
        require_replies(n)
        if self.processor is None and any(isinstance(m.get("content"), list) and any(
                isinstance(p, dict) and p.get("type") == "image_url" for p in m["content"]) for m in messages):
            raise UnsupportedInputError(f"{self.model_path!r} is a text-only model and the chat holds images; play "
                             "observation=text or give a vision-language checkpoint")
        self._arrivals += 1
        where = [episode.env_name, episode.seed] if episode is not None else None
        arrival = self._arrivals if where is None and sampling.seed is None else None
        seed_key = json.dumps([self.seed, sampling.seed, where, arrival, messages], sort_keys=True, default=str)
        loop = asyncio.get_running_loop()
        request = _Request(messages, n, sampling, seed_key, loop.create_future(), [None] * n)
        if self.processor is not None:
            return await loop.run_in_executor(self._executor, self._generate_with_images, request)
        self._pending.append(request)
        if self._worker is None or self._worker.done():
            self._worker = asyncio.create_task(self._drive())
        return await request.future

    async def _drive(self) -> None:
        """Feed arrivals into the batch and decode until nothing is pending or in flight."""
        await asyncio.sleep(0)  # let the calls made in the same tick (one per episode) arrive together
        while self._pending or self._batch.rows:
            admitted = self._take_admissible()
            if admitted:
                self.batch_sizes.append(len(admitted))
            try:
                finished = await asyncio.get_running_loop().run_in_executor(self._executor, self._advance, admitted)
            except Exception as exc:  # a failed step fails every caller in flight, not the worker
                failed = {id(row.owner[0]): row.owner[0] for row in self._batch.clear()}
                failed.update((id(r), r) for r in admitted)
                for request in failed.values():
                    if not request.future.done():
                        request.future.set_exception(exc)
                continue
            for row in finished:
                request, index = row.owner
                request.completions[index] = self._completion(row)
                if all(c is not None for c in request.completions) and not request.future.done():
                    request.future.set_result(list(request.completions))

    def _take_admissible(self) -> list[_Request]:
        rows = len(self._batch.rows)
        taken = 0
        while taken < len(self._pending) and (rows == 0 or rows + self._pending[taken].n <= self.max_batch_size):
            rows += self._pending[taken].n
            taken += 1
        admitted, self._pending = self._pending[:taken], self._pending[taken:]
        return admitted

    def _advance(self, requests: Sequence[_Request]) -> list[DecodeRow]:
        """Worker thread: tokenize the new requests, admit their rows, decode; return finished rows."""
        import torch

        # torch's thread count is partly process-wide (vLLM's CPU kernels in the same process check it), so
        # it is set for this call only and put back afterwards.
        previous = torch.get_num_threads()
        torch.set_num_threads(self.threads)
        try:
            return self._batch.advance(self._rows(requests), self.steps_per_call)
        finally:
            torch.set_num_threads(previous)

    def _rows(self, requests: Sequence[_Request]) -> list[DecodeRow]:
        """Worker thread: the decode rows of new requests, each sample with its own seeded generator."""
        import torch

        from ragen_eval.agents.kv_batching import DecodeRow

        rows = []
        for request in requests:
            prompt = self.tokenizer.apply_chat_template(request.messages, tokenize=True, add_generation_prompt=True,
                                                        return_dict=True)["input_ids"]
            for index in range(request.n):
                seed = hashlib.sha256(f"{request.seed_key}\0{index}".encode()).digest()
                generator = torch.Generator()  # CPU: choose_tokens samples on the CPU
                generator.manual_seed(int.from_bytes(seed[:8], "little") >> 1)
                s = request.sampling
                rows.append(DecodeRow(owner=(request, index), prompt_ids=list(prompt), max_tokens=s.max_tokens,
                                      temperature=s.temperature, top_p=s.top_p, generator=generator))
        return rows

    def _generate_with_images(self, request: _Request) -> list[Completion]:
        """Worker thread: ``n`` samples from the vision-language model, each from its own seeded RNG state."""
        import torch
        from transformers import GenerationConfig

        # A copy: the processor rewrites content parts in place, which would change the caller's chat (and
        # so the next request's seed key).
        inputs = self.processor.apply_chat_template(
            copy.deepcopy(request.messages), add_generation_prompt=True, tokenize=True, return_dict=True,
            return_tensors="pt").to(self.device)
        prompt_tokens = int(inputs["input_ids"].shape[1])
        s = request.sampling
        # The run's settings alone, as the text path samples: a checkpoint's own generation defaults (top_k,
        # repetition_penalty, ...) once applied here too, so top_k=1 there made sampling greedy.
        options: dict[str, Any] = {"max_new_tokens": s.max_tokens, "pad_token_id": self._pad_id,
                                   "eos_token_id": sorted(self._eos_ids), "top_k": 0}
        options.update({"do_sample": True, "temperature": s.temperature, "top_p": s.top_p} if s.temperature > 0
                       else {"do_sample": False})
        settings = GenerationConfig(**options)
        completions = []
        previous = torch.get_num_threads()
        torch.set_num_threads(self.threads)
        try:
            for index in range(request.n):
                seed = hashlib.sha256(f"{request.seed_key}\0{index}".encode()).digest()
                # fork_rng: the sample's seed drives generate's sampling without touching the global RNG.
                with torch.random.fork_rng(devices=[]), torch.no_grad():
                    torch.manual_seed(int.from_bytes(seed[:8], "little") >> 1)
                    output = self.model.generate(**inputs, generation_config=settings)
                tokens = output[0, prompt_tokens:].tolist()
                stopped = bool(tokens) and tokens[-1] in self._eos_ids
                completions.append(Completion(
                    text=self.tokenizer.decode(tokens[:-1] if stopped else tokens, skip_special_tokens=True),
                    finish_reason="stop" if stopped or len(tokens) < s.max_tokens else "length",
                    prompt_tokens=prompt_tokens, completion_tokens=len(tokens)))
        finally:
            torch.set_num_threads(previous)
        return completions

    def _completion(self, row: DecodeRow) -> Completion:
        kept = row.tokens[:-1] if row.finish_reason == "stop" else row.tokens
        return Completion(text=self.tokenizer.decode(kept, skip_special_tokens=True),
                          finish_reason=row.finish_reason, prompt_tokens=len(row.prompt_ids),
                          completion_tokens=len(row.tokens))

    async def aclose(self) -> None:
        """Stop the decoding thread (the model's memory goes with the agent)."""
        self._executor.shutdown(wait=True)
