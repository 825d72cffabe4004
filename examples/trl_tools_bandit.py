"""Train a model on Bandit with TRL's GRPOTrainer, the game played by tool calls (environment_factory).

    pip install "ragen-envs[trl]"
    python examples/trl_tools_bandit.py                        # tiny model, tool-format warm start, GRPO (CPU)
    python examples/trl_tools_bandit.py --model Qwen/Qwen2.5-0.5B-Instruct --env simple_sokoban --steps 200

The model plays by calling the tool ``act(actions)`` of :class:`ragen_train.trl_tools.GameToolEnv`; TRL runs
the calls and reads each episode's reward from the environment (``get_reward``). A tool-calling checkpoint
(Qwen2.5/Qwen3 Instruct, Llama 3.1, ...) needs no warm start. With the default ``--model tiny`` a fresh tiny
model, given Qwen2.5's chat template, is first taught the call format only (SFT on calls with a random valid
action, then a short closing reply), so it starts by picking arms at random and GRPO has room to raise the
reward. Prints (and with ``--curve`` writes as CSV) the mean episode reward and success rate of every step.
"""

from __future__ import annotations

import os

import numpy as np
import torch
from datasets import Dataset
from transformers import AutoModelForCausalLM, AutoTokenizer
from trl import GRPOConfig, GRPOTrainer

from ragen_envs import split_seeds
from ragen_train.rollout import encode_text
from ragen_train.sft import Example, batch_nll
from ragen_train.tiny import build_tiny_checkpoint
from ragen_train.trl_tools import SEED_COLUMN, GameToolEnv, tool_dataset, with_tool_template
from trl_grpo_bandit import example_parser, payouts, report  # the sibling example (this script's folder is on sys.path)


def tool_call_demo(tokenizer, env: GameToolEnv, seed: int, rng: np.random.Generator) -> Example:
    """One episode played by calls of one random valid action each, then a short closing reply, laid out as
    TRL lays out a rollout: the model's calls and reply (mask 1), the prompt and the tool's answers (mask 0)."""
    [row] = tool_dataset([seed])
    chat = [row["prompt"][0], {"role": "user", "content": env.reset(**{SEED_COLUMN: seed})}]
    while not env.episode.done:
        action = str(rng.choice(env.episode.game.action_names))
        call = {"type": "function", "function": {"name": "act", "arguments": {"actions": [action]}}}
        chat += [{"role": "assistant", "content": "", "tool_calls": [call]},
                 {"role": "tool", "name": "act", "content": env.act([action])}]
    chat.append({"role": "assistant", "content": "Done."})
    ids, mask, done = [], [], ""
    for end in range(2, len(chat) + 1):  # the prompt, then each message as the template appends it
        trained = chat[end - 1]["role"] == "assistant"
        text = tokenizer.apply_chat_template(chat[:end], tools=[env.act], tokenize=False,
                                             add_generation_prompt=not trained)
        piece = text[len(done):]
        if trained:  # up to and including the end-of-turn token, which the model samples to stop
            piece = piece[:piece.index(tokenizer.eos_token) + len(tokenizer.eos_token)]
        ids += encode_text(tokenizer, piece)
        mask += [int(trained)] * (len(ids) - len(mask))
        done += piece
    return Example(ids, mask)


def warm_start(path: str, env_name: str, episodes: int, epochs: int, seed: int) -> str:
    """Teach the checkpoint at ``path`` (in place) the tool-call format on random valid calls; returns ``path``."""
    tokenizer = with_tool_template(AutoTokenizer.from_pretrained(path))
    model = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32)
    env = GameToolEnv.factory(env_name)()
    seeds = split_seeds("train", episodes, env=env_name)
    optimizer = torch.optim.AdamW(model.parameters(), lr=2e-3)
    for epoch in range(epochs):
        rng = np.random.default_rng([seed, epoch])  # each epoch draws its own random calls
        for start in range(0, episodes, 16):
            loss, _ = batch_nll(model, [tool_call_demo(tokenizer, env, s, rng) for s in seeds[start:start + 16]])
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            if start % 128 == 0:
                print(f"warm start: epoch {epoch}, {start + 16}/{episodes} demonstrations, loss {loss.item():.4f}",
                      flush=True)
    model.save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path


def main() -> None:
    """Parse the flags, warm-start a tiny model if asked, train with GRPO, print the reward curve."""
    parser = example_parser(__doc__.splitlines()[0], "checkpoint path or hub id (a tool-calling model); 'tiny': a "
                            "fresh tiny model with a tool-format warm start", 1e-4, "runs/trl_tools_bandit")
    args = parser.parse_args()
    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")  # environment_factory is marked experimental in TRL

    path = args.model
    # 512 random valid calls, 3 epochs at 2e-3: the call format learnt, the choice random. After 2, no sampled
    # call parsed (experiments/trl_examples/README.md), and GRPO had nothing to tell apart.
    if args.model == "tiny":
        path = warm_start(str(build_tiny_checkpoint(f"{args.out}/warm_start", seed=args.seed)), args.env, 512, 3,
                          args.seed)
    tokenizer = AutoTokenizer.from_pretrained(path, padding_side="left")
    model = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32)
    config = GRPOConfig(
        output_dir=args.out, max_steps=args.steps, per_device_train_batch_size=16, num_generations=4,
        max_completion_length=96, max_tool_calling_iterations=5,  # one call per turn: the protocol's 5 turns
        # 0.7: at 1.0 the tiny warm-started model garbles most calls (a few hundred demonstrations teach the
        # format, not its every token), and GRPO cannot tell a wrong arm from a broken call
        temperature=0.7, learning_rate=args.lr, beta=0.0, logging_steps=1, save_strategy="no", report_to="none",
        reward_weights=[0.0],  # for episode_success; TRL adds the environment's get_reward with weight 1
        use_cpu=not torch.cuda.is_available(), seed=args.seed,
    )

    def episode_success(environments, **kwargs):
        """Whether each episode ended in success; weight 0, so it is logged beside the reward, not trained on."""
        return [float(e.episode.success) for e in environments]

    trainer = GRPOTrainer(model=model, reward_funcs=[episode_success], args=config, processing_class=tokenizer,
                          train_dataset=Dataset.from_list(tool_dataset(split_seeds("train", args.levels,
                                                                                     env=args.env))),
                          environment_factory=GameToolEnv.factory(args.env, env_config=payouts(args)))
    trainer.train()
    report(trainer, args.curve)


if __name__ == "__main__":
    main()
