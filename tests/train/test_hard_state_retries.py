"""Remedy 2 for zero-spread groups: replay states no rollout solved until one does.

The policy here is scripted (random valid replies), so success is a matter of luck on slippery
FrozenLake; everything else is the real rollout, text protocol and trainer code.
"""

from __future__ import annotations

import pytest
import torch
from torch import nn

from ragen_train.config import load_config
from ragen_train.distributed import DistInfo
from ragen_train.trainer import collect, retry_hard_states

transformers = pytest.importorskip("transformers")

ACTIONS = ("Left", "Down", "Right", "Up")


class RandomReplyLM(nn.Module):
    """Answers every prompt with 1-3 uniformly random FrozenLake moves, drawn from torch's global RNG
    (which ``rollout`` seeds from its ``generation_seed``)."""

    def __init__(self, tokenizer) -> None:
        super().__init__()
        self.anchor = nn.Parameter(torch.zeros(1))  # rollout reads the device from the parameters
        self.tokenizer = tokenizer
        self.generation_config = transformers.GenerationConfig(eos_token_id=tokenizer.eos_token_id)
        # rollout reads the vocabulary size of the output layer (ids past the tokenizer's are never sampled)
        self.head = nn.Linear(1, len(tokenizer), bias=False)

    def get_output_embeddings(self) -> nn.Linear:
        return self.head

    def generate(self, input_ids, attention_mask, max_new_tokens, **_):
        rows = []
        for _ in range(input_ids.shape[0]):
            moves = [ACTIONS[int(i)] for i in torch.randint(0, 4, (int(torch.randint(1, 4, ())),))]
            reply = f"<think>go</think><answer>{' || '.join(moves)}</answer>"
            rows.append(self.tokenizer(reply, add_special_tokens=False)["input_ids"] + [self.tokenizer.eos_token_id])
        width = max(len(r) for r in rows)
        new = torch.full((len(rows), width), self.tokenizer.pad_token_id)
        for i, r in enumerate(rows):
            new[i, :len(r)] = torch.tensor(r)
        return torch.cat([input_ids, new], dim=1)


@pytest.fixture(scope="module")
def policy(tiny_model_dir):
    tokenizer = transformers.AutoTokenizer.from_pretrained(tiny_model_dir)
    return RandomReplyLM(tokenizer), tokenizer


def _config(retries: int):
    return load_config(None, ["env=frozenlake", "env_groups=8", "group_size=2", "protocol.max_turns=2",
                              f"hard_state_retries={retries}", "seed=3"])


def _groups(batch):
    out = {g: [] for g in range(batch.num_groups)}
    for t in batch.trajectories:
        out[t.group].append(t)
    return out


def test_failing_groups_are_replaced_by_a_replay_with_a_success(policy):
    model, tokenizer = policy
    config = _config(retries=4)
    info = DistInfo()
    first = collect(model, tokenizer, config, 0, info)
    before = _groups(first)
    failing = [g for g, members in before.items() if not any(t.success for t in members)]
    assert failing and len(failing) < config.env_groups  # the seeds chosen give both kinds

    after_batch, rescued = retry_hard_states(model, tokenizer, config, 0, info, first)
    after = _groups(after_batch)
    assert len(after_batch.trajectories) == len(first.trajectories)
    for g, members in before.items():
        assert len(after[g]) == config.group_size
        assert {t.record["level_seed"] for t in after[g]} == {t.record["level_seed"] for t in members}
        if g not in failing:
            assert all(a is b for a, b in zip(after[g], members))  # solved groups are untouched
        elif after[g][0] is not members[0]:
            assert any(t.success for t in after[g])  # a replacement always holds a success
    replaced = [g for g in failing if after[g][0] is not before[g][0]]
    assert rescued == len(replaced) > 0
    # the replays are fresh samples of the same state: a replaced group differs from its first play
    assert all([t.input_ids for t in after[g]] != [t.input_ids for t in before[g]] for g in replaced)

    again, rescued_again = retry_hard_states(model, tokenizer, config, 0, info, collect(model, tokenizer, config, 0, info))
    assert rescued_again == rescued
    assert [t.input_ids for t in again.trajectories] == [t.input_ids for t in after_batch.trajectories]


def test_more_retries_rescue_at_least_as_many_and_zero_retries_change_nothing(policy):
    model, tokenizer = policy
    info = DistInfo()
    first = collect(model, tokenizer, _config(0), 0, info)
    unchanged, none = retry_hard_states(model, tokenizer, _config(0), 0, info, first)
    assert none == 0 and all(a is b for a, b in zip(unchanged.trajectories, first.trajectories))
    one = retry_hard_states(model, tokenizer, _config(1), 0, info, first)[1]
    many = retry_hard_states(model, tokenizer, _config(6), 0, info, first)[1]
    assert many >= one


def test_negative_retries_are_refused():
    with pytest.raises(ValueError, match="hard_state_retries"):
        _config(-1)


def test_a_training_step_with_retries_logs_the_rescued_count(tiny_model_dir, tmp_path):
    """Through the real loop: a random tiny model solves no Bandit group, every group is replayed
    once, none is rescued, and the step still updates and logs."""
    import json

    from ragen_train.trainer import train

    config = load_config(None, [f"model={tiny_model_dir}", "env=bandit", "env_groups=2", "group_size=2",
                                "max_new_tokens=8", "total_steps=1", "hard_state_retries=1", "zero_spread_quota=1.0",
                                f"output_dir={tmp_path}", "run_name=r", "plot_every=0", "ppo_mini_batch_size=4",
                                "micro_batch_size=2"])
    run = train(config)
    row = json.loads((run / "metrics.jsonl").read_text().splitlines()[0])
    assert row["rollout/hard_states_rescued"] == 0 and row["rollout/success_rate"] == 0.0
    assert row["rollout/kept_fraction"] == 1.0  # the quota keeps the zero-spread groups, so the step trains
    assert row["losses/policy_loss"] is not None
