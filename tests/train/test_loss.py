"""PPO losses against hand-computed values; the clip is asymmetric where it should be."""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from ragen_train.loss import (
    aggregate,
    entropy_from_logits,
    kl_penalty,
    policy_loss,
    shift_right,
    token_logprobs,
    value_loss,
)


def _surrogate_grad(ratio: float, adv: float, low=0.2, high=0.28) -> tuple[float, float]:
    logp = torch.tensor([[math.log(ratio)]], requires_grad=True)
    loss, stats = policy_loss(logp, torch.zeros(1, 1), torch.tensor([[adv]]), torch.ones(1, 1),
                              clip_ratio_low=low, clip_ratio_high=high)
    loss.backward()
    return loss.item(), logp.grad.item(), stats


def test_clip_higher_is_asymmetric():
    # A > 0, ratio 1.25: inside the 0.28 upper range, so the gradient flows (-A * r = -1.25)
    loss, grad, stats = _surrogate_grad(1.25, 1.0)
    assert loss == pytest.approx(-1.25) and grad == pytest.approx(-1.25) and stats.clip_fraction == 0
    # the same token under a symmetric 0.2 clip is cut: loss -1.2, no gradient
    loss, grad, stats = _surrogate_grad(1.25, 1.0, high=0.2)
    assert loss == pytest.approx(-1.2) and grad == 0.0 and stats.clip_fraction_high == 1.0
    # A > 0, ratio 1.3 > 1.28: clipped at 1.28
    loss, grad, _ = _surrogate_grad(1.3, 1.0)
    assert loss == pytest.approx(-1.28) and grad == 0.0
    # A < 0, ratio 0.75 < 0.8: the lower clip binds (loss = 0.8 * |A|), no gradient
    loss, grad, stats = _surrogate_grad(0.75, -1.0)
    assert loss == pytest.approx(0.8) and grad == 0.0 and stats.clip_fraction_low == 1.0
    # A < 0, ratio 1.5: never clipped above (pessimistic branch is the unclipped one)
    loss, grad, _ = _surrogate_grad(1.5, -1.0)
    assert loss == pytest.approx(1.5) and grad == pytest.approx(1.5)


def test_policy_loss_token_mean_hand_computed():
    logp = torch.log(torch.tensor([[1.0, 1.1, 0.5], [1.0, 2.0, 0.9]]))
    adv = torch.tensor([[9.0, 2.0, -1.0], [1.0, 1.0, -2.0]])
    mask = torch.tensor([[0, 1, 1], [1, 1, 1]])
    loss, stats = policy_loss(logp, torch.zeros(2, 3), adv, mask)
    # per token: -2.2, max(0.5, 0.8)=0.8 | -1.0, max(-2, -1.28)=-1.28, max(1.8, 1.6)=1.8
    assert loss.item() == pytest.approx((-2.2 + 0.8 - 1.0 - 1.28 + 1.8) / 5)
    assert stats.clip_fraction == pytest.approx(2 / 5)
    r = torch.tensor([1.1, 0.5, 1.0, 2.0, 0.9])
    assert stats.approx_kl == pytest.approx(float(((r - 1) - r.log()).mean()), rel=1e-5)


def test_aggregate_modes_and_denominator():
    x = torch.tensor([[1.0, 2.0, 3.0], [4.0, 0.0, 0.0]])
    mask = torch.tensor([[1, 1, 1], [1, 0, 0]])
    assert aggregate(x, mask, "token-mean").item() == pytest.approx(10 / 4)
    assert aggregate(x, mask, "seq-mean-token-sum").item() == pytest.approx((6 + 4) / 2)
    assert aggregate(x, mask, "seq-mean-token-mean").item() == pytest.approx((2 + 4) / 2)
    # two micro-batches with the full denominator sum to the full-batch loss
    halves = aggregate(x[:1], mask[:1], denominator=4) + aggregate(x[1:], mask[1:], denominator=4)
    assert halves.item() == pytest.approx(aggregate(x, mask).item())
    with pytest.raises(ValueError, match="loss_agg_mode"):
        aggregate(x, mask, "sum")


def test_value_loss_clipped_hand_computed():
    values = torch.tensor([[1.0, 0.0, 2.0]])
    old = torch.tensor([[0.0, 0.0, 0.0]])
    returns = torch.tensor([[1.0, 1.0, 0.4]])
    loss, frac = value_loss(values, old, returns, torch.ones(1, 3), clip=0.5)
    # t0: V=1 moved 1 > 0.5 -> V_clip 0.5: max(0, 0.25)=0.25 ; t1: max(1, 1)=1 ; t2: max(2.56, 0.01)=2.56
    assert loss.item() == pytest.approx(0.5 * (0.25 + 1.0 + 2.56) / 3)
    assert frac == pytest.approx(1 / 3)


def test_kl_estimators_hand_computed():
    lp, ref = torch.tensor([[-1.0]]), torch.tensor([[-1.5]])
    assert kl_penalty(lp, ref, "kl").item() == pytest.approx(0.5)
    assert kl_penalty(lp, ref, "mse").item() == pytest.approx(0.125)
    assert kl_penalty(lp, ref, "low_var_kl").item() == pytest.approx(math.exp(-0.5) + 0.5 - 1)
    with pytest.raises(ValueError, match="kl_type"):
        kl_penalty(lp, ref, "js")


@settings(max_examples=30, deadline=None)
@given(st.lists(st.floats(-5, 5), min_size=2, max_size=7))
def test_entropy_matches_categorical(logits):
    z = torch.tensor([logits], dtype=torch.float64)
    expected = torch.distributions.Categorical(logits=z).entropy()
    torch.testing.assert_close(entropy_from_logits(z), expected)


def test_token_logprobs_alignment():
    logits = torch.randn(2, 4, 7, generator=torch.Generator().manual_seed(0))
    ids = torch.tensor([[3, 1, 4, 1], [5, 2, 6, 0]])
    out = token_logprobs(logits, ids)
    assert out[0, 0] == 0
    assert out[1, 2].item() == pytest.approx(torch.log_softmax(logits[1, 1], -1)[6].item(), rel=1e-6)
    torch.testing.assert_close(shift_right(torch.tensor([[1.0, 2.0, 3.0]])), torch.tensor([[0.0, 1.0, 2.0]]))


def test_tail_only_logits_give_the_same_logprobs_and_entropy():
    logits = torch.randn(2, 6, 5, generator=torch.Generator().manual_seed(1))
    ids = torch.tensor([[1, 2, 3, 4, 0, 1], [4, 3, 2, 1, 0, 2]])
    full = token_logprobs(logits, ids)
    tail = token_logprobs(logits[:, 3:], ids, start=3)
    assert torch.equal(tail[:, :4], torch.zeros(2, 4))
    torch.testing.assert_close(tail[:, 4:], full[:, 4:])
    ent = entropy_from_logits(logits)
    torch.testing.assert_close(shift_right(ent[:, 3:], start=3)[:, 4:], shift_right(ent)[:, 4:])
    with pytest.raises(ValueError, match="cover"):
        token_logprobs(logits[:, 2:], ids, start=3)


def test_token_logprobs_at_a_temperature_are_those_of_the_sharpened_softmax():
    logits = torch.tensor([[[2.0, 0.0, 1.0], [0.0, 0.0, 0.0]]])
    ids = torch.tensor([[1, 0]])
    # log softmax([4, 0, 2])[0] = 4 - log(e^4 + 1 + e^2), written out by hand
    expected = 4.0 - math.log(math.exp(4.0) + 1.0 + math.exp(2.0))
    assert token_logprobs(logits, ids, temperature=0.5)[0, 1].item() == pytest.approx(expected)
    assert token_logprobs(logits, ids)[0, 1].item() == pytest.approx(2.0 - math.log(math.exp(2.0) + 1.0 + math.e))
    with pytest.raises(ValueError, match="temperature"):
        token_logprobs(logits, ids, temperature=0.0)
