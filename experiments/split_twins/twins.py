"""Are Sokoban test levels shifted or wall-framed copies of train levels? (exploratory)

A level's split is a hash of its exact grid (``level_key()``), so the same puzzle moved inside the grid, or framed by
more wall rows and columns, has another key and may land in another split. Per preset: the distinct levels of the
first TEST test seeds, and how many of them equal, once cropped to their non-wall cells plus a one-cell border, a
train level of the first TRAIN train seeds whose exact grid differs (a shifted or framed twin), also with the test
levels at a larger grid against the preset's own train levels; and how many levels a key of the cropped grid would
move to another split.

    python experiments/split_twins/twins.py --out experiments/split_twins/twins.json
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from ragen_envs.splits import LevelSplitter, level_split


def cropped(grid: str) -> str:
    """The grid cut to the bounding box of its non-wall cells plus one cell of wall around it."""
    rows = grid.split("\n")
    inside = [(r, c) for r, row in enumerate(rows) for c, ch in enumerate(row) if ch != "#"]
    top, bottom = min(r for r, _ in inside) - 1, max(r for r, _ in inside) + 1
    left, right = min(c for _, c in inside) - 1, max(c for _, c in inside) + 1
    return "\n".join(row[left:right + 1] for row in rows[top:bottom + 1])


def grid_of(splitter: LevelSplitter, seed: int) -> str:
    """The seed's level as its grid text (the level key without the game's name line)."""
    return splitter.level_key(seed).decode().split("\n", 1)[1]


def twins(preset: str, n_test: int, n_train: int, test_config: dict | None = None) -> dict[str, object]:
    """Counts for one preset: distinct test levels, those with a shifted or framed twin among the train levels,
    and the train seeds that start such a twin; one example pair."""
    test_splitter = LevelSplitter(preset, test_config)
    test: dict[str, str] = {}
    for seed in test_splitter.seeds("test", n_test):
        grid = grid_of(test_splitter, seed)
        test.setdefault(cropped(grid), grid)
    train_splitter = LevelSplitter(preset)
    hit: set[str] = set()
    train_seeds, example = 0, None
    for seed in train_splitter.seeds("train", n_train):
        grid = grid_of(train_splitter, seed)
        key = cropped(grid)
        if key in test and test[key] != grid:
            hit.add(key)
            train_seeds += 1
            example = example or {"train_seed": seed, "train": grid, "test": test[key]}
    return {"preset": preset, "test_config": test_config or {}, "test_seeds": n_test, "train_seeds": n_train,
            "distinct_test_levels": len(test), "test_levels_with_a_twin": len(hit),
            "train_seeds_starting_a_twin": train_seeds, "example": example}


def crop_moves(preset: str, n_seeds: int) -> dict[str, object]:
    """Of the levels of seeds ``0..n_seeds-1``: how many have a crop other than their grid, and how many of those a
    key of the cropped grid would hash to another split."""
    splitter = LevelSplitter(preset)
    differ = moved = 0
    for seed in range(n_seeds):
        key = splitter.level_key(seed)
        name, grid = key.decode().split("\n", 1)
        crop = cropped(grid)
        if crop != grid:
            differ += 1
            moved += level_split(f"{name}\n{crop}".encode()) != level_split(key)
    return {"preset": preset, "seeds": n_seeds, "crop_differs": differ, "crop_key_moves_split": moved}


def main(argv: list[str] | None = None) -> int:
    """Print and write the counts for the Sokoban presets."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True, help="JSON file for the counts")
    parser.add_argument("--test", type=int, default=300, help="test seeds a preset (default 300)")
    parser.add_argument("--train", type=int, default=20_000, help="train seeds a preset (default 20,000)")
    args = parser.parse_args(argv)
    runs = [("simple_sokoban", None), ("simple_sokoban_hard", None), ("larger_sokoban", None),
            ("simple_sokoban", {"height": 7, "width": 7})]
    rows = []
    for preset, config in runs:
        row = twins(preset, args.test, args.train, config)
        rows.append(row)
        print(f"{preset} {config or ''}: {row['test_levels_with_a_twin']} of {row['distinct_test_levels']} distinct "
              f"test levels have a shifted or framed twin among {args.train:,} train seeds "
              f"({row['train_seeds_starting_a_twin']} seeds)", flush=True)
    moves = crop_moves("simple_sokoban", 3_000)
    print(f"simple_sokoban, seeds 0-2,999: {moves['crop_differs']} crops differ from their grid, "
          f"{moves['crop_key_moves_split']} would change split", flush=True)
    args.out.write_text(json.dumps({"twins": rows, "crop_moves": moves}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
