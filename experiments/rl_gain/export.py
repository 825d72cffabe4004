"""Compact, committable outputs of the RL-gain study (``experiments/rl_gain/run.sh``), and its table.

Per game: ``<game>.csv`` pairs every test level's outcome before RL (the SFT checkpoint) and after
(StarPO-S's last checkpoint), from which :func:`ragen_eval.metrics.paired_comparison` is recomputed;
``<game>-starpo-s/`` is the training run's compact copy (config and per-step metrics, as
``experiments/baselines/collapse_summary.py --export`` writes it). ``results.json`` holds the table.

    python experiments/rl_gain/export.py runs/rl_gain --out experiments/rl_gain/data    # from the runs
    python experiments/rl_gain/export.py runs/rl_gain/replication --out experiments/rl_gain/data/replication
    python experiments/rl_gain/export.py --out experiments/rl_gain/data                 # from the CSVs
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "baselines"))
from collapse_summary import export as export_run  # noqa: E402

from ragen_eval.metrics import paired_comparison  # noqa: E402
from ragen_eval.run_dir import load_run  # noqa: E402

COLUMNS = ("env", "seed", "sft_success", "rl_success", "sft_reward", "rl_reward")


def write_pairs(runs: Path, game: str, out: Path) -> None:
    """``out/<game>.csv`` from the two test runs, and the training run's compact copy."""
    before = {int(r["seed"]): r for r in load_run(runs / f"{game}-sft-test")[1]}
    after = {int(r["seed"]): r for r in load_run(runs / f"{game}-rl-test")[1]}
    with open(out / f"{game}.csv", "w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(COLUMNS)
        for seed in sorted(before.keys() & after.keys()):
            a, b = before[seed], after[seed]
            writer.writerow([game, seed, int(bool(a["success"])), int(bool(b["success"])),
                             round(float(a["total_reward"]), 6), round(float(b["total_reward"]), 6)])
    if not (runs / f"{game}-starpo-s").is_symlink():  # replicate.sh links the run the first export copied
        export_run(runs / f"{game}-starpo-s", out)


def table(out: Path) -> list[dict]:
    """Success before/after, discordant pairs and McNemar p per game, recomputed from the CSVs."""
    rows = []
    for path in sorted(out.glob("*.csv")):
        with open(path, newline="") as handle:
            pairs = list(csv.DictReader(handle))
        side = {k: [{"env": p["env"], "seed": p["seed"], "success": p[f"{k}_success"] == "1",
                     "total_reward": float(p[f"{k}_reward"])} for p in pairs] for k in ("sft", "rl")}
        result = paired_comparison(side["sft"], side["rl"])["overall"]
        rows.append({"game": path.stem, "levels": result["pairs"], "sft_success": result["success_a"],
                     "rl_success": result["success_b"], "sft_only": result["mcnemar"]["a_only"],
                     "rl_only": result["mcnemar"]["b_only"], "mcnemar_p": result["mcnemar"]["p_value"]})
    return rows


def main(argv: list[str] | None = None) -> int:
    """Export the runs found under RUNS (if given), then print the table and write results.json."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("runs", nargs="?", type=Path, help="the run.sh output folder (omit to read the CSVs)")
    parser.add_argument("--out", type=Path, required=True, help="folder of the compact outputs")
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    if args.runs is not None:
        games = sorted(p.name.removesuffix("-rl-test") for p in args.runs.glob("*-rl-test"))
        if not games:
            parser.error(f"{args.runs} holds no <game>-rl-test run; run experiments/rl_gain/run.sh first")
        for game in games:
            write_pairs(args.runs, game, args.out)
    rows = table(args.out)
    (args.out / "results.json").write_text(json.dumps(rows, indent=2) + "\n")
    print("| game | test levels | SFT success | + StarPO-S | SFT only / RL only | McNemar p |")
    print("|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['game']} | {r['levels']} | {r['sft_success']:.3f} | {r['rl_success']:.3f} | "
              f"{r['sft_only']}/{r['rl_only']} | {r['mcnemar_p']:.2g} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
