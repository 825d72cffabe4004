"""Does the model copy the arm names from a Bandit prompt? Per evaluation of a Bandit preset: how many first turns
list exactly the level's arms in the thought ("The arms are A and B.", a true ``arms(...)`` claim of the harness's
checker), how many answer one of them, and the same per arm pair; and the first turns' claims by that checker, true
of checked, with and without the thoughts' lists of arms (which the checker reads since plan7.md's addition on them).

    python experiments/thinking_model/bandit_names.py runs/thinking_model/eval/g1-bandit_heldout-val [...]

Reads each run's episodes.jsonl (ragen-eval's records: the level's arms are in the first turn's ``state_before``);
prints one block per run and, with ``--json FILE``, writes the figures.
"""

from __future__ import annotations

import argparse
import json
from collections import Counter
from pathlib import Path

from ragen_eval.consistency import score_turn
from ragen_eval.jsonl_store import read_jsonl


def name_copies(episodes: Path) -> dict[str, object]:
    """Counts over the episodes' first turns: episodes, thoughts listing exactly the level's arms, answers
    that are one of them, and per arm pair (in shown order) the same three counts; and the checker's claims of those
    turns (checked, true), all of them and those other than lists of arms."""
    totals: Counter[str] = Counter()
    pairs: dict[str, Counter[str]] = {}
    for record in read_jsonl(episodes):
        turn = record["turns"][0]
        names = [arm["name"] for arm in turn["state_before"]["arms"]]
        checked = [c for c in score_turn(turn, game="bandit")["claims"] if c["verdict"] is not None]
        lists = [c for c in checked if c["canonical"].startswith("arms(")]
        unlisted = [c for c in checked if not c["canonical"].startswith("arms(")]
        row = Counter(episodes=1, thought_names_right=int(any(c["verdict"] for c in lists)),
                      answer_in_prompt=int((turn.get("answer") or "").strip() in names))
        pairs.setdefault(", ".join(names), Counter()).update(row)
        row.update(n_claims=len(checked), n_true=sum(c["verdict"] for c in checked),
                   n_claims_without_list=len(unlisted), n_true_without_list=sum(c["verdict"] for c in unlisted))
        totals.update(row)
    keys = ("episodes", "thought_names_right", "answer_in_prompt", "n_claims", "n_true", "n_claims_without_list",
            "n_true_without_list")
    return {**{key: totals[key] for key in keys},
            "by_pair": {pair: dict(counts) for pair, counts in sorted(pairs.items())}}


def main(argv: list[str] | None = None) -> int:
    """Print (and with --json write) the name-copy counts of each run directory."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", nargs="+", type=Path, help="ragen-eval run directories of Bandit presets")
    parser.add_argument("--json", type=Path, help="write the figures here")
    args = parser.parse_args(argv)
    missing = [str(run) for run in args.runs if not (run / "episodes.jsonl").is_file()]
    if missing:
        parser.error(f"no episodes.jsonl in {', '.join(missing)}")
    out = {run.name: name_copies(run / "episodes.jsonl") for run in args.runs}
    for name, figures in out.items():
        print(f"{name}: thought names right {figures['thought_names_right']} of {figures['episodes']}, "
              f"answer in the prompt {figures['answer_in_prompt']}; claims true {figures['n_true']} of "
              f"{figures['n_claims']}, without the lists of arms {figures['n_true_without_list']} of "
              f"{figures['n_claims_without_list']}")
        for pair, counts in figures["by_pair"].items():
            print(f"  {pair}: {counts['thought_names_right']} / {counts['answer_in_prompt']} of {counts['episodes']}")
    if args.json:
        args.json.write_text(json.dumps(out, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
