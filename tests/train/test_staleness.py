"""rollout_staleness: k = 0 is the on-policy loop bit for bit; k > 0 trains on k-step-old rollouts against their policy."""

from __future__ import annotations

import pytest
import torch

from ragen_train.config import load_config
from ragen_train.run_log import read_metrics

pytest.importorskip("transformers")
from safetensors.torch import load_file  # noqa: E402

RUN = ["env=frozenlake", "protocol.max_turns=2", "env_groups=3", "group_size=2", "max_new_tokens=8",
       "micro_batch_size=2", "actor_lr=1e-3", "critic_lr=1e-3", "plot_every=0", "collapse_signals_every=0",
       "rollout_filter_ratio=0.67"]


def _weights(run, step):
    return load_file(run / "checkpoints" / f"step_{step:06d}" / "model.safetensors")


def _assert_identical(a, b):
    assert a.keys() == b.keys()
    for key in a:
        torch.testing.assert_close(a[key], b[key], rtol=0, atol=0, msg=key)


@pytest.mark.slow
def test_staleness_zero_is_the_on_policy_loop(tiny_model_dir, tmp_path):
    """Two steps of ``train`` with k = 0 against the loop before staleness existed, written out here
    from the same pieces: collect, filter, score, advantages, update on the step's own rollouts."""
    from ragen_train.distributed import init_distributed
    from ragen_train.filtering import select_groups
    from ragen_train.policy import load_policy, load_tokenizer
    from ragen_train.trainer import collect, compute_advantages, derived_seed, forward_scores, make_optimizer
    from ragen_train.trainer import ppo_update, train

    config = load_config(None, [f"model={tiny_model_dir}", f"output_dir={tmp_path}", "run_name=k0", *RUN,
                                "total_steps=2", "rollout_staleness=0"])
    run = train(config)

    info = init_distributed("cpu")
    tokenizer = load_tokenizer(tiny_model_dir)
    policy = load_policy(tiny_model_dir, "separate", device=info.device)
    optimizer = make_optimizer(policy, config)
    for step in range(2):
        policy.eval()
        batch = collect(policy.lm, tokenizer, config, step, info)
        policy.train()
        kept = select_groups(batch.group_rewards(), config.rollout_filter_ratio)
        data = batch.select(kept.kept).to_tensors(tokenizer.pad_token_id, config.reward_placement)
        forward_scores(policy, None, data, config, info)
        compute_advantages(data, config)
        ppo_update(policy, policy, optimizer, data, config, info, derived_seed(config.seed, step, 3))
    trained = _weights(run, 2)
    by_hand = {key: value for key, value in policy.lm.state_dict().items() if key in trained}
    _assert_identical(trained, by_hand)


@pytest.mark.slow
def test_stale_updates_use_the_old_rollouts_and_their_policy(tiny_model_dir, tmp_path):
    common = [f"model={tiny_model_dir}", f"output_dir={tmp_path}", *RUN, "save_every=1", "keep_checkpoints=5"]
    # k = 1: step 1 only collects; step 2 trains on step 1's rollouts, exactly as k = 0 does in its step 1
    fresh = train_run(common + ["run_name=k0", "total_steps=1"])
    stale = train_run(common + ["run_name=k1", "total_steps=2", "rollout_staleness=1"])
    _assert_identical(_weights(stale, 1), load_file(tiny_model_dir / "model.safetensors"))
    _assert_identical(_weights(stale, 2), _weights(fresh, 1))
    rows = read_metrics(stale / "metrics.jsonl")
    assert "losses/policy_loss" not in rows[0] and "losses/policy_loss" in rows[1]

    # one on-policy optimizer step per RL step (GRPO, one mini-batch): with k = 0 the ratio is exactly 1;
    # with k = 1 step 3 trains on rollouts the policy of step 1 sampled, after one update moved it
    single = [*common, "advantage_estimator=grpo", "critic=none", "ppo_mini_batches=1", "total_steps=3"]
    on_policy = read_metrics(train_run(single + ["run_name=g0"]) / "metrics.jsonl")
    assert all(row["losses/approx_kl"] == 0.0 and row["losses/clip_fraction"] == 0.0 for row in on_policy)
    off_policy = read_metrics(train_run(single + ["run_name=g1", "rollout_staleness=1"]) / "metrics.jsonl")
    assert abs(off_policy[1]["losses/approx_kl"]) < 1e-6  # rollouts of the unchanged start policy
    assert off_policy[2]["losses/approx_kl"] > 1e-5


@pytest.mark.slow
def test_a_resumed_stale_run_goes_on_with_its_held_back_rollouts(tiny_model_dir, tmp_path):
    common = [f"model={tiny_model_dir}", f"output_dir={tmp_path}", *RUN, "rollout_staleness=1", "save_every=1"]
    straight = train_run(common + ["run_name=straight", "total_steps=3"])
    broken = train_run(common + ["run_name=broken", "total_steps=2"])  # its checkpoint holds step 2's rollouts
    assert train_run(common + ["run_name=broken", "total_steps=3"]) == broken
    _assert_identical(_weights(straight, 3), _weights(broken, 3))


def train_run(overrides):
    from ragen_train.trainer import train

    return train(load_config(None, overrides))


def test_staleness_must_be_a_count():
    with pytest.raises(ValueError, match="rollout_staleness"):
        load_config(None, ["rollout_staleness=-1"])
