"""docs/envs.md's preset table is what docs/make_images.py writes from the presets and the leaderboard."""

from __future__ import annotations

import json

import pytest

from ragen_envs import PRESETS
from tests.script_modules import REPO, load_script

pytest.importorskip("PIL")  # docs/make_images.py draws with pillow, which the bare install lacks
make_images = load_script("docs/make_images.py")


def test_the_committed_preset_table_is_the_generated_one():
    pictures = {p.name: f"images/preset_{p.name}.png" for p in PRESETS}
    success = make_images.baselines(json.loads(make_images.LEADERBOARD.read_text()))
    table = make_images.preset_table(pictures, success)
    assert f"{make_images.BEGIN}\n{table}\n{make_images.END}" in (REPO / "docs" / "envs.md").read_text()


def test_baselines_read_the_builtin_test_rows_only():
    board = {"rows": [
        {"model": "oracle", "backend": "builtin", "split": "test", "per_env": {"countdown": 1.0}},
        {"model": "random", "backend": "builtin", "split": "test", "per_env": {"countdown": 0.07, "sudoku": 0.0}},
        {"model": "random", "backend": "builtin", "split": "val", "per_env": {"countdown": 0.5}},
        {"model": "default", "backend": "hf", "split": "test", "per_env": {"countdown": 0.3}},
    ]}
    assert make_images.baselines(board) == {"countdown": {"oracle": 1.0, "random": 0.07}, "sudoku": {"random": 0.0}}
    rows = make_images.preset_table({}, make_images.baselines(board)).splitlines()
    assert "| 1.00 / 0.07 | (not rendered) |" in next(r for r in rows if r.startswith("| `countdown`"))
    assert "| - / 0.00 |" in next(r for r in rows if r.startswith("| `sudoku`"))
