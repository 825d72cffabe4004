"""Train a model on Bandit with TRL's GRPOTrainer, the game played through ragen's text protocol.

    pip install "ragen-envs[trl]"
    python examples/trl_grpo_bandit.py                        # the embedded tiny model, 20 steps on a CPU
    python examples/trl_grpo_bandit.py --model Qwen/Qwen2.5-0.5B-Instruct --env simple_sokoban --steps 200

Any game works (``--env``): multi-turn ones are played to the end inside each rollout, the game's text
between turns masked out of the loss. Prints the mean episode reward of every logged step.
"""

from __future__ import annotations

import argparse
import os

import torch
from datasets import Dataset
from transformers import AutoModelForCausalLM, AutoTokenizer
from trl import GRPOConfig, GRPOTrainer

from ragen_envs import split_seeds
from ragen_eval.embedded_model import resolve_model_path
from ragen_train.trl_env import GameRollout, episode_reward


def main() -> None:
    """Parse the flags, build the dataset of train-split levels, train, print the reward curve."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="default", help="checkpoint path or hub id; 'default': the embedded one")
    parser.add_argument("--env", default="bandit", help="preset name (bandit, simple_sokoban, frozenlake, ...)")
    parser.add_argument("--steps", type=int, default=20, help="GRPO steps")
    parser.add_argument("--levels", type=int, default=64, help="train-split levels in the dataset")
    parser.add_argument("--out", default="runs/trl_grpo_bandit", help="TRL's output_dir")
    args = parser.parse_args()
    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")  # rollout_func is marked experimental in TRL

    game = GameRollout(args.env)  # the protocol's defaults: RAGEN's budgets and -0.1 format penalty
    dataset = Dataset.from_list(game.prompts(split_seeds("train", args.levels, env=args.env)))
    path = resolve_model_path(args.model)
    tokenizer = AutoTokenizer.from_pretrained(path, padding_side="left")
    model = AutoModelForCausalLM.from_pretrained(path)
    config = GRPOConfig(
        output_dir=args.out, max_steps=args.steps, per_device_train_batch_size=8, num_generations=4,
        max_completion_length=64,  # per reply: each turn of an episode gets this many tokens
        temperature=1.0, learning_rate=1e-4, beta=0.0, logging_steps=1, save_strategy="no", report_to="none",
        use_cpu=not torch.cuda.is_available(),
    )
    trainer = GRPOTrainer(model=model, reward_funcs=episode_reward, args=config, train_dataset=dataset,
                          processing_class=tokenizer, rollout_func=game)
    trainer.train()
    for entry in trainer.state.log_history:
        if "reward" in entry:
            print(f"step {entry['step']:>3}  mean episode reward {entry['reward']:+.3f}")


if __name__ == "__main__":
    main()
