"""Claim accuracy and length of the templated thoughts (``ragen-train sft --thought templated``) per preset.

Plays oracle demonstrations of every preset of the three games, exactly as ``ragen-train sft --mode
oracle --thought templated`` plays them, and summarises them as ``ragen-eval`` summarises a run
(:func:`ragen_eval.summary.summarize`: thought-state consistency by the rule checker, think words and
approximate tokens per turn), plus the reply lengths in the shipped default model's tokenizer (what
the thinking model would have to generate: compare with ``ragen-eval``'s ``max_tokens`` 400 and
``ragen-train``'s ``max_new_tokens`` 128; whole episodes with the model's 4,096 positions).

    python experiments/thinking_model/thought_accuracy.py --episodes 300 \\
        --out experiments/thinking_model/thought_accuracy.json

Prints a Markdown table and writes the figures as JSON.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from ragen_envs import PRESETS
from ragen_eval.summary import summarize
from ragen_train.demos import DemoConfig, iter_demos
from ragen_train.sft import tokenize_chat

#: The three games' presets (every built-in preset is one of them).
GAME_PRESETS = tuple(p.name for p in PRESETS)


def _level_key(record: dict[str, Any]) -> str:
    """The start state as text: equal for levels a player could not tell apart."""
    state = dict(record["turns"][0]["state_before"]) if record["turns"] else {}
    return json.dumps(state, sort_keys=True)


def measure(env: str, episodes: int, seed: int, tokenizer: Any, max_positions: int) -> dict[str, Any]:
    """Figures of ``episodes`` oracle demonstrations of ``env`` with templated thoughts (demo seed ``seed``)."""
    config = DemoConfig(env=env, mode="oracle", num_episodes=episodes, seed=seed, thought="templated")
    demos = list(iter_demos(config))
    records = [demo.record for demo in demos]
    # the whole chat as SFT lays it out: it must fit max_seq_len and the model's 4,096 positions
    episode_tokens = [len(tokenize_chat(tokenizer, demo.messages)[0]) for demo in demos]
    summary = summarize(records)["overall"]
    consistency = summary["consistency"]
    turns = [t for r in records for t in r["turns"]]
    think_tokens = [len(tokenizer(t["think"], add_special_tokens=False)["input_ids"]) for t in turns]
    reply_tokens = [len(tokenizer(t["response"], add_special_tokens=False)["input_ids"]) for t in turns]
    return {
        "env": env, "episodes": len(records), "distinct_levels": len({_level_key(r) for r in records}),
        "turns": len(turns), "oracle_success_rate": summary["success_rate"],
        "format_error_rate": summary["format_error_rate"],
        "turns_with_thought": float(np.mean([bool((t["think"] or "").strip()) for t in turns])),
        "claims_per_turn": consistency["claims_per_turn"], "claim_accuracy": consistency["claim_accuracy"],
        "n_claims": consistency["n_claims"], "n_false": consistency["n_false"],
        "n_unverifiable": consistency["n_unverifiable"], "turns_with_claims": consistency["turns_with_claims"],
        "plan_answer_agreement": consistency["plan_answer_agreement"],
        "claims_by_kind": {k: v["n_claims"] for k, v in consistency["by_kind"].items() if v["n_claims"]},
        "think_words_per_turn": summary["think_words_per_turn"],
        "think_tokens_per_turn": float(np.mean(think_tokens)),
        "think_tokens_p95": float(np.percentile(think_tokens, 95)),
        "reply_tokens_max": int(max(reply_tokens)),
        "episode_tokens_p95": float(np.percentile(episode_tokens, 95)), "episode_tokens_max": int(max(episode_tokens)),
        "episodes_over_max_positions": int(sum(n > max_positions for n in episode_tokens)),
    }


def _row(m: dict[str, Any]) -> str:
    return (f"| {m['env']} | {m['episodes']} | {m['distinct_levels']} | {m['turns']} | {m['turns_with_thought']:.3f} | "
            f"{m['claims_per_turn']:.2f} | {m['claim_accuracy']:.3f} | {m['n_false']} | {m['n_unverifiable']} | "
            f"{m['plan_answer_agreement']:.3f} | {m['think_words_per_turn']:.1f} | {m['think_tokens_per_turn']:.1f} | "
            f"{m['think_tokens_p95']:.0f} | {m['reply_tokens_max']} | {m['episode_tokens_max']} | "
            f"{m['episodes_over_max_positions']} |")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--episodes", type=int, default=300, help="oracle demonstrations per preset")
    parser.add_argument("--seed", type=int, default=0, help="demo seed (picks the train-split levels)")
    parser.add_argument("--env", default=",".join(GAME_PRESETS), help="comma-separated presets (default: all)")
    parser.add_argument("--tokenizer", default="default",
                        help="checkpoint whose tokenizer counts tokens (default: the shipped default model)")
    parser.add_argument("--out", type=Path, default=None, help="write the figures here as JSON")
    args = parser.parse_args(argv)
    envs = [e.strip() for e in args.env.split(",") if e.strip()]
    unknown = sorted(set(envs) - set(GAME_PRESETS))
    if unknown or args.episodes < 1:
        parser.error(f"unknown presets {unknown}" if unknown else "--episodes must be >= 1")
    from transformers import AutoConfig, AutoTokenizer

    from ragen_eval.embedded_model import resolve_model_path

    model_path = resolve_model_path(args.tokenizer)
    tokenizer = AutoTokenizer.from_pretrained(model_path)
    max_positions = int(AutoConfig.from_pretrained(model_path).max_position_embeddings)
    results = []
    for env in envs:
        began = time.perf_counter()
        results.append(measure(env, args.episodes, args.seed, tokenizer, max_positions))
        print(f"{env}: {results[-1]['episodes']} episodes, claim accuracy {results[-1]['claim_accuracy']:.3f} "
              f"({time.perf_counter() - began:.1f} s)", file=sys.stderr, flush=True)
    print("| preset | episodes | distinct levels | turns | turns with thought | claims/turn | claim accuracy | false | "
          "unchecked | plan = answer | think words/turn | think tokens/turn | think tokens p95 | reply tokens max | "
          "episode tokens max | episodes over max positions |")
    print("|" + "---|" * 16)
    for m in results:
        print(_row(m))
    if args.out is not None:
        command = "python experiments/thinking_model/thought_accuracy.py " + " ".join(argv or sys.argv[1:])
        args.out.write_text(json.dumps({"command": command.strip(), "tokenizer": args.tokenizer, "seed": args.seed,
                                        "max_positions": max_positions,
                                        "presets": results}, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
