"""PPO losses as pure functions of tensors: clipped surrogate, entropy, KL to a reference, value loss.

Every per-token quantity is ``[B, T]`` and reduced with :func:`aggregate` over the loss mask. When a
mini-batch is split into micro-batches (and across DDP ranks), pass ``denominator`` = the count over
the *whole* mini-batch so the sum of micro-batch losses equals the loss of the full mini-batch.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from ragen_train.config import KL_TYPES, LOSS_AGG_MODES


def aggregate(
    per_token: torch.Tensor,
    mask: torch.Tensor,
    mode: str = "token-mean",
    denominator: float | None = None,
) -> torch.Tensor:
    """Reduce ``[B, T]`` values over the mask.

    - ``token-mean``: sum over every masked token / number of masked tokens (RAGEN's default:
      long responses weigh more, in proportion to their tokens);
    - ``seq-mean-token-sum``: per-sequence sums, averaged over sequences;
    - ``seq-mean-token-mean``: per-sequence means, averaged over sequences.

    ``denominator`` replaces the count (tokens for ``token-mean``, sequences otherwise).
    """
    if per_token.shape != mask.shape:
        raise ValueError(f"per_token {tuple(per_token.shape)} and mask {tuple(mask.shape)} differ in shape")
    if mode not in LOSS_AGG_MODES:
        raise ValueError(f"loss_agg_mode must be one of {list(LOSS_AGG_MODES)}, got {mode!r}")
    mask = mask.to(per_token.dtype)
    if mode == "token-mean":
        count = mask.sum() if denominator is None else denominator
        return (per_token * mask).sum() / max(float(count), 1.0)
    per_seq = (per_token * mask).sum(dim=1)
    if mode == "seq-mean-token-mean":
        per_seq = per_seq / mask.sum(dim=1).clamp(min=1.0)
    count = per_token.shape[0] if denominator is None else denominator
    return per_seq.sum() / max(float(count), 1.0)


@dataclass(frozen=True)
class PolicyLossStats:
    """Diagnostics of one surrogate evaluation (masked token means, detached)."""

    clip_fraction: float  # tokens where the clipped branch was the active one
    clip_fraction_high: float  # ... because the ratio exceeded 1 + clip_ratio_high with A > 0
    clip_fraction_low: float  # ... because the ratio fell below 1 - clip_ratio_low with A < 0
    approx_kl: float  # E[(r - 1) - log r], an unbiased, non-negative estimate of KL(old || new)


def policy_loss(
    logprobs: torch.Tensor,
    old_logprobs: torch.Tensor,
    advantages: torch.Tensor,
    mask: torch.Tensor,
    *,
    clip_ratio_low: float = 0.2,
    clip_ratio_high: float = 0.28,
    loss_agg_mode: str = "token-mean",
    denominator: float | None = None,
) -> tuple[torch.Tensor, PolicyLossStats]:
    """PPO's clipped surrogate with separate lower and upper clip ranges (clip-higher).

    Per token, ``max(-A r, -A clip(r, 1 - clip_ratio_low, 1 + clip_ratio_high))`` with ``r =
    exp(logprobs - old_logprobs)``. A larger upper range lets tokens with positive advantage grow
    further before their gradient is cut, which keeps exploration alive (DAPO, RAGEN StarPO-S).
    """
    if not (logprobs.shape == old_logprobs.shape == advantages.shape == mask.shape):
        raise ValueError("logprobs, old_logprobs, advantages and mask must share one [B, T] shape")
    if not (0.0 < clip_ratio_low < 1.0) or clip_ratio_high <= 0.0:
        raise ValueError(f"need 0 < clip_ratio_low < 1 and clip_ratio_high > 0, got {clip_ratio_low}, {clip_ratio_high}")
    log_ratio = logprobs - old_logprobs
    ratio = torch.exp(log_ratio)
    unclipped = -advantages * ratio
    clipped = -advantages * torch.clamp(ratio, 1.0 - clip_ratio_low, 1.0 + clip_ratio_high)
    per_token = torch.maximum(unclipped, clipped)
    loss = aggregate(per_token, mask, loss_agg_mode, denominator)

    with torch.no_grad():
        m = mask.to(per_token.dtype)
        n = m.sum().clamp(min=1.0)
        active = (clipped > unclipped).to(m.dtype) * m
        high = active * (advantages > 0).to(m.dtype)
        low = active * (advantages < 0).to(m.dtype)
        approx_kl = (((ratio - 1.0) - log_ratio) * m).sum() / n
        stats = PolicyLossStats(float(active.sum() / n), float(high.sum() / n), float(low.sum() / n),
                                float(approx_kl))
    return loss, stats


def entropy_from_logits(logits: torch.Tensor) -> torch.Tensor:
    """Entropy of the softmax over the last axis: ``logsumexp(z) - sum(softmax(z) * z)``."""
    log_z = torch.logsumexp(logits, dim=-1)
    probs = torch.softmax(logits, dim=-1)
    return log_z - (probs * logits).sum(dim=-1)


def kl_penalty(logprobs: torch.Tensor, ref_logprobs: torch.Tensor, kl_type: str = "low_var_kl") -> torch.Tensor:
    """Per-token estimate of KL(policy || reference) from sampled-token log-probs.

    ``kl``: ``log p - log q`` (k1); ``mse``: ``(log p - log q)^2 / 2`` (k2); ``low_var_kl``:
    ``q/p - log(q/p) - 1`` (k3, always >= 0, clamped to [-10, 10] as verl does).
    """
    if kl_type not in KL_TYPES:
        raise ValueError(f"kl_type must be one of {list(KL_TYPES)}, got {kl_type!r}")
    diff = logprobs - ref_logprobs
    if kl_type == "kl":
        return diff
    if kl_type == "mse":
        return 0.5 * diff.square()
    log_q_over_p = -diff
    return torch.clamp(torch.exp(log_q_over_p) - log_q_over_p - 1.0, min=-10.0, max=10.0)


def value_loss(
    values: torch.Tensor,
    old_values: torch.Tensor,
    returns: torch.Tensor,
    mask: torch.Tensor,
    *,
    clip: float = 0.5,
    loss_agg_mode: str = "token-mean",
    denominator: float | None = None,
) -> tuple[torch.Tensor, float]:
    """Clipped value loss ``0.5 * max((V - R)^2, (V_clip - R)^2)``; returns ``(loss, clip_fraction)``.

    ``V_clip = V_old + clamp(V - V_old, -clip, clip)``: the critic may not move more than ``clip``
    from its rollout-time estimate in one update, as PPO does for the policy.
    """
    if not (values.shape == old_values.shape == returns.shape == mask.shape):
        raise ValueError("values, old_values, returns and mask must share one [B, T] shape")
    if clip <= 0:
        raise ValueError(f"clip must be > 0, got {clip}")
    clipped = old_values + torch.clamp(values - old_values, -clip, clip)
    err = (values - returns).square()
    err_clipped = (clipped - returns).square()
    per_token = 0.5 * torch.maximum(err, err_clipped)
    loss = aggregate(per_token, mask, loss_agg_mode, denominator)
    with torch.no_grad():
        m = mask.to(per_token.dtype)
        frac = float(((err_clipped > err).to(m.dtype) * m).sum() / m.sum().clamp(min=1.0))
    return loss, frac


def token_logprobs(
    logits: torch.Tensor, input_ids: torch.Tensor, start: int = 0, temperature: float = 1.0,
) -> torch.Tensor:
    """Log-probability of each token given the ones before it, aligned with ``input_ids`` ``[B, T]``.

    ``logits`` cover positions ``start .. T-1`` (``start > 0`` when the model was asked for the
    logits of the tail only, to skip a long prompt). ``out[:, t] = log softmax(logits at t - 1
    / temperature)[input_ids[:, t]]`` for ``t > start``, and 0 for ``t <= start``: pass the
    sampling temperature so the log-probs are those of the distribution the tokens came from.
    """
    width = input_ids.shape[1]
    if logits.shape[0] != input_ids.shape[0] or logits.shape[1] != width - start:
        raise ValueError(f"logits {tuple(logits.shape)} do not cover positions {start}..{width - 1} "
                         f"of input_ids {tuple(input_ids.shape)}")
    if not temperature > 0:
        raise ValueError(f"temperature must be > 0, got {temperature!r}")
    logp = torch.log_softmax(logits[:, :-1].float() / temperature, dim=-1)
    picked = logp.gather(-1, input_ids[:, start + 1:].unsqueeze(-1)).squeeze(-1)
    return torch.nn.functional.pad(picked, (start + 1, 0))


def shift_right(per_position: torch.Tensor, start: int = 0) -> torch.Tensor:
    """Align a per-position quantity with the token it predicts: ``out[:, t] = x at position t - 1``.

    ``per_position`` covers positions ``start .. T-1``; the result is ``[B, T]`` with zeros up to
    ``start``. The entropy and the value *before* token ``t`` come from position ``t - 1``'s output.
    """
    return torch.nn.functional.pad(per_position[:, :-1], (start + 1, 0))
