"""Cost of one SFT batch: ``ragen_train.sft.batch_nll`` against one padded forward of the same batch.

Both compute the token-mean loss of a batch of whole oracle episodes (grounded thoughts, Sokoban detours as
the thinking model's S6 stage plays them) and its gradients on a tiny model of the thinking model's shape
(4 layers, hidden 256, random weights: the cost does not depend on the weights). The padded forward is
the plain way: the batch right-padded to its longest episode under an attention mask. ``batch_nll`` runs
each episode on its own, unpadded, sharing the prompt prefix when it is the longer part. Timed in
interleaved pairs on one thread; prints each preset's median time ratio (padded / batch_nll) and its range.

    python benchmarks/bench_sft_batch.py                                  # 4 presets, 5 pairs each
    python benchmarks/bench_sft_batch.py --envs boxoban_hard --pairs 7
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time

import torch
from transformers import AutoModelForCausalLM

from ragen_train.demos import DemoConfig, iter_demos
from ragen_train.policy import load_tokenizer
from ragen_train.sft import Example, batch_nll, prefix_to_share, tokenize_demos
from ragen_train.tiny import build_tiny_checkpoint

DETOURS = {"simple_sokoban": 2, "larger_sokoban": 4, "boxoban_hard": 8}  # S6's --detour-turns


def padded_nll(model: torch.nn.Module, examples: list[Example]) -> torch.Tensor:
    """The plain padded batch: one forward, right padding under an attention mask, token-mean loss."""
    width = max(len(e.input_ids) for e in examples)
    ids = torch.zeros((len(examples), width), dtype=torch.long)
    attention = torch.zeros_like(ids)
    mask = torch.zeros((len(examples), width))
    for row, e in enumerate(examples):
        ids[row, :len(e.input_ids)] = torch.tensor(e.input_ids)
        attention[row, :len(e.input_ids)] = 1
        mask[row, :len(e.loss_mask)] = torch.tensor(e.loss_mask, dtype=torch.float32)
    logits = model(input_ids=ids, attention_mask=attention).logits
    logp = torch.log_softmax(logits[:, :-1], dim=-1).gather(-1, ids[:, 1:, None])[..., 0]
    return -(logp * mask[:, 1:]).sum() / mask[:, 1:].sum()


def timed(step) -> tuple[float, float]:
    """Seconds of one forward and backward, and the loss."""
    began = time.perf_counter()
    loss = step()
    loss.backward()
    return time.perf_counter() - began, loss.item()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--envs", default="simple_sokoban,larger_sokoban,boxoban_hard,bandit")
    parser.add_argument("--pairs", type=int, default=5)
    parser.add_argument("--batch-size", type=int, default=16)
    args = parser.parse_args()
    torch.set_num_threads(1)
    with tempfile.TemporaryDirectory() as tmp:
        path = build_tiny_checkpoint(tmp, hidden_size=256, num_layers=4, num_heads=4, intermediate_size=512)
        tokenizer = load_tokenizer(path)
        model = AutoModelForCausalLM.from_pretrained(str(path), dtype=torch.float32)
    print("preset               tokens  shared  padded s  batch_nll s  ratio (range)      loss difference")
    for env in args.envs.split(","):
        demos = DemoConfig(env=env, mode="oracle", num_episodes=args.batch_size, seed=911, thought="grounded",
                           detour_turns=DETOURS.get(env, 0))
        examples = [e for e in tokenize_demos(list(iter_demos(demos)), tokenizer, 8192) if e is not None]
        padded, ours, gap = [], [], 0.0
        for _ in range(args.pairs):
            model.zero_grad()
            seconds, reference = timed(lambda: padded_nll(model, examples))
            padded.append(seconds)
            model.zero_grad()
            seconds, loss = timed(lambda: batch_nll(model, examples)[0])
            ours.append(seconds)
            gap = max(gap, abs(loss - reference))
        ratios = [p / o for p, o in zip(padded, ours)]
        tokens = sum(len(e.input_ids) for e in examples)
        print(f"{env:20s} {tokens:7d} {prefix_to_share(examples):7d} {statistics.median(padded):9.2f} "
              f"{statistics.median(ours):12.2f}  {statistics.median(ratios):5.2f} "
              f"({min(ratios):.2f}-{max(ratios):.2f})  {gap:.1e}", flush=True)


if __name__ == "__main__":
    main()
