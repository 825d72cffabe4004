"""Two CPU processes under torchrun (gloo) make the same update as one process on the same batch."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from ragen_train.config import load_config
from ragen_train.distributed import DistInfo
from ragen_train.policy import load_policy, load_reference, load_tokenizer
from ragen_train.rollout import rollout
from ragen_train.trainer import compute_advantages, forward_scores

WORKER = Path(__file__).with_name("ddp_update_worker.py")
# 5 sequences, mini-batches of 4 then 1: ranks get unequal shares and one rank a placeholder micro-batch.
OVERRIDES = ["preset=starpo", "ppo_mini_batch_size=4", "micro_batch_size=1", "ppo_epochs=2",
             "actor_lr=1e-3", "critic_lr=1e-3", "advantage_estimator=gae"]


@pytest.mark.slow
def test_two_process_update_equals_one_process(tiny_model_dir, tmp_path):
    config = load_config(None, OVERRIDES)
    tokenizer = load_tokenizer(tiny_model_dir)
    policy = load_policy(tiny_model_dir, config.critic)
    batch = rollout(policy.lm, tokenizer, "frozenlake", [21, 22, 23, 24, 25], group_size=1, max_new_tokens=12,
                    generation_seed=3, protocol={"max_turns": 2})
    data = batch.to_tensors(tokenizer.pad_token_id)
    data["rewards"] = data["rewards"] + 0.5 * (data["rewards"] != 0)  # varied rewards: nonzero advantages
    forward_scores(policy, load_reference(tiny_model_dir), data, config, DistInfo())
    compute_advantages(data, config)
    torch.save(data, tmp_path / "batch.pt")

    outputs = {}
    for procs in (1, 2):
        out = tmp_path / f"out{procs}.pt"
        env = {**os.environ, "OMP_NUM_THREADS": "1", "MASTER_PORT": str(29500 + os.getpid() % 1000)}
        cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc_per_node={procs}",
               str(WORKER), str(tmp_path / "batch.pt"), str(tiny_model_dir), str(out), *OVERRIDES]
        result = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
        assert result.returncode == 0, result.stderr[-3000:]
        outputs[procs] = torch.load(out)

    initial = load_policy(tiny_model_dir, config.critic).state_dict()
    one, two = outputs[1]["params"], outputs[2]["params"]
    moved = 0
    for key in one:
        torch.testing.assert_close(two[key], one[key], rtol=1e-4, atol=2e-6, msg=key)
        moved += int(not torch.equal(one[key], initial[key]))
    assert moved == len(one)  # the update changed every tensor, so the comparison is not vacuous
    for key in ("policy_loss", "value_loss", "entropy", "clip_fraction", "grad_norm_actor", "grad_norm_critic"):
        assert outputs[2]["stats"][key] == pytest.approx(outputs[1]["stats"][key], rel=1e-4, abs=1e-6), key
