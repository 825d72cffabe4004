"""Build the labelled consistency set (``dev.jsonl``, ``heldout.jsonl``) from its hand-written source.

The think texts, gold claims and verdicts are written by hand in ``dev.yaml`` / ``heldout.yaml``;
states are written once as rows in ``levels.yaml``. This script only expands each item's level names
into full ``state_dict()``s and splits the gold strings, so the JSONL stays in step with the source.

    python tests/data/consistency/build_labelled.py          # rewrite both JSONL files
    python tests/data/consistency/build_labelled.py --show   # print every level with coordinates
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import yaml

from ragen_eval.consistency.claims import claim_kind

HERE = Path(__file__).resolve().parent
SPLITS = ("dev", "heldout", "blind")
VERDICTS = {"T": True, "F": False, "?": None}


def sokoban_state(rows: list[str]) -> dict[str, Any]:
    """A Sokoban state_dict from rows in standard notation."""
    found: dict[str, list[list[int]]] = {"player": [], "boxes": [], "targets": [], "walls": []}
    for r, row in enumerate(rows):
        for c, ch in enumerate(row):
            if ch == "#":
                found["walls"].append([r, c])
            if ch in "@+":
                found["player"].append([r, c])
            if ch in "$*":
                found["boxes"].append([r, c])
            if ch in ".*+":
                found["targets"].append([r, c])
    if len(found["player"]) != 1:
        raise ValueError(f"sokoban rows need exactly one player: {rows}")
    return {"game": "sokoban", "height": len(rows), "width": len(rows[0]), "rows": rows,
            "player": found["player"][0], "boxes": found["boxes"], "targets": found["targets"],
            "walls": found["walls"]}


def frozenlake_state(rows: list[str], player: list[int], slippery: bool) -> dict[str, Any]:
    """A FrozenLake state_dict from Gymnasium letter rows and the player's cell."""
    def where(letter: str) -> list[list[int]]:
        return [[r, c] for r, row in enumerate(rows) for c, ch in enumerate(row) if ch == letter]
    return {"game": "frozenlake", "height": len(rows), "width": len(rows[0]), "rows": rows,
            "player": list(player), "start": where("S")[0], "goal": where("G")[0], "holes": where("H"),
            "is_slippery": slippery}


def level_state(spec: dict[str, Any]) -> dict[str, Any]:
    """Expand one levels.yaml entry."""
    if "arms" in spec:
        return {"game": "bandit", "arms": spec["arms"], "chosen": None}
    if "player" in spec:
        return frozenlake_state(spec["rows"], spec["player"], spec.get("slippery", True))
    return sokoban_state(spec["rows"])


def gold_claim(text: str) -> dict[str, Any]:
    """``at(box,2,3)=T`` -> {canonical, kind, verdict}."""
    canonical, _, mark = text.strip().rpartition("=")
    if mark not in VERDICTS:
        raise ValueError(f"bad gold claim {text!r}")
    try:
        kind = claim_kind(canonical)
    except ValueError as error:
        raise ValueError(f"bad gold claim {text!r}") from error
    return {"canonical": canonical, "kind": kind, "verdict": VERDICTS[mark]}


def build_item(raw: dict[str, Any], levels: dict[str, Any], split: str) -> dict[str, Any]:
    """One JSONL record of the labelled set."""
    state = level_state(levels[raw["level"]])
    answer = str(raw.get("answer", ""))
    executed = raw.get("executed")
    if executed is None:
        executed = [a.strip().lower() for a in answer.split("||") if a.strip()]
    plan = raw.get("plan", "none")
    return {
        "id": raw["id"], "split": split, "game": state["game"], "coordinate_base": int(raw.get("base", 0)),
        "state_before": state,
        "state_after": level_state(levels[raw["after"]]) if raw.get("after") else None,
        "actions_executed": executed,
        "answer": answer,
        "think": raw["think"].strip(),
        "gold_claims": [gold_claim(g) for g in str(raw.get("gold") or "").split(";") if g.strip()],
        "gold_plan": None if plan == "none" else [a.strip() for a in str(plan).split(",")],
    }


def show(levels: dict[str, Any]) -> None:
    """Print each level with row/col indices, to annotate gold claims against."""
    for name, spec in levels.items():
        state = level_state(spec)
        print(f"== {name}")
        if state["game"] == "bandit":
            print("  ", state["arms"])
            continue
        print("   " + "".join(str(c) for c in range(state["width"])))
        for r, row in enumerate(state["rows"]):
            print(f"{r:2d} {row}")
        print("   ", {k: state[k] for k in state if k not in ("rows", "game", "walls")})


def main() -> None:
    """Rewrite the JSONL files (or print the levels with --show)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--show", action="store_true", help="print the levels with coordinates and exit")
    args = parser.parse_args()
    levels = yaml.safe_load((HERE / "levels.yaml").read_text())
    if args.show:
        show(levels)
        return
    for split in SPLITS:
        source = HERE / f"{split}.yaml"
        if not source.exists():
            continue
        items = [build_item(raw, levels, split) for raw in yaml.safe_load(source.read_text())]
        ids = [it["id"] for it in items]
        if len(set(ids)) != len(ids):
            raise ValueError(f"duplicate ids in {source.name}")
        with open(HERE / f"{split}.jsonl", "w") as fh:
            for item in items:
                fh.write(json.dumps(item) + "\n")
        print(f"{split}: {len(items)} items, {sum(len(i['gold_claims']) for i in items)} gold claims")


if __name__ == "__main__":
    main()
