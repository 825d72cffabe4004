"""``ragen-train sft``: supervised warm start on demonstration episodes.

Demonstrations (:mod:`ragen_train.demos`) are played through the text protocol and tokenised with
the rollout's own :func:`~ragen_train.rollout.append_turn` into the same layout and loss mask as an RL
episode (:func:`tokenize_chat`), so SFT trains exactly the tokens the policy later generates: every
assistant reply (thought, answer and its end-of-turn token), never the prompts or the
environment's turns.

    ragen-train sft --model tiny --env bandit --mode format --episodes 256 --epochs 2 --out runs/sft/bandit-format

writes a ``transformers`` checkpoint (model + tokenizer) to ``--out`` plus ``sft_config.json`` (the
resolved settings), ``sft_metrics.csv`` (loss per optimizer step) and ``demos_summary.json``.
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import shutil
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch

from ragen_envs.config_dicts import require_ints
from ragen_train.demos import DEMO_MODES, Demo, DemoConfig, play_demos
from ragen_train.loss import aggregate, token_logprobs


@dataclass
class SFTConfig:
    """Settings of one SFT run; defaults are sized for the tiny models on a CPU."""

    model: str = "tiny"
    """A transformers causal-LM directory, or ``tiny`` (built by :func:`ragen_train.tiny.build_tiny_checkpoint`)."""
    out: str = "runs/sft/run"
    """Output directory: the fine-tuned checkpoint and its logs."""
    demos: DemoConfig = field(default_factory=DemoConfig)
    """Which demonstrations to play (game, oracle/format player, count, seed, protocol)."""
    epochs: int = 2
    """Passes over the demonstrations."""
    batch_size: int = 8
    """Episodes per optimizer step."""
    lr: float = 1e-3
    """AdamW learning rate; 1e-3 suits the randomly initialised tiny models (real models: ~1e-5)."""
    weight_decay: float = 0.0
    """AdamW weight decay."""
    grad_clip: float = 1.0
    """Gradient-norm clip, as in RL updates."""
    warmup_steps: int = 10
    """Linear learning-rate warm-up, then cosine decay to 10% of ``lr``."""
    max_seq_len: int = 4096
    """Episodes whose tokens exceed this are an error (raise it, or shorten the protocol)."""
    seed: int = 0
    """Seeds the tiny model's init and the order of examples."""
    tiny_hidden_size: int = 128
    """Hidden size when ``model`` is ``tiny``."""
    tiny_num_layers: int = 2
    """Layers when ``model`` is ``tiny``."""

    def __post_init__(self) -> None:
        if isinstance(self.demos, dict):
            self.demos = DemoConfig(**self.demos)
        require_ints(self, ("epochs", "batch_size", "max_seq_len", "tiny_hidden_size", "tiny_num_layers"))
        if not (isinstance(self.lr, (int, float)) and self.lr > 0):
            raise ValueError(f"SFTConfig.lr must be a positive number, got {self.lr!r}")
        if self.warmup_steps < 0 or self.grad_clip <= 0:
            raise ValueError("SFTConfig.warmup_steps must be >= 0 and grad_clip > 0")

    def to_dict(self) -> dict[str, Any]:
        """JSON-friendly form, as written to ``sft_config.json``."""
        return asdict(self)


@dataclass
class Example:
    """One tokenised demonstration: ids and the 0/1 loss mask (1 on the assistant's tokens)."""

    input_ids: list[int]
    loss_mask: list[int]


def tokenize_chat(tokenizer: Any, messages: Sequence[dict[str, str]],
                  stop_ids: Sequence[int] | None = None) -> tuple[list[int], list[int]]:
    """Token ids of a finished chat and its loss mask, laid out exactly as a rollout lays out an episode.

    Every turn goes through the rollout's own :func:`~ragen_train.rollout.append_turn`: the first
    prompt with its generation header (mask 0), then per assistant reply its tokens plus the stop
    token that closes it (mask 1: what the model samples, stop included), then the environment's
    text up to the next generation header (mask 0). ``stop_ids`` are the ids that may end a reply
    (default: the tokenizer's EOS); the one the template closes replies with is used. A reply is
    taken as finished: a rollout reply cut off by the token limit has no stop token, so for it the
    two layouts differ in that token's mask (and, on the last turn, its presence).
    """
    from ragen_train.rollout import append_turn, encode_text, env_turn_text, render_chat, start_trajectory

    chat = list(messages)
    firsts = [k for k, m in enumerate(chat) if m.get("role") == "assistant"]
    if not firsts:
        raise ValueError("the chat has no assistant reply to train on")
    if stop_ids is None:
        if tokenizer.eos_token_id is None:
            raise ValueError("the tokenizer has no EOS token; pass stop_ids")
        stop_ids = [int(tokenizer.eos_token_id)]
    traj = start_trajectory(tokenizer, chat[:firsts[0]])
    for n, k in enumerate(firsts):
        before = chat[:k]
        final = n + 1 == len(firsts)
        if not final:
            after = env_turn_text(tokenizer, before, chat[:firsts[n + 1]])
        else:  # the last reply: what the template closes it with
            head = render_chat(tokenizer, before, add_generation_prompt=True) + chat[k]["content"]
            full = render_chat(tokenizer, chat[:k + 1], add_generation_prompt=False)
            if not full.startswith(head):
                raise ValueError("the chat template does not render the last reply as an extension of its prompt")
            after = full[len(head):]
        append_turn(traj, tokenizer, encode_text(tokenizer, chat[k]["content"]), after, turn=n, reward=0.0,
                    stop_ids=stop_ids, add_stop=True, final=final)
    return traj.input_ids, traj.loss_mask


def tokenize_demos(demos: Sequence[Demo], tokenizer: Any, max_seq_len: int) -> list[Example]:
    """Tokenise every demo's chat with :func:`tokenize_chat`."""
    examples = []
    for demo in demos:
        ids, mask = tokenize_chat(tokenizer, demo.messages)
        if len(ids) > max_seq_len:
            raise ValueError(f"a demonstration has {len(ids)} tokens, over max_seq_len={max_seq_len}; "
                             "raise max_seq_len or shorten the protocol")
        examples.append(Example(ids, mask))
    return examples


def collate(examples: Sequence[Example], pad_id: int) -> dict[str, torch.Tensor]:
    """Right-pad a batch; padding has attention 0 and loss mask 0."""
    length = max(len(e.input_ids) for e in examples)
    ids = torch.full((len(examples), length), pad_id, dtype=torch.long)
    attention = torch.zeros((len(examples), length), dtype=torch.long)
    mask = torch.zeros((len(examples), length), dtype=torch.float32)
    for row, e in enumerate(examples):
        n = len(e.input_ids)
        ids[row, :n] = torch.tensor(e.input_ids)
        attention[row, :n] = 1
        mask[row, :n] = torch.tensor(e.loss_mask, dtype=torch.float32)
    return {"input_ids": ids, "attention_mask": attention, "loss_mask": mask}


def masked_nll(logits: torch.Tensor, input_ids: torch.Tensor, loss_mask: torch.Tensor) -> torch.Tensor:
    """Token-mean negative log-likelihood of the tokens whose loss mask is 1.

    Uses the trainer's own :func:`~ragen_train.loss.token_logprobs` (aligned with ``input_ids``) and
    token-mean :func:`~ragen_train.loss.aggregate`, so SFT and RL score a token the same way.
    """
    return aggregate(-token_logprobs(logits, input_ids), loss_mask, "token-mean")


def learning_rate(step: int, total: int, config: SFTConfig) -> float:
    """Linear warm-up to ``lr``, then cosine decay to ``0.1 * lr`` at ``total``."""
    if step < config.warmup_steps:
        return config.lr * (step + 1) / config.warmup_steps
    progress = (step - config.warmup_steps) / max(total - config.warmup_steps, 1)
    return config.lr * (0.1 + 0.9 * 0.5 * (1.0 + math.cos(math.pi * min(progress, 1.0))))


def run_sft(config: SFTConfig) -> Path:
    """Play the demos, fine-tune, save the checkpoint and logs to ``config.out``; returns that path."""
    from transformers import AutoModelForCausalLM

    from ragen_train.policy import load_tokenizer

    out = Path(config.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "sft_config.json").write_text(json.dumps(config.to_dict(), indent=2) + "\n")
    model_path = _resolve_model(config, out)

    tokenizer = load_tokenizer(model_path)
    model = AutoModelForCausalLM.from_pretrained(str(model_path), dtype=torch.float32)
    demos = play_demos(config.demos)
    if not demos:
        raise ValueError(f"no demonstrations were kept for {config.demos}; with successful_only=True, "
                         "play more episodes")
    _write_demo_summary(demos, out / "demos_summary.json")
    examples = tokenize_demos(demos, tokenizer, config.max_seq_len)

    rng = np.random.default_rng(config.seed)
    steps_per_epoch = math.ceil(len(examples) / config.batch_size)
    total = steps_per_epoch * config.epochs
    optimizer = torch.optim.AdamW(model.parameters(), lr=config.lr, weight_decay=config.weight_decay)
    model.train()
    step = 0
    with open(out / "sft_metrics.csv", "w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["step", "epoch", "loss", "lr", "grad_norm", "tokens", "seconds"])
        for epoch in range(config.epochs):
            order = rng.permutation(len(examples))
            for start in range(0, len(order), config.batch_size):
                began = time.perf_counter()
                batch = collate([examples[i] for i in order[start: start + config.batch_size]],
                                tokenizer.pad_token_id)
                lr = learning_rate(step, total, config)
                for group in optimizer.param_groups:
                    group["lr"] = lr
                logits = model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"],
                               use_cache=False).logits
                loss = masked_nll(logits, batch["input_ids"], batch["loss_mask"])
                optimizer.zero_grad(set_to_none=True)
                loss.backward()
                grad_norm = torch.nn.utils.clip_grad_norm_(model.parameters(), config.grad_clip)
                optimizer.step()
                writer.writerow([step, epoch, f"{loss.item():.6f}", f"{lr:.3e}", f"{grad_norm.item():.4f}",
                                 int(batch["loss_mask"].sum().item()), f"{time.perf_counter() - began:.3f}"])
                handle.flush()  # a long run can be watched (and a crash leaves its curve)
                step += 1
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    return out


def _resolve_model(config: SFTConfig, out: Path) -> Path:
    """The checkpoint to start from: ``config.model``, or a fresh tiny one built under ``out/init``."""
    if config.model != "tiny":
        path = Path(config.model)
        if not (path / "config.json").is_file():
            raise ValueError(f"--model {config.model!r} is neither 'tiny' nor a transformers checkpoint directory")
        return path
    from ragen_train.tiny import build_tiny_checkpoint

    init = out / "init"
    shutil.rmtree(init, ignore_errors=True)
    # heads of size 64 (vLLM's CPU attention needs >= 64) and a 2x MLP, the default tiny shape's ratios
    return build_tiny_checkpoint(init, seed=config.seed, hidden_size=config.tiny_hidden_size,
                                 num_layers=config.tiny_num_layers, num_heads=max(1, config.tiny_hidden_size // 64),
                                 intermediate_size=2 * config.tiny_hidden_size)


def _write_demo_summary(demos: Sequence[Demo], path: Path) -> None:
    records = [d.record for d in demos]
    summary = {
        "episodes": len(records),
        "success_rate": float(np.mean([r["success"] for r in records])),
        "mean_reward": float(np.mean([r["total_reward"] for r in records])),
        "mean_turns": float(np.mean([r["num_turns"] for r in records])),
        "mean_actions": float(np.mean([r["num_actions"] for r in records])),
    }
    path.write_text(json.dumps(summary, indent=2) + "\n")


def build_parser() -> argparse.ArgumentParser:
    """The ``ragen-train sft`` command line."""
    p = argparse.ArgumentParser(prog="ragen-train sft", description=__doc__.split("\n\n")[0])
    d, dd = SFTConfig(), DemoConfig()
    p.add_argument("--model", default=d.model, help="checkpoint directory, or 'tiny' for a fresh tiny model")
    p.add_argument("--out", required=True, help="output directory for the fine-tuned checkpoint")
    p.add_argument("--env", default=dd.env, help="game preset (bandit, frozenlake, simple_sokoban, ...)")
    p.add_argument("--mode", default=dd.mode, choices=DEMO_MODES, help="oracle play or format-only random play")
    p.add_argument("--episodes", type=int, default=dd.num_episodes, help="demonstration episodes to play")
    p.add_argument("--demo-seed", type=int, default=dd.seed, help="seed of the demonstration set")
    p.add_argument("--successful-only", action="store_true", help="keep only demonstrations that succeed")
    p.add_argument("--protocol", type=json.loads, default={}, help="ProtocolConfig overrides as JSON")
    p.add_argument("--env-config", type=json.loads, default={}, help="game config overrides as JSON")
    p.add_argument("--epochs", type=int, default=d.epochs)
    p.add_argument("--batch-size", type=int, default=d.batch_size)
    p.add_argument("--lr", type=float, default=d.lr)
    p.add_argument("--weight-decay", type=float, default=d.weight_decay)
    p.add_argument("--warmup-steps", type=int, default=d.warmup_steps)
    p.add_argument("--max-seq-len", type=int, default=d.max_seq_len)
    p.add_argument("--seed", type=int, default=d.seed, help="tiny-model init and example order")
    p.add_argument("--tiny-hidden-size", type=int, default=d.tiny_hidden_size)
    p.add_argument("--tiny-num-layers", type=int, default=d.tiny_num_layers)
    return p


def config_from_args(argv: Sequence[str] | None = None) -> SFTConfig:
    """Parse ``ragen-train sft`` arguments into an :class:`SFTConfig`."""
    a = build_parser().parse_args(argv)
    demos = DemoConfig(env=a.env, mode=a.mode, num_episodes=a.episodes, seed=a.demo_seed,
                       successful_only=a.successful_only, protocol=a.protocol, env_config=a.env_config)
    return SFTConfig(model=a.model, out=a.out, demos=demos, epochs=a.epochs, batch_size=a.batch_size, lr=a.lr,
                     weight_decay=a.weight_decay, warmup_steps=a.warmup_steps, max_seq_len=a.max_seq_len,
                     seed=a.seed, tiny_hidden_size=a.tiny_hidden_size, tiny_num_layers=a.tiny_num_layers)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``ragen-train sft`` (called by :mod:`ragen_train.cli`)."""
    config = config_from_args(argv)
    out = run_sft(config)
    print(f"SFT checkpoint written to {out}")
    return 0
