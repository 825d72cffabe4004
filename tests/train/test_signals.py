"""The reply signals: entropy, conditional entropy and mutual information of replies and prompts."""

from __future__ import annotations

import math

import numpy as np
import pytest

from ragen_train.signals import reply_information


def test_estimates_match_a_hand_computed_batch():
    # two prompts, two replies drawn from each; p(reply | prompt) for both prompts
    probs = np.array([
        [0.5, 0.5],  # from prompt 0, as likely under prompt 1: says nothing about its prompt
        [0.4, 0.1],  # from prompt 0, four times likelier there
        [0.1, 0.4],  # from prompt 1
        [0.2, 0.2],  # from prompt 1, says nothing
    ])
    est = reply_information(np.log(probs), [0, 0, 1, 1])
    # H(R|X) = -mean log p(r | own prompt); H(R) = -mean log of the mean over prompts
    assert est.cond_entropy == pytest.approx(-(math.log(0.5) + math.log(0.4) + math.log(0.4) + math.log(0.2)) / 4)
    assert est.entropy == pytest.approx(-(math.log(0.5) + math.log(0.25) + math.log(0.25) + math.log(0.2)) / 4)
    # I = mean log(p_own / p_mix) = (0 + log 1.6 + log 1.6 + 0) / 4
    assert est.mutual_information == pytest.approx(math.log(1.6) / 2)
    assert est.mutual_information == pytest.approx(est.entropy - est.cond_entropy)


def test_template_collapse_gives_zero_and_perfect_identification_log_p():
    same = np.log(np.array([[0.3, 0.3, 0.3], [0.05, 0.05, 0.05], [0.2, 0.2, 0.2]]))
    est = reply_information(same, [0, 1, 2])
    assert est.mutual_information == pytest.approx(0.0, abs=1e-12)
    assert est.entropy == pytest.approx(est.cond_entropy)
    # every reply impossible under the other prompts: the bound log P
    apart = np.full((3, 3), -np.inf)
    np.fill_diagonal(apart, np.log([0.5, 0.25, 0.1]))
    assert reply_information(apart, [0, 1, 2]).mutual_information == pytest.approx(math.log(3))


def test_bad_input_is_refused():
    with pytest.raises(ValueError, match="own prompt"):
        reply_information(np.zeros((2, 2)), [0, 2])
    with pytest.raises(ValueError, match="finite"):
        reply_information(np.array([[-np.inf, 0.0]]), [0])
    with pytest.raises(ValueError, match="non-empty"):
        reply_information(np.zeros((0, 2)), [])


def test_cross_scores_of_own_prompt_are_the_rollout_log_probs(tiny_model_dir):
    torch = pytest.importorskip("torch")
    from ragen_train.loss import token_logprobs
    from ragen_train.policy import load_policy, load_tokenizer
    from ragen_train.rollout import rollout
    from ragen_train.signals import cross_logprobs, first_turn_pairs

    tokenizer = load_tokenizer(tiny_model_dir)
    lm = load_policy(tiny_model_dir, "none").lm.eval()
    batch = rollout(lm, tokenizer, "frozenlake", [11, 12, 13], group_size=3, protocol={"max_turns": 2},
                    max_new_tokens=12, generation_seed=4)
    prompts, replies, own = first_turn_pairs(batch.trajectories, per_group=2)
    assert len(prompts) == 3 and own == [0, 0, 1, 1, 2, 2]
    for traj in batch.trajectories:  # a group's members share the first prompt
        assert traj.input_ids[:traj.turn_ids.index(0)] == prompts[traj.group]
    cross = cross_logprobs(lm, prompts, replies, temperature=0.7, batch_size=3, pad_id=tokenizer.pad_token_id)
    assert cross.shape == (6, 3) and torch.isfinite(cross).all()
    members = [[t for t in batch.trajectories if t.group == g][k] for g in range(3) for k in range(2)]
    for i, traj in enumerate(members):  # the whole episode's sequence, scored in one pass
        ids = torch.tensor([traj.input_ids])
        with torch.no_grad():
            logp = token_logprobs(lm(input_ids=ids).logits, ids, 0, 0.7)[0]
        turn0 = torch.tensor([t == 0 for t in traj.turn_ids])
        assert float(cross[i, own[i]]) == pytest.approx(float(logp[turn0].double().sum()), abs=1e-4)
    est = reply_information(cross.numpy(), own)
    assert est.mutual_information <= math.log(3) + 1e-9
