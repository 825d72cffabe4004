"""Advantage estimators against hand-computed values and an independent reward-to-go."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from ragen_train.advantages import (
    broadcast_to_tokens,
    grpo_advantages,
    token_gae,
    tokens_to_turns,
    turn_gae,
    turns_to_tokens,
)


def test_token_gae_hand_computed_skips_env_tokens():
    # tokens: env, model, model(end of turn 1, r=0.5), env, model(end of turn 2, r=1.0)
    mask = torch.tensor([[0, 1, 1, 0, 1]])
    rewards = torch.tensor([[0.0, 0.0, 0.5, 0.0, 1.0]])
    values = torch.tensor([[9.0, 0.1, 0.2, 9.0, 0.3]])  # env-token values must be ignored
    adv, ret = token_gae(rewards, values, mask, gamma=0.9, lam=0.8)
    # t=4: d = 1.0 - 0.3 = 0.7 ; t=2: d = 0.5 + 0.9*0.3 - 0.2 = 0.57, A = 0.57 + 0.72*0.7 = 1.074
    # t=1: d = 0.9*0.2 - 0.1 = 0.08, A = 0.08 + 0.72*1.074 = 0.85328
    expected = torch.tensor([[0.0, 0.85328, 1.074, 0.0, 0.7]])
    torch.testing.assert_close(adv, expected, atol=1e-6, rtol=0)
    torch.testing.assert_close(ret, torch.tensor([[0.0, 0.95328, 1.274, 0.0, 1.0]]), atol=1e-6, rtol=0)


def test_token_gae_rejects_reward_on_env_token():
    with pytest.raises(ValueError, match="did not generate"):
        token_gae(torch.tensor([[1.0, 0.0]]), torch.zeros(1, 2), torch.tensor([[0, 1]]))


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.booleans(), st.floats(-2, 2), st.floats(-2, 2)), min_size=1, max_size=12))
def test_gae_with_gamma_lambda_one_is_reward_to_go_minus_value(cells):
    mask = torch.tensor([[int(m) for m, _, _ in cells]])
    rewards = torch.tensor([[r if m else 0.0 for m, r, _ in cells]], dtype=torch.float64)
    values = torch.tensor([[v for _, _, v in cells]], dtype=torch.float64)
    adv, ret = token_gae(rewards, values, mask, gamma=1.0, lam=1.0)
    r = rewards[0].numpy()
    for t, (m, _, v) in enumerate(cells):
        if m:
            to_go = r[t:].sum()  # independent: plain reward-to-go
            assert math.isclose(adv[0, t].item(), to_go - v, abs_tol=1e-9)
            assert math.isclose(ret[0, t].item(), to_go, abs_tol=1e-9)
        else:
            assert adv[0, t].item() == 0.0 and ret[0, t].item() == 0.0


@settings(max_examples=40, deadline=None)
@given(st.lists(st.floats(-1, 1), min_size=1, max_size=8), st.floats(0, 1), st.floats(0, 1))
def test_gae_with_lambda_one_matches_discounted_return(rs, gamma, v0):
    # All tokens generated; values arbitrary; lam=1 => A_t = sum_k gamma^k r_{t+k} - V_t.
    n = len(rs)
    rewards = torch.tensor([rs], dtype=torch.float64)
    values = torch.full((1, n), v0, dtype=torch.float64)
    adv, _ = token_gae(rewards, values, torch.ones(1, n), gamma=gamma, lam=1.0)
    for t in range(n):
        disc = sum(gamma ** k * rs[t + k] for k in range(n - t))
        assert math.isclose(adv[0, t].item(), disc - v0, abs_tol=1e-9)


def test_turn_gae_and_broadcast_hand_computed():
    turn_rewards = torch.tensor([[0.0, 1.0], [-0.1, 0.0]])
    turn_values = torch.tensor([[0.5, 0.8], [0.2, 0.0]])
    turn_mask = torch.tensor([[1, 1], [1, 0]])  # second episode had one turn
    adv, ret = turn_gae(turn_rewards, turn_values, turn_mask, gamma=0.5, lam=0.5)
    # ep0: k=1: d = 1 - 0.8 = 0.2 ; k=0: d = 0 + 0.5*0.8 - 0.5 = -0.1, A = -0.1 + 0.25*0.2 = -0.05
    # ep1: k=0: d = -0.1 - 0.2 = -0.3
    torch.testing.assert_close(adv, torch.tensor([[-0.05, 0.2], [-0.3, 0.0]]))
    torch.testing.assert_close(ret, torch.tensor([[0.45, 1.0], [-0.1, 0.0]]))
    turn_ids = torch.tensor([[-1, 0, 0, -1, 1], [-1, -1, 0, 0, -1]])
    torch.testing.assert_close(turns_to_tokens(adv, turn_ids),
                               torch.tensor([[0.0, -0.05, -0.05, 0.0, 0.2], [0.0, 0.0, -0.3, -0.3, 0.0]]))
    per_token = torch.tensor([[9.0, 1.0, 2.0, 9.0, 3.0], [9.0, 9.0, 4.0, 5.0, 9.0]])
    torch.testing.assert_close(tokens_to_turns(per_token, turn_ids, 2), torch.tensor([[1.0, 3.0], [4.0, 0.0]]))


def test_grpo_and_drgrpo_hand_computed():
    scores = torch.tensor([1.0, 0.0, 0.0, 1.0, 0.2, 0.2, 0.2, 5.0])
    groups = torch.tensor([0, 0, 0, 0, 1, 1, 1, 2])
    adv = grpo_advantages(scores, groups)
    # group 0: mean 0.5, unbiased std sqrt(1/3); group 1: no spread; group 2: a single member
    s = 0.5 / (math.sqrt(1 / 3) + 1e-6)
    np.testing.assert_allclose(adv.numpy(), [s, -s, -s, s, 0, 0, 0, 0], atol=1e-9)
    dr = grpo_advantages(scores, groups, scale_by_std=False)
    np.testing.assert_allclose(dr.numpy(), [0.5, -0.5, -0.5, 0.5, 0, 0, 0, 0], atol=1e-9)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.floats(-3, 3), min_size=2, max_size=10))
def test_grpo_matches_numpy_and_sums_to_zero(values):
    scores = torch.tensor(values, dtype=torch.float64)
    adv = grpo_advantages(scores, torch.zeros(len(values), dtype=torch.long)).numpy()
    arr = np.array(values)
    np.testing.assert_allclose(adv, (arr - arr.mean()) / (arr.std(ddof=1) + 1e-6), atol=1e-9)
    assert abs(adv.sum()) < 1e-6


def test_broadcast_to_tokens_and_shape_errors():
    out = broadcast_to_tokens(torch.tensor([2.0, -1.0]), torch.tensor([[0, 1, 1], [1, 0, 0]]))
    torch.testing.assert_close(out, torch.tensor([[0.0, 2.0, 2.0], [-1.0, 0.0, 0.0]]))
    with pytest.raises(ValueError):
        broadcast_to_tokens(torch.tensor([1.0]), torch.ones(2, 3))
    with pytest.raises(ValueError):
        token_gae(torch.zeros(2, 3), torch.zeros(2, 4), torch.ones(2, 3))
    with pytest.raises(ValueError):
        grpo_advantages(torch.zeros(3), torch.zeros(2))
