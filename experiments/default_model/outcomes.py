"""Per-level outcomes of a ragen-eval run as a compact CSV, and paired tests between two such CSVs
(the same table as ``ragen-eval compare``).

The default model's candidates are compared level by level (McNemar on success, paired bootstrap on
reward: ``ragen_eval.metrics.paired_comparison``, what ``ragen-eval compare`` runs on run
directories). Run directories are not committed; these CSVs are, so the tests can be recomputed.

    python experiments/default_model/outcomes.py export runs/default_model_v7/eval/model --out v7_test.csv
    python experiments/default_model/outcomes.py compare v6_test.csv v7_test.csv
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
from pathlib import Path

from ragen_eval.metrics import paired_comparison
from ragen_eval.results_table import comparison_table
from ragen_eval.run_dir import load_run

COLUMNS = ("env", "seed", "success", "total_reward")


def export(run: Path, out: Path) -> int:
    """Write one row per episode of ``run``; returns the row count."""
    _, records = load_run(run)
    # in the run's own order: the overall bootstrap resamples in that order, as `ragen-eval compare` does
    rows = [{"env": r["env"], "seed": int(r["seed"]), "success": int(bool(r.get("success"))),
             "total_reward": float(r.get("total_reward", 0.0))} for r in records]
    with open(out, "w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=COLUMNS)
        writer.writeheader()
        writer.writerows(rows)
    return len(rows)


def read(path: Path) -> list[dict]:
    """The records of an exported CSV, in the shape ``paired_comparison`` takes."""
    with open(path) as handle:
        return [{"env": r["env"], "seed": int(r["seed"]), "success": r["success"] == "1",
                 "total_reward": float(r["total_reward"])} for r in csv.DictReader(handle)]


def main(argv: list[str] | None = None) -> int:
    """``export RUN --out CSV`` or ``compare A.csv B.csv [--json]``."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    exporting = commands.add_parser("export", help="a run directory's per-level outcomes to CSV")
    exporting.add_argument("run", type=Path)
    exporting.add_argument("--out", type=Path, required=True)
    comparing = commands.add_parser("compare", help="paired tests of B against A on the levels both hold")
    comparing.add_argument("a", type=Path)
    comparing.add_argument("b", type=Path)
    comparing.add_argument("--json", action="store_true", help="print the full result as JSON")
    args = parser.parse_args(argv)
    if args.command == "export":
        if not (args.run / "episodes.jsonl").is_file():
            parser.error(f"{args.run} is not a ragen-eval run directory (no episodes.jsonl)")
        print(f"wrote {export(args.run, args.out)} levels to {args.out}")
        return 0
    for path in (args.a, args.b):
        if not path.is_file():
            parser.error(f"{path} does not exist")
    result = paired_comparison(read(args.a), read(args.b))
    if args.json:
        print(json.dumps(result, indent=2))
        return 0
    print(f"A = {args.a}\nB = {args.b}\n")
    print(comparison_table(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
