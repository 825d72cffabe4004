"""How many distinct levels each preset's generator makes, and what the content splits cost.

    python scripts/level_space.py                 # writes docs/envs/level_space.json and its table
    python scripts/level_space.py --golden        # also rewrites tests/envs/data/splits_golden.json

Per preset it plays the first N seeds of the train range (N per preset below, fewer where generation
is slow) and reports the distinct levels among them, how many appeared once (f1) and twice (f2), and
Chao1's estimate of the distinct levels the generator can make, S + f1^2 / (2 f2): a lower-bound
estimator, exact once every level has been seen twice or more. Where the space can be enumerated
it also gives the exact count: Bandit (name sets x orders), lakes up to 4x4 (every hole pattern
and start/goal pair, kept when a hole-free path joins them), Countdown (every multiset of numbers
with every target some expression of them reaches) and the 2x2 cube (the states at each distance,
enumerated by split up to 4 turns). It times ``split_seeds`` for 512 test
seeds, and counts how many of the first 512 seeds of the test *range* start a level also started by
one of the first 20,000 seeds of the train range: the leak that seed ranges alone allowed.
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import time
from collections import Counter
from pathlib import Path

import numpy as np

from ragen_envs import PRESETS
from ragen_envs.bandit import BanditConfig
from ragen_envs.splits import SPLIT_OFFSETS, LevelSplitter, level_split

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "docs" / "envs" / "level_space.json"
DOC = ROOT / "docs" / "envs.md"
TABLE_BEGIN, TABLE_END = "<!-- level-space:begin -->", "<!-- level-space:end -->"
GOLDEN = ROOT / "tests" / "envs" / "data" / "splits_golden.json"
#: Train-range seeds sampled per preset; the slow generators get fewer (about 15 s each on an idle core).
SAMPLES = {"larger_sokoban": 10_000, "larger_sokoban_hard": 5_000, "boxoban": 1_000, "boxoban_hard": 500,
           "frozenlake_8x8": 20_000, "sudoku_9x9": 1_000}
DEFAULT_SAMPLES = 50_000
OLD_TRAIN_WINDOW = 20_000
#: Fewer levels seen exactly twice than this leave Chao1's estimate loose; the table says so.
ROUGH_BELOW = 100
TEST_SEEDS = 512


def chao1(counts: Counter) -> float:
    """Chao1 estimate of the number of distinct levels from how often each sampled level appeared."""
    f1 = sum(1 for c in counts.values() if c == 1)
    f2 = sum(1 for c in counts.values() if c == 2)
    extra = f1 * f1 / (2 * f2) if f2 else f1 * (f1 - 1) / 2
    return len(counts) + extra


def lake_levels_exact(height: int, width: int) -> dict[str, int]:
    """Every lake with a hole-free start-to-goal path, counted by split (min_path_length 1).

    A lake is a frozen-cell mask with the start and goal cells frozen; for each start the cells it
    reaches are grown over all 2^(h*w) masks at once, then each goal cell is checked.
    """
    n = height * width
    masks = np.arange(1 << n, dtype=np.int64)
    cells = [(r, c) for r in range(height) for c in range(width)]
    by_split: Counter = Counter()
    for s in range(n):
        has_s = (masks >> s) & 1 == 1
        reach = np.where(has_s, 1 << s, 0).astype(np.int64)
        while True:
            grown = reach.copy()
            for i, (r, c) in enumerate(cells):
                on = (reach >> i) & 1 == 1
                for dr, dc in ((0, 1), (0, -1), (1, 0), (-1, 0)):
                    rr, cc = r + dr, c + dc
                    if 0 <= rr < height and 0 <= cc < width:
                        grown |= np.where(on, 1 << (rr * width + cc), 0)
            grown &= masks
            if np.array_equal(grown, reach):
                break
            reach = grown
        for g in range(n):
            if g == s:
                continue
            for mask in masks[has_s & ((reach >> g) & 1 == 1)].tolist():
                text = ["F" if (mask >> i) & 1 else "H" for i in range(n)]
                text[s], text[g] = "S", "G"
                rows = "\n".join("".join(text[r * width:(r + 1) * width]) for r in range(height))
                by_split[level_split(b"frozenlake\n" + rows.encode())] += 1
    return {"total": sum(by_split.values()), **{k: by_split[k] for k in SPLIT_OFFSETS}}


def bandit_levels_exact(config: BanditConfig) -> dict[str, object]:
    """Name sets (the unit a split holds out) and shown levels (name sets times arm orders)."""
    from ragen_envs.bandit import NAME_POOLS

    orders = math.factorial(config.num_arms) if config.shuffle_arms else 1
    sets = config.name_combinations
    out: dict[str, object] = {"total": sets * orders, "name_sets": sets}
    if sets > 1 and config.num_arms == 2:
        pool = NAME_POOLS[config.name_set]
        splits = Counter(level_split(f"bandit\nlow={lo}\nhigh={hi}".encode())
                         for lo in pool.low_risk for hi in pool.high_risk)
        out["name_sets_by_split"] = {k: splits[k] for k in SPLIT_OFFSETS}
    else:
        out["name_sets_by_split"] = "shared by every split"
    return out


def _split_counts(keys) -> dict[str, int]:
    by_split = Counter(level_split(key) for key in keys)
    return {"total": sum(by_split.values()), **{k: by_split[k] for k in SPLIT_OFFSETS}}


def countdown_levels_exact(config: dict) -> dict[str, object]:
    """Every (numbers, target) the generator can draw: each multiset of ``count`` numbers with each whole
    target in 1..``max_target`` that some expression of them reaches, keyed by the env itself."""
    from ragen_envs.countdown.env import CountdownEnv, CountdownLevel
    from ragen_envs.countdown.expressions import evaluate, templates

    env = CountdownEnv(config=config)
    shapes = templates(env.config.count)
    keys = []
    for numbers in itertools.combinations_with_replacement(range(1, env.config.max_number + 1), env.config.count):
        reached: dict[int, int] = {}
        for i, shape in enumerate(shapes):
            value = evaluate(shape, numbers)
            if value is not None and value.denominator == 1 and 1 <= value <= env.config.max_target:
                reached.setdefault(int(value), i)
        for target, solution in reached.items():
            env.reset(options={"level": CountdownLevel(numbers, target, solution)})
            keys.append(env.level_key())
    return {**_split_counts(keys), "how": "enumerated"}


def cube_levels_exact(config: dict, split_up_to: int = 4) -> dict[str, object]:
    """The cube states at the preset's distances (every one is a level: a random walk of that many turns can end
    there). Up to ``split_up_to`` turns the states are enumerated and split; beyond, counted by distance only."""
    from ragen_envs.rubiks import cube
    from ragen_envs.rubiks.env import CubeLevel, RubiksEnv

    env = RubiksEnv(config=config)
    low, high = env.config.min_distance, env.config.max_distance
    total = sum(cube.counts(high)[low:high + 1])
    if high > split_up_to:
        return {"total": total, "how": f"states {low} to {high} turns from solved, by distance"}
    layers, seen = [{cube.SOLVED}], {cube.SOLVED}
    for _ in range(high):
        layers.append({s for state in layers[-1] for m in range(len(cube.MOVES))
                       if (s := cube.turn(state, m)) not in seen})
        seen |= layers[-1]
    keys = []
    for distance in range(low, high + 1):
        for state in layers[distance]:
            env.reset(options={"level": CubeLevel(state, distance)})
            keys.append(env.level_key())
    assert len(keys) == total
    return {**_split_counts(keys), "how": "enumerated"}


def measure(preset_name: str) -> dict[str, object]:
    """Sample the preset's levels, estimate its level space and time its test split."""
    preset = next(p for p in PRESETS if p.name == preset_name)
    n = SAMPLES.get(preset_name, DEFAULT_SAMPLES)
    splitter = LevelSplitter(preset_name)
    start = time.perf_counter()
    keys = [splitter.level_key(s) for s in range(n)]
    rate = n / (time.perf_counter() - start)
    counts = Counter(keys)
    start = time.perf_counter()
    test_seeds = splitter.seeds("test", TEST_SEEDS)
    split_seconds = time.perf_counter() - start
    test_keys = {splitter.level_key(s) for s in test_seeds}
    train_keys = {k for k in keys if level_split(k) in ("train", None)}
    old_window = set(keys[:OLD_TRAIN_WINDOW])
    old_test = [splitter.level_key(SPLIT_OFFSETS["test"] + i) for i in range(TEST_SEEDS)]
    result: dict[str, object] = {
        "description": preset.description,
        "sampled_seeds": n,
        "distinct_in_sample": len(counts),
        "seen_once": sum(1 for c in counts.values() if c == 1),
        "seen_twice": sum(1 for c in counts.values() if c == 2),
        "chao1_estimate": round(chao1(counts)),
        "levels_per_second": round(rate, 1),
        "split_seeds_test_512_seconds": round(split_seconds, 2),
        "test_seeds_walked_for_512": test_seeds[-1] - SPLIT_OFFSETS["test"] + 1,
        "old_overlap_512_test_range_vs_20k_train_range": sum(k in old_window for k in old_test),
        "overlap_512_test_split_vs_sampled_train_split": len(test_keys & train_keys) if None not in test_keys else None,
    }
    if preset.entry_point.endswith("BanditEnv"):
        result["exact"] = bandit_levels_exact(BanditConfig.from_dict(preset.config))
    elif preset.entry_point.endswith("FrozenLakeEnv") and preset.config.get("height", 4) * preset.config.get("width", 4) <= 16:
        result["exact"] = lake_levels_exact(preset.config.get("height", 4), preset.config.get("width", 4))
    elif preset.entry_point.endswith("CountdownEnv"):
        result["exact"] = countdown_levels_exact(preset.config)
    elif preset.entry_point.endswith("RubiksEnv"):
        result["exact"] = cube_levels_exact(preset.config)
    return result


def golden() -> dict[str, dict[str, list[int]]]:
    """The first seeds of every split of every preset, pinned by tests/envs/test_splits.py."""
    return {p.name: {split: LevelSplitter(p.name).seeds(split, 4) for split in SPLIT_OFFSETS} for p in PRESETS}


def table(report: dict[str, dict]) -> str:
    """The Markdown table of docs/envs.md's splits section."""
    lines = ["| preset | distinct levels | how counted | test-range seeds whose level a train seed also started "
             "(old ranges) | now | `split_seeds` for 512 test seeds |", "|---|---|---|---|---|---|"]
    for name, r in report.items():
        exact = r.get("exact")
        if exact and "name_sets" in exact:
            by = exact["name_sets_by_split"]
            split_note = by if isinstance(by, str) else "/".join(str(by[k]) for k in SPLIT_OFFSETS) + " train/val/test"
            count, how = f"{exact['total']} ({exact['name_sets']} name sets)", f"exact; name sets {split_note}"
        elif exact:
            count = f"{exact['total']:,}"
            how = f"exact ({exact.get('how', 'enumerated')})"
            if "test" in exact:
                how += "; " + "/".join(f"{exact[k]:,}" for k in SPLIT_OFFSETS) + " train/val/test"
        elif r["seen_twice"] == 0:  # Chao1 rests on the levels seen twice; with none it says nothing
            count = f"> {r['distinct_in_sample']:,}"
            how = f"no level repeated among {r['sampled_seeds']:,} seeds"
        else:
            count = f"~{r['chao1_estimate']:,}"
            how = (f"Chao1 from {r['sampled_seeds']:,} seeds: {r['distinct_in_sample']:,} distinct, "
                   f"{r['seen_once']:,} seen once")
            if r["seen_twice"] < ROUGH_BELOW:
                how += f", only {r['seen_twice']} twice (rough)"
        now = "shared (one level)" if r["overlap_512_test_split_vs_sampled_train_split"] is None else \
            f"{r['overlap_512_test_split_vs_sampled_train_split']} of 512"
        lines.append(f"| `{name}` | {count} | {how} | {r['old_overlap_512_test_range_vs_20k_train_range']} of 512 | "
                     f"{now} | {r['split_seeds_test_512_seconds']} s |")
    return "\n".join(lines)


def write_table(report: dict[str, dict]) -> None:
    """Replace the table between the markers in docs/envs.md."""
    text = DOC.read_text()
    head, rest = text.split(TABLE_BEGIN)
    _, tail = rest.split(TABLE_END)
    DOC.write_text(f"{head}{TABLE_BEGIN}\n{table(report)}\n{TABLE_END}{tail}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--golden", action="store_true", help="also rewrite tests/envs/data/splits_golden.json")
    parser.add_argument("--only", default=None, help="comma-separated presets to measure (default: all)")
    args = parser.parse_args()
    if args.golden:
        GOLDEN.write_text(json.dumps(golden(), indent=1) + "\n")
    names = args.only.split(",") if args.only else [p.name for p in PRESETS]
    report = json.loads(OUT.read_text()) if OUT.exists() and args.only else {}
    for name in names:
        report[name] = measure(name)
        print(name, json.dumps(report[name]), flush=True)
        report = {p.name: report[p.name] for p in PRESETS if p.name in report}
        OUT.write_text(json.dumps(report, indent=1) + "\n")  # after each preset: a long run keeps its part
    write_table(report)


if __name__ == "__main__":
    main()
