"""Train a model on Bandit with TRL's GRPOTrainer, the game played through ragen's text protocol (rollout_func).

    pip install "ragen-envs[trl]"
    python examples/trl_grpo_bandit.py                         # tiny model, format warm start, 24 GRPO steps (CPU)
    python examples/trl_grpo_bandit.py --model Qwen/Qwen2.5-0.5B-Instruct --env simple_sokoban --steps 200

With the default ``--model tiny`` a fresh tiny model is first taught the reply format only (SFT on random
valid actions, ``ragen-train sft --mode format``), so it starts by picking arms at random and GRPO has room
to raise the reward. Any game works (``--env``): multi-turn ones are played to the end inside each rollout,
the game's text between turns masked out of the loss. Prints (and with ``--curve`` writes as CSV) the mean
episode reward and success rate of every step.
"""

from __future__ import annotations

import argparse
import csv
import os
from pathlib import Path

import torch
from datasets import Dataset
from transformers import AutoModelForCausalLM, AutoTokenizer
from trl import GRPOConfig, GRPOTrainer

from ragen_envs import split_seeds
from ragen_train.demos import DemoConfig
from ragen_train.sft import SFTConfig, run_sft
from ragen_train.trl_env import GameRollout, episode_reward, episode_success


#: Bandit paying each arm its expected reward (the risky arm 0.25 on every pull, the safe one 0.1): the same
#: choice to learn as RAGEN's Bandit, whose risky arm pays 1.0 on a quarter of the levels, without the payout
#: noise that a few CPU steps of a few levels each cannot average out.
EXPECTED_PAYOUTS = {"high_risk_prob": 1.0, "high_risk_reward": 0.25}


def payouts(args: argparse.Namespace) -> dict[str, float] | None:
    """The game config: Bandit's expected payouts unless ``--ragen-payouts``; other games their preset's."""
    return EXPECTED_PAYOUTS if args.env == "bandit" and not args.ragen_payouts else None


def example_parser(description: str, model_help: str, lr: float, out: str) -> argparse.ArgumentParser:
    """The flags both TRL examples take; ``model_help`` says what 'tiny' starts from, ``lr`` and ``out`` differ."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--model", default="tiny", help=model_help)
    parser.add_argument("--env", default="bandit", help="preset name (bandit, simple_sokoban, frozenlake, ...)")
    parser.add_argument("--ragen-payouts", action="store_true", help="Bandit's random payouts as in RAGEN (noisier) "
                        "instead of each arm's expected reward")
    parser.add_argument("--steps", type=int, default=24, help="GRPO steps")
    parser.add_argument("--levels", type=int, default=256, help="train-split levels in the dataset")
    parser.add_argument("--lr", type=float, default=lr, help=f"learning rate ({lr:g} suits the tiny model; "
                        "a pretrained one wants ~1e-6)")
    parser.add_argument("--seed", type=int, default=0, help="seeds the warm start, the data order and sampling")
    parser.add_argument("--out", default=out, help="output directory")
    parser.add_argument("--curve", help="write step, reward, success per step to this CSV file")
    return parser


def main() -> None:
    """Parse the flags, warm-start a tiny model if asked, train with GRPO, print the reward curve."""
    parser = example_parser(__doc__.splitlines()[0], "checkpoint path or hub id; 'tiny': a fresh tiny model with a "
                            "format-only warm start", 5e-4, "runs/trl_grpo_bandit")
    args = parser.parse_args()
    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")  # rollout_func is marked experimental in TRL

    path = args.model
    if args.model == "tiny":
        # 512 random-action demonstrations, 2 epochs at 2e-3: the format is learnt, the choice left random.
        path = str(run_sft(SFTConfig(model="tiny", out=f"{args.out}/warm_start", seed=args.seed, lr=2e-3,
                                     demos=[DemoConfig(env=args.env, mode="format", num_episodes=512,
                                                       seed=args.seed)])))
    game = GameRollout(args.env, env_config=payouts(args))  # the protocol's defaults: RAGEN's budgets, -0.1 penalty
    dataset = Dataset.from_list(game.prompts(split_seeds("train", args.levels, env=args.env)))
    tokenizer = AutoTokenizer.from_pretrained(path, padding_side="left")
    model = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32)
    config = GRPOConfig(
        output_dir=args.out, max_steps=args.steps, per_device_train_batch_size=32, num_generations=4,
        max_completion_length=48,  # per reply: each turn of an episode gets this many tokens
        temperature=1.0, learning_rate=args.lr, beta=0.0, logging_steps=1, save_strategy="no", report_to="none",
        reward_weights=[1.0, 0.0],  # success is logged beside the reward, not trained on
        use_cpu=not torch.cuda.is_available(), seed=args.seed,
    )
    trainer = GRPOTrainer(model=model, reward_funcs=[episode_reward, episode_success], args=config,
                          train_dataset=dataset, processing_class=tokenizer, rollout_func=game)
    trainer.train()
    report(trainer, args.curve)


def report(trainer: GRPOTrainer, curve: str | None) -> None:
    """Print each logged step's mean episode reward and success rate; with ``curve``, write them as CSV."""
    rows = [(e["step"], e["reward"], e["rewards/episode_success/mean"])
            for e in trainer.state.log_history if "reward" in e]
    for step, reward, success in rows:
        print(f"step {step:>3}  mean episode reward {reward:+.3f}  success {success:.3f}")
    if curve:
        Path(curve).parent.mkdir(parents=True, exist_ok=True)
        with open(curve, "w", newline="") as handle:
            csv.writer(handle).writerows([("step", "reward", "success"), *rows])


if __name__ == "__main__":
    main()
