"""Measure the consistency extractor on the labelled set and write the figures into docs/consistency.md.

    python benchmarks/consistency_accuracy.py                 # print and rewrite the docs table
    python benchmarks/consistency_accuracy.py --no-write      # print only
    python benchmarks/consistency_accuracy.py --judge-model M --judge-base-url http://127.0.0.1:8000/v1
        # also run an LLM judge (any OpenAI-compatible endpoint) and report rule/judge agreement

The table between the ``consistency-accuracy`` markers in docs/consistency.md is generated here;
do not edit it by hand.
"""

from __future__ import annotations

import argparse
import asyncio
import re
import time
from pathlib import Path
from typing import Any

from ragen_eval.consistency import score_turn
from ragen_eval.consistency.claims import KINDS
from ragen_eval.consistency.validation import evaluate, item_turn, load_labelled

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data" / "consistency"
DOC = ROOT / "docs" / "consistency.md"
SPLITS = ("dev", "heldout", "blind")
START, END = "<!-- consistency-accuracy:start -->", "<!-- consistency-accuracy:end -->"


def _pct(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.3f}"


def accuracy_table(results: dict[str, dict[str, Any]]) -> str:
    """Markdown tables: overall figures per split, then precision/recall per claim kind."""
    lines = ["| split | items | gold claims | extracted | precision | recall | verdict accuracy | "
             "checker accuracy | plan exact | plan-agreement accuracy |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for split, r in results.items():
        lines.append(f"| {split} | {r['n_items']} | {r['n_gold_claims']} | {r['n_extracted']} | "
                     f"{_pct(r['precision'])} | {_pct(r['recall'])} | {_pct(r['verdict_accuracy'])} | "
                     f"{_pct(r['checker_accuracy'])} | {_pct(r['plan_exact'])} | "
                     f"{_pct(r['plan_agreement_accuracy'])} |")
    lines += ["", "Per claim kind (precision / recall, gold count in brackets):", "",
              "| kind | " + " | ".join(results) + " |", "|---|" + "---|" * len(results)]
    for kind in KINDS:
        cells = [f"{_pct(r['by_kind'][kind]['precision'])} / {_pct(r['by_kind'][kind]['recall'])} "
                 f"({r['by_kind'][kind]['gold']})" for r in results.values()]
        lines.append(f"| {kind} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def scoring_speed(items: list[dict[str, Any]], repeats: int = 5) -> float:
    """Turns scored per second (extraction + checking), best of ``repeats`` passes."""
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        for item in items:
            score_turn(item_turn(item), game=item["game"], coordinate_base=item["coordinate_base"])
        best = min(best, time.perf_counter() - t0)
    return len(items) / best


async def judge_figures(items: list[dict[str, Any]], model: str, base_url: str) -> dict[str, Any]:
    """Rule/judge agreement and the judge's own precision/recall against the gold claims."""
    from ragen_eval.agents.openai_agent import OpenAIChatAgent
    from ragen_eval.consistency.judge import agreement, judge_turn

    agent = OpenAIChatAgent(model, base_url)
    try:
        judged = await asyncio.gather(*(judge_turn(agent, item_turn(i), game=i["game"],
                                                   coordinate_base=i["coordinate_base"]) for i in items))
    finally:
        await agent.aclose()
    rules = [score_turn(item_turn(i), game=i["game"], coordinate_base=i["coordinate_base"]) for i in items]
    gold = [{"claims": i["gold_claims"]} for i in items]
    return {"rule_vs_judge": agreement(rules, judged), "judge_vs_gold": agreement(gold, judged),
            "judge_errors": sum(j["error"] is not None for j in judged)}


def main() -> None:
    """Evaluate every split, print the tables, and rewrite the docs block unless --no-write."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--no-write", action="store_true", help="print the figures without touching the docs")
    parser.add_argument("--judge-model", help="model name of an OpenAI-compatible judge endpoint")
    parser.add_argument("--judge-base-url", default="http://127.0.0.1:8000/v1", help="the judge endpoint")
    args = parser.parse_args()

    items = {split: load_labelled(DATA / f"{split}.jsonl") for split in SPLITS}
    results = {split: evaluate(split_items) for split, split_items in items.items()}
    results["heldout+blind"] = evaluate(items["heldout"] + items["blind"])
    everything = [i for split in SPLITS for i in items[split]]
    speed = scoring_speed(everything)
    table = accuracy_table(results)
    block = (f"{START}\n{table}\n\nScoring speed: {speed:,.0f} turns/s on one CPU core "
             f"({len(everything)} labelled turns, best of 5 passes).\n\n"
             f"Generated by `python benchmarks/consistency_accuracy.py`.\n{END}")
    print(table)
    print(f"\nscoring speed: {speed:,.0f} turns/s")
    if args.judge_model:
        figures = asyncio.run(judge_figures(everything, args.judge_model, args.judge_base_url))
        print(f"\njudge {args.judge_model}: {figures}")
    if not args.no_write:
        text = DOC.read_text()
        if START not in text or END not in text:
            raise SystemExit(f"{DOC} lacks the {START} ... {END} markers")
        DOC.write_text(re.sub(re.escape(START) + r".*?" + re.escape(END), lambda _: block, text, flags=re.DOTALL))
        print(f"\nwrote the table into {DOC.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
