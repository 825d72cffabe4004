"""Worker for test_ddp.py, run under ``torchrun --nproc_per_node 2``: one PPO update of a saved batch.

Arguments: BATCH.pt MODEL_DIR OUT.pt OVERRIDES... Rank 0 writes the updated parameters to OUT.pt.
"""

from __future__ import annotations

import sys

import torch
from torch import nn

from ragen_train.config import load_config
from ragen_train.distributed import init_distributed, shutdown
from ragen_train.policy import load_policy, load_reference
from ragen_train.trainer import forward_scores, make_optimizer, ppo_update


def run(batch_path: str, model_dir: str, out_path: str, overrides: list[str]) -> None:
    """Rescore the batch (checking the gathered scores), update once, save rank 0's parameters."""
    config = load_config(None, overrides)
    info = init_distributed("cpu")
    data = torch.load(batch_path)
    policy = load_policy(model_dir, config.critic)
    rescored = {k: v for k, v in data.items() if k not in ("old_logprobs", "old_values", "ref_logprobs")}
    reference = load_reference(model_dir) if "ref_logprobs" in data else None
    forward_scores(policy, reference, rescored, config, info)
    for key in ("old_logprobs", "old_values", "ref_logprobs"):
        if key in data:
            torch.testing.assert_close(rescored[key], data[key], rtol=1e-4, atol=1e-5)
    model = nn.parallel.DistributedDataParallel(policy) if info.distributed else policy
    optimizer = make_optimizer(policy, config)
    stats = ppo_update(model, policy, optimizer, data, config, info, shuffle_seed=7)
    if info.is_main:
        torch.save({"params": {k: v.detach().clone() for k, v in policy.state_dict().items()},
                    "stats": vars(stats)}, out_path)
    shutdown(info)


if __name__ == "__main__":
    run(sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:])
