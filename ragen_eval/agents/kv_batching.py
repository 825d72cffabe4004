"""Continuous batching over one KV cache: the decoding engine of the ``hf`` backend.

:class:`KVBatch` holds the rows being generated (one row per requested sample) in a single
left-padded ``DynamicCache``. Each call to :meth:`KVBatch.advance` first prefills the prompts that
arrived since the last call and merges them into the cache, then decodes one token per row per
step until some row finishes (end-of-sequence or its ``max_tokens``). Finished rows leave the
cache at once, so a long reply never holds a batch of short ones back, and a turn that arrives
while others are mid-reply joins them instead of waiting for the slowest (what a
one-``generate``-per-turn design cannot do: there every batch lasts as long as its longest reply).

Every row samples from its own ``torch.Generator``, seeded by the caller, so a reply does not
depend on which other rows shared its batch. Blocking and not thread-safe: one thread drives it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import torch
from transformers import DynamicCache


@dataclass
class DecodeRow:
    """One sample being generated: its settings, its RNG and the tokens chosen so far."""

    owner: Any
    """What the caller uses to route the finished row back (e.g. a request and sample index)."""
    prompt_ids: list[int]
    max_tokens: int
    temperature: float
    top_p: float
    generator: torch.Generator
    tokens: list[int] = field(default_factory=list)
    finish_reason: str | None = None
    """``"stop"`` once an end-of-sequence token was chosen, ``"length"`` at ``max_tokens``."""


def choose_tokens(logits: torch.Tensor, rows: Sequence[DecodeRow]) -> list[int]:
    """The next token of each row from its last-position ``logits`` (``[rows, vocab]``).

    Temperature 0 is greedy (argmax, as ``generate`` picks). Otherwise the row's distribution at its
    temperature, cut to the smallest set of tokens whose mass reaches ``top_p``, is sampled by
    inverting its CDF at one uniform draw from the row's own generator.
    """
    # On the CPU whatever device computed the logits: each row's uniform draw comes from its own CPU
    # generator, so a GPU run samples exactly the tokens a CPU run samples.
    logits = logits.float().cpu()
    chosen = logits.argmax(dim=-1)
    sampled = [i for i, row in enumerate(rows) if row.temperature > 0]
    if sampled:
        index = torch.tensor(sampled)
        temperature = torch.tensor([rows[i].temperature for i in sampled]).unsqueeze(1)
        # top_p >= 1 keeps everything; an infinite bar avoids cutting the tail on rounding error.
        top_p = torch.tensor([rows[i].top_p if rows[i].top_p < 1 else float("inf") for i in sampled]).unsqueeze(1)
        probs = torch.softmax(logits[index] / temperature, dim=-1)
        ordered, order = probs.sort(dim=-1, descending=True)
        mass_before = ordered.cumsum(dim=-1) - ordered
        ordered = ordered.masked_fill(mass_before >= top_p, 0.0)  # the most likely token always stays
        cdf = ordered.cumsum(dim=-1)
        draws = torch.stack([torch.rand((), generator=rows[i].generator) for i in sampled]).unsqueeze(1)
        position = torch.searchsorted(cdf, draws * cdf[:, -1:]).clamp(max=cdf.shape[1] - 1)
        chosen[index] = order.gather(1, position).squeeze(1)
    return chosen.tolist()


#: Key and value tensors of one layer for one sequence, each ``[kv_heads, length, head_dim]``.
LayerKV = tuple[torch.Tensor, torch.Tensor]


class PrefixStore:
    """KV blocks of recently finished sequences, for prompts that start the same way.

    A later turn of an episode repeats the earlier turns (prompt and reply) and adds one message;
    the first turns of one game share their rules. Reusing the stored keys and values of the
    longest matching prefix leaves only the new tokens to prefill. Oldest entries are evicted
    once the stored tokens exceed ``max_tokens``.
    """

    def __init__(self, max_tokens: int) -> None:
        self.max_tokens = max_tokens
        self._entries: list[tuple[torch.Tensor, list[LayerKV]]] = []  # oldest first
        self._tokens = 0

    def add(self, ids: list[int], kv: list[LayerKV]) -> None:
        """Remember ``kv`` as the cache of the sequence ``ids``."""
        if not ids or len(ids) > self.max_tokens:
            return
        self._entries.append((torch.tensor(ids), kv))
        self._tokens += len(ids)
        while self._tokens > self.max_tokens:
            self._tokens -= len(self._entries.pop(0)[0])

    def lookup(self, ids: list[int]) -> tuple[int, list[LayerKV] | None]:
        """The longest stored prefix of ``ids`` (leaving at least its last token to feed): length and KV."""
        if not self._entries or len(ids) < 2:
            return 0, None
        query = torch.tensor(ids[:-1])
        best, best_kv = 0, None
        for stored, kv in self._entries:
            length = min(len(stored), len(query))
            differs = (stored[:length] != query[:length]).nonzero()
            common = int(differs[0]) if len(differs) else length
            if common > best:
                best, best_kv = common, kv
        return best, best_kv


class KVBatch:
    """The rows in flight for one causal LM, sharing one left-padded KV cache.

    Args:
        model: a ``transformers`` causal LM in eval mode.
        eos_ids: token ids that end a reply.
        pad_id: the id written into padding positions (never attended to).
        prefix_tokens: how many tokens of finished sequences :class:`PrefixStore` keeps for reuse (0: none).
        prefill_tokens: the most prompt positions (rows x padded length) prefilled in one forward pass;
            a larger prefill is split, because its activations, not the weights or the cache, set the
            peak memory of a small model.
    """

    def __init__(self, model: Any, eos_ids: frozenset[int], pad_id: int, prefix_tokens: int = 0,
                 prefill_tokens: int = 4096) -> None:
        self.model = model
        self.prefill_tokens = prefill_tokens
        self.eos_ids = eos_ids
        self.pad_id = pad_id
        self.device = next(model.parameters()).device
        self.prefixes = PrefixStore(prefix_tokens) if prefix_tokens > 0 else None
        #: Prompt tokens fed through the model, and those whose stored keys and values were reused.
        self.prefilled_tokens = 0
        self.reused_tokens = 0
        self.rows: list[DecodeRow] = []
        self._cache: DynamicCache | None = None
        self._mask = torch.zeros((0, 0), dtype=torch.long, device=self.device)  # 1 where a real token sits

    def advance(self, new_rows: Sequence[DecodeRow], max_steps: int) -> list[DecodeRow]:
        """Admit ``new_rows``, then decode until a row finishes or ``max_steps`` steps; return the finished rows."""
        with torch.no_grad():
            group: list[DecodeRow] = []
            for row in new_rows:
                longest = max([len(r.prompt_ids) for r in group] + [len(row.prompt_ids)])
                if group and longest * (len(group) + 1) > self.prefill_tokens:
                    self._admit(group)
                    group = []
                group.append(row)
            if group:
                self._admit(group)
            for _ in range(max_steps):
                if not self.rows or any(row.finish_reason for row in self.rows):
                    break
                self._step()
            return self._drop_finished()

    def clear(self) -> list[DecodeRow]:
        """Forget every row (after a failure) and return them."""
        rows, self.rows, self._cache = self.rows, [], None
        self._mask = self._mask[:0, :0]
        return rows

    def _forward(self, input_ids: torch.Tensor, mask: torch.Tensor, cache: DynamicCache) -> torch.Tensor:
        # Positions count real tokens only, so a padded row sees the positions it would alone.
        positions = (mask.cumsum(dim=1) - 1).clamp(min=0)[:, -input_ids.shape[1]:]
        out = self.model(input_ids=input_ids, attention_mask=mask, position_ids=positions, past_key_values=cache,
                         use_cache=True, logits_to_keep=1)
        return out.logits[:, -1]

    def _admit(self, rows: list[DecodeRow]) -> None:
        # Each row reuses the KV of its longest stored prefix and feeds only the rest of its prompt.
        # Row layout: [pad][reused prefix][pad][new tokens]; the mask hides both pads.
        found = [self.prefixes.lookup(row.prompt_ids) if self.prefixes else (0, None) for row in rows]
        reused = max(length for length, _ in found)
        width = max(len(row.prompt_ids) - length for row, (length, _) in zip(rows, found))
        ids = torch.full((len(rows), width), self.pad_id, dtype=torch.long, device=self.device)
        mask = torch.zeros((len(rows), reused + width), dtype=torch.long, device=self.device)
        for i, (row, (length, _)) in enumerate(zip(rows, found)):
            fresh = row.prompt_ids[length:]
            ids[i, width - len(fresh):] = torch.tensor(fresh, dtype=torch.long)
            mask[i, reused - length:reused] = 1
            mask[i, reused + width - len(fresh):] = 1
        cache = DynamicCache(self._stack_prefixes(found, reused)) if reused else DynamicCache()
        self.reused_tokens += sum(length for length, _ in found)
        self.prefilled_tokens += sum(len(row.prompt_ids) - length for row, (length, _) in zip(rows, found))
        logits = self._forward(ids, mask, cache)
        self._record(rows, choose_tokens(logits, rows))
        if self._cache is None or not self.rows:
            self._cache, self._mask, self.rows = cache, mask, rows
            return
        # Both parts are left-padded; pad the shorter one further on the left and stack the rows.
        length = max(self._mask.shape[1], mask.shape[1])
        merged = [(torch.cat([_pad_left(old.keys, length), _pad_left(new.keys, length)]),
                   torch.cat([_pad_left(old.values, length), _pad_left(new.values, length)]))
                  for old, new in zip(self._cache.layers, cache.layers)]
        self._cache = DynamicCache(merged)
        self._mask = torch.cat([_pad_left(self._mask, length), _pad_left(mask, length)])
        self.rows = self.rows + rows

    def _stack_prefixes(self, found: list[tuple[int, list[LayerKV] | None]], reused: int) -> list[LayerKV]:
        """Per layer, the reused prefixes of the new rows right-aligned in a ``[rows, heads, reused, dim]`` block."""
        layers = []
        template = next(kv for _, kv in found if kv is not None)
        for layer, (k_like, v_like) in enumerate(template):
            keys = k_like.new_zeros((len(found), k_like.shape[0], reused, k_like.shape[2]))
            values = v_like.new_zeros((len(found), v_like.shape[0], reused, v_like.shape[2]))
            for i, (length, kv) in enumerate(found):
                if length:
                    keys[i, :, reused - length:] = kv[layer][0][:, :length]
                    values[i, :, reused - length:] = kv[layer][1][:, :length]
            layers.append((keys, values))
        return layers

    def _step(self) -> None:
        last = torch.tensor([[row.tokens[-1]] for row in self.rows], dtype=torch.long, device=self.device)
        self._mask = torch.cat([self._mask, self._mask.new_ones((len(self.rows), 1))], dim=1)
        logits = self._forward(last, self._mask, self._cache)
        self._record(self.rows, choose_tokens(logits, self.rows))

    def _record(self, rows: Sequence[DecodeRow], tokens: list[int]) -> None:
        for row, token in zip(rows, tokens):
            row.tokens.append(token)
            if token in self.eos_ids:
                row.finish_reason = "stop"
            elif len(row.tokens) >= row.max_tokens:
                row.finish_reason = "length"

    def _drop_finished(self) -> list[DecodeRow]:
        finished = [i for i, row in enumerate(self.rows) if row.finish_reason]
        if not finished:
            return []
        if self.prefixes is not None:
            for i in finished:
                # The cache holds the prompt and every chosen token but the last, which was never fed.
                real = self._mask[i].nonzero().squeeze(1)
                self.prefixes.add(self.rows[i].prompt_ids + self.rows[i].tokens[:-1],
                                  [(layer.keys[i][:, real], layer.values[i][:, real]) for layer in self._cache.layers])
        done = [self.rows[i] for i in finished]
        keep = [i for i, row in enumerate(self.rows) if not row.finish_reason]
        self.rows = [self.rows[i] for i in keep]
        if not keep:
            self.clear()
            return done
        mask = self._mask[keep]
        # Columns that are padding in every remaining row cost attention time and memory: cut them.
        start = int(mask.any(dim=0).nonzero()[0])
        index = torch.tensor(keep, device=self.device)
        self._cache = DynamicCache([(layer.keys[index, :, start:], layer.values[index, :, start:])
                                    for layer in self._cache.layers])
        self._mask = mask[:, start:]
        return done


def _pad_left(tensor: torch.Tensor, length: int) -> torch.Tensor:
    """``tensor`` with zeros prepended along its sequence axis (dim 1 of a mask, dim 2 of a KV block)."""
    axis = 1 if tensor.dim() == 2 else 2
    missing = length - tensor.shape[axis]
    if missing == 0:
        return tensor
    shape = list(tensor.shape)
    shape[axis] = missing
    return torch.cat([tensor.new_zeros(shape), tensor], dim=axis)
