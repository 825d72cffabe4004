"""Measure the rule-based extractor on a hand-labelled set (tests/data/consistency/*.jsonl).

Each labelled item holds a state, a think text, the gold claims (canonical form and verdict) and
the gold plan; see docs/consistency.md for the format. Claims match when their canonical forms are
equal, so precision and recall are about extraction and verdict accuracy is about checking.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from ragen_eval.consistency.claims import KINDS, Claim, claim_kind
from ragen_eval.consistency.plans import plans_agree
from ragen_eval.consistency.scoring import claim_verdicts, score_turn


def load_labelled(path: str | Path) -> list[dict[str, Any]]:
    """Read a labelled JSONL file; raises ValueError naming the line of a malformed item."""
    items = []
    for number, line in enumerate(Path(path).read_text().splitlines(), start=1):
        if not line.strip():
            continue
        try:
            item = json.loads(line)
            for key in ("id", "game", "state_before", "think", "gold_claims"):
                item[key]  # noqa: B018 - presence check
        except (json.JSONDecodeError, KeyError) as err:
            raise ValueError(f"{path}:{number}: malformed labelled item ({err})") from err
        items.append(item)
    return items


def item_turn(item: Mapping[str, Any]) -> dict[str, Any]:
    """The turn record a labelled item stands for."""
    return {"state_before": item["state_before"], "state_after": item.get("state_after"),
            "think": item["think"], "answer": item.get("answer", ""),
            "actions_executed": item.get("actions_executed") or [], "infos": item.get("infos") or []}


def _ratio(num: int, den: int) -> float | None:
    return num / den if den else None


def evaluate(items: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """Precision, recall and verdict accuracy of the extractor on labelled items, overall and per kind.

    Also ``checker_accuracy`` (the verdict of each *gold* claim recomputed from the state, so
    checking is measured apart from extraction) and plan figures, plus an ``errors`` list.
    """
    counts = {k: {"extracted": 0, "gold": 0, "matched": 0, "verdict_ok": 0} for k in KINDS}
    checker_ok = checker_n = plan_exact = plan_agree_ok = n_items = 0
    errors = []
    for item in items:
        n_items += 1
        turn = item_turn(item)
        score = score_turn(turn, game=item["game"], coordinate_base=int(item.get("coordinate_base", 0)))
        got = {c["canonical"]: c["verdict"] for c in score["claims"]}
        gold = {g["canonical"]: g["verdict"] for g in item["gold_claims"]}
        for canonical in got:
            counts[claim_kind(canonical)]["extracted"] += 1
        for canonical, verdict in gold.items():
            kind = counts[claim_kind(canonical)]
            kind["gold"] += 1
            if canonical in got:
                kind["matched"] += 1
                kind["verdict_ok"] += got[canonical] == verdict
        rechecked = claim_verdicts([Claim(c) for c in gold], item["state_before"], turn)
        checker_n += len(rechecked)
        checker_ok += sum(c.verdict == gold[c.canonical] for c in rechecked)
        gold_plan = item.get("gold_plan")
        plan_exact += score["plan"] == gold_plan
        gold_agrees = plans_agree(gold_plan, score["answer_actions"]) if gold_plan is not None else None
        plan_agree_ok += score["plan_agrees"] == gold_agrees
        wrong = sorted(c for c in set(got) & set(gold) if got[c] != gold[c])
        wrong_checks = sorted(c.canonical for c in rechecked if c.verdict != gold[c.canonical])
        if set(got) != set(gold) or wrong or score["plan"] != gold_plan or wrong_checks:
            errors.append({"id": item["id"], "missed": sorted(set(gold) - set(got)),
                           "spurious": sorted(set(got) - set(gold)), "wrong_verdict": wrong,
                           "checker_wrong": wrong_checks, "plan": score["plan"], "gold_plan": gold_plan})
    total = {key: sum(k[key] for k in counts.values()) for key in ("extracted", "gold", "matched", "verdict_ok")}
    return {
        "n_items": n_items,
        "n_gold_claims": total["gold"],
        "n_extracted": total["extracted"],
        "precision": _ratio(total["matched"], total["extracted"]),
        "recall": _ratio(total["matched"], total["gold"]),
        "verdict_accuracy": _ratio(total["verdict_ok"], total["matched"]),
        "checker_accuracy": _ratio(checker_ok, checker_n),
        "plan_exact": _ratio(plan_exact, n_items),
        "plan_agreement_accuracy": _ratio(plan_agree_ok, n_items),
        "by_kind": {kind: {"gold": c["gold"], "extracted": c["extracted"],
                           "precision": _ratio(c["matched"], c["extracted"]),
                           "recall": _ratio(c["matched"], c["gold"]),
                           "verdict_accuracy": _ratio(c["verdict_ok"], c["matched"])}
                    for kind, c in counts.items()},
        "errors": errors,
    }


def evaluate_files(paths: Sequence[str | Path]) -> dict[str, Any]:
    """:func:`evaluate` on the items of several JSONL files together."""
    return evaluate([item for path in paths for item in load_labelled(path)])
