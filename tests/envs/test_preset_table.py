"""docs/envs.md's preset table is what docs/make_images.py writes from the presets, the leaderboard and the
preset runs (experiments/preset_baselines), and shows the figures those files hold."""

from __future__ import annotations

import json

import pytest

from ragen_envs import PRESETS
from tests.script_modules import REPO, load_script

pytest.importorskip("PIL")  # docs/make_images.py draws with pillow, which the bare install lacks
make_images = load_script("docs/make_images.py")
PRESET_RUNS = REPO / "experiments" / "preset_baselines"


def committed_table() -> dict[str, str]:
    """Preset -> its ``oracle / random`` cell, as docs/envs.md shows it."""
    text = (REPO / "docs" / "envs.md").read_text()
    body = text.split(make_images.BEGIN, 1)[1].split(make_images.END, 1)[0].strip().splitlines()[2:]
    cells = [[cell.strip() for cell in line.strip("|").split("|")] for line in body]
    return {row[0].strip("`"): row[6] for row in cells}


def test_the_committed_preset_table_is_the_generated_one():
    pictures = {p.name: f"images/preset_{p.name}.png" for p in PRESETS}
    success = make_images.baselines(json.loads(make_images.LEADERBOARD.read_text())["rows"])
    table = make_images.preset_table(pictures, success)
    assert f"{make_images.BEGIN}\n{table}\n{make_images.END}" in (REPO / "docs" / "envs.md").read_text()


def test_the_table_shows_the_leaderboard_else_the_preset_runs():
    # Read the sources afresh: the built-in agents' test rows of the leaderboard, and the preset runs' win counts.
    board = json.loads((REPO / "leaderboards" / "leaderboard.json").read_text())["rows"]
    expected: dict[str, dict[str, float]] = {}
    for model in ("oracle", "random"):
        summary = json.loads((PRESET_RUNS / f"{model}__builtin__test__presets" / "summary.json").read_text())
        for env, played in summary["per_env"].items():
            expected.setdefault(env, {})[model] = played["successes"] / played["episodes"]
    on_board = set()
    for row in board:
        if row["backend"] == "builtin" and row["split"] == "test" and row["model"] in ("oracle", "random"):
            for env, success in row["per_env"].items():
                expected.setdefault(env, {})[row["model"]] = success
                on_board.add(env)
    shown = committed_table()
    assert list(shown) == [p.name for p in PRESETS]
    for name, cell in shown.items():
        rates = expected.get(name, {})
        assert cell == " / ".join(f"{rates[m]:.2f}" if m in rates else "-" for m in ("oracle", "random")), name
    # Presets only the preset runs cover show their figures (the README's table: 1.000 / 0.141 and 0.168 / 0.066).
    only_runs = set(expected) - on_board
    assert {"simple_sokoban", "frozenlake_8x8", "bandit_reversed"} <= only_runs
    assert shown["simple_sokoban"] == "1.00 / 0.14" and shown["frozenlake_8x8"] == "0.17 / 0.07"
    # A dash only where neither source has played the preset: today, none.
    assert [name for name, cell in shown.items() if "-" in cell] == []


def test_baselines_take_builtin_test_rows_before_the_preset_runs():
    rows = [
        {"model": "oracle", "backend": "builtin", "split": "test", "per_env": {"countdown": 1.0},
         "per_env_ci95": {"countdown": [0.98, 1.0]}},
        {"model": "random", "backend": "builtin", "split": "test", "per_env": {"countdown": 0.07, "sudoku": 0.0,
                                                                               "simple_sokoban": 0.5},
         "per_env_ci95": {"countdown": [0.04, 0.1], "sudoku": [0.0, 0.02], "simple_sokoban": [0.4, 0.6]}},
        {"model": "random", "backend": "builtin", "split": "val", "per_env": {"countdown": 0.5},
         "per_env_ci95": {"countdown": [0.4, 0.6]}},
        {"model": "oracle", "backend": "openai", "split": "test", "per_env": {"countdown": 0.3, "sudoku": 0.3},
         "per_env_ci95": {"countdown": [0.2, 0.4], "sudoku": [0.2, 0.4]}},
    ]
    found = make_images.baselines(rows)
    assert found["countdown"] == {"oracle": 1.0, "random": 0.07}
    assert found["sudoku"] == {"random": 0.0}  # neither a builtin oracle row nor a preset run: no oracle figure
    # A leaderboard row wins over the preset run; the preset runs fill what the rows leave out.
    assert found["simple_sokoban"] == {"oracle": 1.0, "random": 0.5}
    assert found["simple_sokoban_hard"]["random"] == 0.0 and found["frozenlake_det"]["oracle"] == 1.0
    assert "rubiks_2x2" not in found
    table = make_images.preset_table({}, found).splitlines()
    assert "| 1.00 / 0.07 | (not rendered) |" in next(r for r in table if r.startswith("| `countdown`"))
    assert "| - / 0.00 |" in next(r for r in table if r.startswith("| `sudoku`"))
    assert "| - / - |" in next(r for r in table if r.startswith("| `rubiks_2x2`"))
