"""StarPO-S's default update takes several optimizer steps per RL step, so PPO's clip acts; StarPO
and StarPO-S take the same number of steps."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from ragen_train.config import load_config
from ragen_train.distributed import DistInfo
from ragen_train.policy import load_policy, load_tokenizer
from ragen_train.rollout import rollout
from ragen_train.trainer import compute_advantages, forward_scores, make_optimizer, ppo_update

pytest.importorskip("transformers")


@given(st.integers(1, 300), st.integers(1, 12))
def test_mini_batches_cover_the_batch_in_near_equal_parts(batch, parts):
    sizes = load_config(None, [f"ppo_mini_batches={parts}"]).mini_batch_sizes(batch)
    assert sum(sizes) == batch and len(sizes) == min(parts, batch)
    assert max(sizes) - min(sizes) <= 1


def test_starpo_and_starpo_s_take_the_same_optimizer_steps():
    starpo, starpo_s = load_config(None, ["preset=starpo"]), load_config(None, ["preset=starpo-s"])
    everything = starpo.env_groups * starpo.group_size  # 128: StarPO trains on every trajectory
    kept = round(starpo_s.rollout_filter_ratio * starpo_s.env_groups) * starpo_s.group_size  # 32 survive
    assert len(starpo.mini_batch_sizes(everything)) == len(starpo_s.mini_batch_sizes(kept)) == 4
    # a fixed size instead gives StarPO 4 steps and StarPO-S 1, the gap the default avoids
    fixed = load_config(None, ["ppo_mini_batch_size=32"])
    assert (len(fixed.mini_batch_sizes(everything)), len(fixed.mini_batch_sizes(kept))) == (4, 1)


def _scored_batch(tiny_model_dir, config):
    """One kept StarPO-S group's worth of real tiny-model rollouts (16 sequences) with spread rewards."""
    tokenizer = load_tokenizer(tiny_model_dir)
    policy = load_policy(tiny_model_dir, config.critic)
    batch = rollout(policy.lm, tokenizer, "bandit", [31, 32, 33, 34], group_size=4, max_new_tokens=12,
                    generation_seed=4)
    data = batch.to_tensors(tokenizer.pad_token_id, config.reward_placement)
    # a random model never answers in format, so every reward is the same penalty: give half the
    # sequences a win, as a group that passes the filter has
    data["rewards"][::2] *= -10.0
    forward_scores(policy, None, data, config, DistInfo())
    compute_advantages(data, config)
    return policy, data


@pytest.mark.parametrize("mini_batch_size, steps", [(None, 4), (16, 1)])
def test_default_starpo_s_update_clips(tiny_model_dir, mini_batch_size, steps):
    # StarPO-S defaults; only the learning rates are a tiny model's (docs/train.md: actor 1e-4 to 5e-4)
    overrides = ["preset=starpo-s", "actor_lr=3e-4", "critic_lr=1e-3"]
    if mini_batch_size is not None:  # the old setting: one mini-batch holds the whole filtered batch
        overrides.append(f"ppo_mini_batch_size={mini_batch_size}")
    config = load_config(None, overrides)
    policy, data = _scored_batch(tiny_model_dir, config)
    stats = ppo_update(policy, policy, make_optimizer(policy, config), data, config, DistInfo(), shuffle_seed=0)
    assert stats.optimizer_steps == steps
    if steps == 1:  # one step on fresh data: the ratio is exactly 1, the clip cannot act
        assert stats.clip_fraction == 0.0 and stats.approx_kl < 1e-6
    else:  # later mini-batches see a policy the earlier ones moved
        assert stats.clip_fraction > 0.0 and stats.approx_kl > 1e-4
    assert torch.isfinite(torch.tensor(stats.policy_loss))


def test_mini_batch_settings_are_checked():
    assert load_config(None, ["ppo_mini_batch_size=null"]).ppo_mini_batch_size is None
    for bad in ("ppo_mini_batches=0", "ppo_mini_batch_size=0", "ppo_mini_batch_size=2.5"):
        with pytest.raises((ValueError, TypeError), match=bad.split("=")[0]):
            load_config(None, [bad])
    with pytest.raises(ValueError, match="micro_batch_size"):
        load_config(None, ["ppo_mini_batch_size=2", "micro_batch_size=4"])
