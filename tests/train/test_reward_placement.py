"""Where rewards sit (RAGEN's episode return on the last token, or per turn), how reward_scale acts,
and that the update's log-probs are those of the temperature the rollout sampled at."""

from __future__ import annotations

import pytest
import torch

from ragen_train.advantages import token_gae
from ragen_train.config import load_config
from ragen_train.distributed import DistInfo
from ragen_train.rollout import RolloutBatch, Trajectory
from ragen_train.trainer import compute_advantages, forward_scores, make_optimizer, ppo_update


def _two_turn_batch() -> RolloutBatch:
    # prompt(2) reply-1(2, reward 0.5 - 0.1 penalty) env(1) reply-2(1, reward 1.0); the second is one turn, no reward
    a = Trajectory(group=0, input_ids=[5, 6, 7, 8, 9, 10], loss_mask=[0, 0, 1, 1, 0, 1], turn_ids=[-1, -1, 0, 0, -1, 1],
                   rewards=[0, 0, 0, 0.4, 0, 1.0], response_tokens=[2, 1], record={"total_reward": 1.4})
    b = Trajectory(group=0, input_ids=[5, 6, 7], loss_mask=[0, 0, 1], turn_ids=[-1, -1, 0], rewards=[0, 0, 0.0],
                   response_tokens=[1], record={"total_reward": 0.0})
    return RolloutBatch([a, b], num_groups=1, group_size=2)


def test_episode_end_puts_the_return_on_the_last_sampled_token():
    data = _two_turn_batch().to_tensors(pad_id=0)  # the default is RAGEN's
    assert data["rewards"][0].tolist() == pytest.approx([0, 0, 0, 0, 0, 1.4])
    assert data["turn_rewards"][0].tolist() == pytest.approx([0, 1.4])
    assert data["rewards"][1].abs().sum() == 0
    # with gamma = lam = 1 and no critic values, every token of the episode is credited the return
    adv, _ = token_gae(data["rewards"], torch.zeros_like(data["rewards"]), data["loss_mask"])
    assert adv[0].tolist() == pytest.approx([0, 0, 1.4, 1.4, 0, 1.4])


def test_turn_end_keeps_each_turn_reward_on_its_turn():
    data = _two_turn_batch().to_tensors(pad_id=0, reward_placement="turn-end")
    assert data["rewards"][0].tolist() == pytest.approx([0, 0, 0, 0.4, 0, 1.0])
    assert data["turn_rewards"][0].tolist() == pytest.approx([0.4, 1.0])
    adv, _ = token_gae(data["rewards"], torch.zeros_like(data["rewards"]), data["loss_mask"])
    assert adv[0].tolist() == pytest.approx([0, 0, 1.4, 1.4, 0, 1.0])  # turn 2 is not credited turn 1's reward
    with pytest.raises(ValueError, match="reward_placement"):
        _two_turn_batch().to_tensors(pad_id=0, reward_placement="per-token")
    assert load_config(None, []).reward_placement == "episode-end"
    with pytest.raises(ValueError, match="reward_placement"):
        load_config(None, ["reward_placement=last"])


@pytest.mark.parametrize("estimator", ["gae", "gae-turn", "grpo"])
def test_reward_scale_scales_value_targets_not_whitened_advantages(estimator):
    def advantages(scale: float) -> dict[str, torch.Tensor]:
        data = _two_turn_batch().to_tensors(pad_id=0)
        data["old_values"] = torch.zeros_like(data["rewards"])  # a fresh critic: its head starts at zero
        config = load_config(None, [f"advantage_estimator={estimator}", "critic=none" if estimator == "grpo" else
                                    "critic=separate", f"reward_scale={scale}"])
        compute_advantages(data, config)
        return data

    one, tenth = advantages(1.0), advantages(0.1)
    torch.testing.assert_close(tenth["advantages"], one["advantages"])
    if estimator != "grpo":
        torch.testing.assert_close(tenth["returns"], 0.1 * one["returns"])
        assert one["returns"].abs().max() == pytest.approx(1.4)
    with pytest.raises(ValueError, match="reward_scale"):
        load_config(None, ["reward_scale=0"])


def test_update_logprobs_are_those_of_the_sampling_temperature(tiny_model_dir):
    pytest.importorskip("transformers")
    from ragen_train.policy import load_policy

    temperature = 0.5
    config = load_config(None, [f"temperature={temperature}", "ppo_mini_batches=1"])
    policy = load_policy(tiny_model_dir, config.critic)
    lm = policy.lm
    prompt = torch.tensor([[1, 2, 3, 4, 5, 6]])
    torch.manual_seed(0)
    out = lm.generate(input_ids=prompt, attention_mask=torch.ones_like(prompt), max_new_tokens=6, do_sample=True,
                      temperature=temperature, top_k=0, top_p=1.0, output_scores=True, return_dict_in_generate=True,
                      eos_token_id=None, pad_token_id=0)
    sampled = out.sequences[0, prompt.shape[1]:]
    # generate's processed scores are the logits after its temperature warper: what it sampled from
    expected = torch.stack([torch.log_softmax(s[0].float(), -1)[tok] for s, tok in zip(out.scores, sampled)])

    width = out.sequences.shape[1]
    mask = torch.zeros(1, width, dtype=torch.long)
    mask[0, prompt.shape[1]:] = 1
    data = {"input_ids": out.sequences, "attention_mask": torch.ones_like(mask), "loss_mask": mask,
            "rewards": mask * 1.0, "turn_rewards": torch.ones(1, 1), "turn_mask": torch.ones(1, 1, dtype=torch.long),
            "turn_ids": mask - 1, "scores": torch.ones(1, dtype=torch.float64),
            "group_ids": torch.zeros(1, dtype=torch.long)}
    forward_scores(policy, None, data, config, DistInfo())
    torch.testing.assert_close(data["old_logprobs"][0, prompt.shape[1]:], expected, rtol=1e-4, atol=1e-4)
    # the update scores the same tokens the same way: its first (only) step starts at ratio 1
    compute_advantages(data, config)
    stats = ppo_update(policy, policy, make_optimizer(policy, config), data, config, DistInfo(), shuffle_seed=0)
    assert stats.optimizer_steps == 1 and stats.approx_kl < 1e-8 and stats.clip_fraction == 0.0
