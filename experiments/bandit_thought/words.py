"""Exploratory probe: a copy of a model whose tokenizer holds every built-in Bandit arm name as one token.

    python experiments/bandit_thought/words.py SRC OUT

The default model's byte-level BPE splits most arm names into pieces, and differently with and without a leading
space (" Tiger" is "ĠT ig er", "Tiger" after ``<answer>`` is "T ig er"), so answering a name read in the prompt is
a mapping between two spellings. Here each name of ``NAME_POOLS`` becomes one added token that matches whole words
only, so the prompt, the thought and the answer spell it the same way. New embedding rows are drawn by
``transformers``' mean resizing under a fixed torch seed, so the copy is the same every time.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import torch
from tokenizers import AddedToken
from transformers import AutoModelForCausalLM, AutoTokenizer

from ragen_envs.bandit.names import NAME_POOLS


def arm_names() -> list[str]:
    """Every arm name of the built-in name sets, in pool order."""
    return [name for pool in NAME_POOLS.values() for name in (*pool.low_risk, *pool.high_risk)]


def with_whole_names(src: Path, out: Path) -> int:
    """Save ``src`` to ``out`` with each arm name added as one whole-word token; returns how many were added."""
    tokenizer = AutoTokenizer.from_pretrained(src)
    model = AutoModelForCausalLM.from_pretrained(src)
    added = tokenizer.add_tokens([AddedToken(name, single_word=True, normalized=False) for name in arm_names()])
    torch.manual_seed(0)
    model.resize_token_embeddings(len(tokenizer))
    out.mkdir(parents=True, exist_ok=False)
    tokenizer.save_pretrained(out)
    model.save_pretrained(out)
    return added


def main(argv: list[str] | None = None) -> int:
    """Write the copy; refuses an existing OUT."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("src", type=Path)
    parser.add_argument("out", type=Path)
    args = parser.parse_args(argv)
    if args.out.exists():
        parser.error(f"{args.out} exists")
    print(f"added {with_whole_names(args.src, args.out)} tokens -> {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
