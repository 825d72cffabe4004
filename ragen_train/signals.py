"""Collapse signals of a step's rollouts: how much the replies say about the prompts that drew them.

Two ways a policy can collapse look alike on a per-token entropy curve (RAGEN's later work tells them
apart): *entropy collapse*, where each prompt gets one near-fixed reply (low H(R|X)), and *template
collapse*, where replies stay varied but stop depending on the prompt (low I(X; R)). Both are
estimated from one matrix of sequence log-probabilities, under the batch's own prompts taken as
equally likely:

    L[i, j] = log p(reply_i | prompt_j)       (policy log-prob of every reply under every prompt)
    H(R|X) ~ -mean_i L[i, own(i)]
    H(R)   ~ -mean_i log mean_j exp(L[i, j])  (the reply under the uniform mixture of the prompts)
    I(X;R) ~ H(R) - H(R|X) = mean_i [L[i, own(i)] - log mean_j exp(L[i, j])]

X is a group's first prompt (every member of a group starts from the same level, so the same
prompt) and R a first-turn reply: the sampled tokens of turn 1, stop token included. Later turns
are left out because their prompts already hold the episode's own replies. Log-probabilities are
summed over the reply's tokens (nats per reply) at the sampling temperature. The estimate of
I(X;R) is at most log P for P prompts (reached when every reply is impossible under every other
prompt) and can dip below 0 on a finite batch when the replies say nothing about the prompts.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from ragen_train.loss import token_logprobs


@dataclass(frozen=True)
class ReplyInformation:
    """The three estimates, in nats per reply."""

    entropy: float  # H(R): the replies under the uniform mixture of the batch's prompts
    cond_entropy: float  # H(R|X): the replies under their own prompts
    mutual_information: float  # I(X;R) = H(R) - H(R|X)


def reply_information(cross: np.ndarray, own: Sequence[int]) -> ReplyInformation:
    """The estimates from ``cross[i, j] = log p(reply i | prompt j)`` (``[R replies, P prompts]``,
    entries may be ``-inf``) and ``own[i]``, the column of reply ``i``'s own prompt."""
    cross = np.asarray(cross, dtype=np.float64)
    own = np.asarray(own, dtype=np.int64)
    if cross.ndim != 2 or cross.shape[0] == 0 or cross.shape[1] == 0 or own.shape != (cross.shape[0],):
        raise ValueError(f"need a non-empty [replies, prompts] matrix and one own prompt per reply, got "
                         f"{cross.shape} and {own.shape}")
    if own.min() < 0 or own.max() >= cross.shape[1]:
        raise ValueError(f"own prompt indices must lie in [0, {cross.shape[1]}), got {own.tolist()}")
    matched = cross[np.arange(len(own)), own]
    if not np.all(np.isfinite(matched)):
        raise ValueError("a reply has no finite log-probability under its own prompt")
    top = cross.max(axis=1)  # finite: the matched entry is
    mixture = top + np.log(np.exp(cross - top[:, None]).sum(axis=1)) - math.log(cross.shape[1])
    entropy, cond_entropy = float(-mixture.mean()), float(-matched.mean())
    return ReplyInformation(entropy, cond_entropy, float((matched - mixture).mean()))


def first_turn_pairs(trajectories: Sequence[Any], per_group: int) -> tuple[list[list[int]], list[list[int]], list[int]]:
    """The prompts and first-turn replies the estimate is made from.

    Returns ``(prompts, replies, own)``: one prompt per group present (the ids before its first
    member's first sampled token, in group order), the first ``per_group`` members' first-turn
    replies of each group (members of a group are independent samples, so the first ones are a fair
    subsample), and each reply's prompt index. Empty replies are left out.
    """
    prompts: list[list[int]] = []
    replies: list[list[int]] = []
    own: list[int] = []
    column: dict[int, int] = {}
    taken: dict[int, int] = {}
    for traj in trajectories:
        turn0 = [tok for tok, turn in zip(traj.input_ids, traj.turn_ids) if turn == 0]
        if not turn0 or taken.get(traj.group, 0) >= per_group:
            continue
        if traj.group not in column:
            column[traj.group] = len(prompts)
            prompts.append(list(traj.input_ids[:traj.turn_ids.index(0)]))
        taken[traj.group] = taken.get(traj.group, 0) + 1
        replies.append(turn0)
        own.append(column[traj.group])
    return prompts, replies, own


@torch.no_grad()
def cross_logprobs(
    lm: Any,
    prompts: Sequence[Sequence[int]],
    replies: Sequence[Sequence[int]],
    *,
    temperature: float,
    batch_size: int,
    pad_id: int,
) -> torch.Tensor:
    """``[len(replies), len(prompts)]``: the summed log-probability of each reply's tokens after each
    prompt under ``lm`` at ``temperature`` (float64, on the CPU)."""
    device = next(lm.parameters()).device
    out = torch.zeros(len(replies), len(prompts), dtype=torch.float64)
    for j, prompt in enumerate(prompts):
        start = len(prompt) - 1  # the position whose logits score the reply's first token
        for lo in range(0, len(replies), batch_size):
            chunk = replies[lo:lo + batch_size]
            width = len(prompt) + max(len(r) for r in chunk)
            ids = torch.full((len(chunk), width), pad_id, dtype=torch.long)
            attn = torch.zeros((len(chunk), width), dtype=torch.long)
            mask = torch.zeros((len(chunk), width))
            for k, reply in enumerate(chunk):
                end = len(prompt) + len(reply)
                ids[k, :end] = torch.tensor([*prompt, *reply])
                attn[k, :end] = 1
                mask[k, len(prompt):end] = 1.0
            ids, attn = ids.to(device), attn.to(device)
            logits = lm(input_ids=ids, attention_mask=attn, use_cache=False, logits_to_keep=width - start).logits
            logp = token_logprobs(logits, ids, start, temperature).cpu()
            out[lo:lo + len(chunk), j] = (logp.double() * mask).sum(dim=1)
    return out
