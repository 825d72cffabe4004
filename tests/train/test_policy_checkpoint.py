"""ActorCritic layouts and checkpoint bookkeeping on the tiny model."""

from __future__ import annotations

import pytest
import torch

from ragen_train.checkpoint import latest_checkpoint, list_checkpoints, load_trainer_state, save_checkpoint
from ragen_train.config import TrainConfig
from ragen_train.policy import ActorCritic, load_policy, load_tokenizer
from ragen_train.trainer import make_optimizer

pytest.importorskip("transformers")


def test_critic_layouts(tiny_model_dir):
    ids = torch.tensor([[5, 6, 7, 8], [9, 10, 11, 0]])
    attn = torch.tensor([[1, 1, 1, 1], [1, 1, 1, 0]])
    sep = load_policy(tiny_model_dir, "separate")
    logits, values = sep(ids, attn)
    assert logits.shape[:2] == ids.shape and values.shape == ids.shape
    assert torch.equal(values, torch.zeros_like(values))  # zero-initialised head
    assert {id(p) for p in sep.actor_parameters()}.isdisjoint({id(p) for p in sep.critic_parameters()})
    shared = load_policy(tiny_model_dir, "shared")
    assert len(shared.critic_parameters()) == 2  # just the head
    none = load_policy(tiny_model_dir, "none")
    assert none(ids, attn)[1] is None and none.critic_parameters() == []
    with pytest.raises(ValueError, match="separate"):
        ActorCritic(none.lm, "separate", None)
    with pytest.raises(ValueError, match="critic"):
        ActorCritic(none.lm, "both")


def test_checkpoints_keep_newest_and_ignore_incomplete(tiny_model_dir, tmp_path):
    policy = load_policy(tiny_model_dir, "shared")
    with torch.no_grad():
        policy.value_head.bias.fill_(0.25)
    tokenizer = load_tokenizer(tiny_model_dir)
    optimizer = make_optimizer(policy, TrainConfig.from_dict({"critic": "shared"}))
    for step in (1, 2, 3):
        save_checkpoint(tmp_path, step, policy, tokenizer, optimizer, {"monitor": {"stds": [], "grad_norms": []}},
                        keep=2)
    assert [p.name for p in list_checkpoints(tmp_path)] == ["step_000002", "step_000003"]
    (tmp_path / "checkpoints" / "step_000009").mkdir()  # no trainer_state.pt: a crashed save
    assert latest_checkpoint(tmp_path).name == "step_000003"
    state = load_trainer_state(latest_checkpoint(tmp_path))
    assert state["step"] == 3 and "optimizer" in state and "torch" in state["rng"]
    back = load_policy(latest_checkpoint(tmp_path), "shared", critic_path=latest_checkpoint(tmp_path) / "critic")
    assert back.value_head.bias.item() == pytest.approx(0.25)
    with pytest.raises(FileNotFoundError, match="trainer_state"):
        load_trainer_state(tmp_path / "checkpoints" / "step_000009")
