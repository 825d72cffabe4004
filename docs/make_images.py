"""Regenerate the pictures of every preset and the preset table of docs/envs.md.

    python docs/make_images.py

Writes ``docs/images/preset_<name>.png`` (the level of ``reset(seed=0)``, as ``render_mode="rgb_array"``
draws it; Bandit with its arm names beside it), ``docs/images/frozenlake_episode.gif`` (the optimal
policy from value iteration playing one slippery lake) and rewrites the table between the
``presets`` markers in docs/envs.md, with each preset's oracle and random success on the test split
as the OpenEnv environment cards take them (``builtin_test_success`` of scripts/openenv_cards.py: the
leaderboard's row, else the runs of experiments/preset_baselines). A game whose package is missing is left
out with a note.
"""

from __future__ import annotations

import json
import pathlib
import sys

import numpy as np
from PIL import Image

import ragen_envs
from ragen_envs import PRESETS
from ragen_envs.frozen_lake import value_iteration
from ragen_envs.rendering import frame_with_text, save_gif

DOCS = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(DOCS.parent / "scripts"))
from openenv_cards import LEADERBOARD, builtin_test_success  # noqa: E402

IMAGES = DOCS / "images"
BEGIN, END = "<!-- presets:begin -->", "<!-- presets:end -->"
GAME_PAGES = {"SokobanEnv": "envs/sokoban.md", "FrozenLakeEnv": "envs/frozen_lake.md", "BanditEnv": "envs/bandit.md",
              "CountdownEnv": "envs/countdown.md", "SudokuEnv": "envs/sudoku.md", "RubiksEnv": "envs/rubiks.md"}


def preset_picture(name: str) -> np.ndarray:
    """The first level of a preset (seed 0) as an RGB image."""
    env = ragen_envs.make(name, render_mode="rgb_array")
    env.reset(seed=0)
    frame = env.render()
    if env.unwrapped.__class__.__name__ == "BanditEnv":
        frame = frame_with_text(frame, "Arms: " + ", ".join(env.unwrapped.action_names), panel_width=160)
    env.close()
    return frame


def frozen_lake_episode(seed: int) -> tuple[list[np.ndarray], bool]:
    """Frames of the value-iteration policy playing the slippery 4x4 lake of ``seed``, and whether it won."""
    env = ragen_envs.make("frozenlake", render_mode="rgb_array")
    _, info = env.reset(seed=seed)
    lake = env.unwrapped
    horizon = lake.config.horizon
    table = value_iteration(lake.level, horizon=horizon)
    cert = info["certificate"]
    header = (f"Optimal play, seed {seed}\nP(goal within {horizon} steps) = {cert['optimal_success_prob']:.3f}\n"
              f"shortest path: {cert['shortest_path_length']} moves\n")
    frames = [frame_with_text(env.render(), header + "start", panel_width=280)]
    won = False
    for steps_left in range(horizon, 0, -1):
        action = table.action(lake.position, steps_left)
        _, reward, terminated, _, step = env.step(action)
        note = f"step {horizon - steps_left + 1}: chose {lake.action_names[action]}"
        note += " and slipped" if step["slipped"] else ""
        if terminated:
            won = reward > 0
            note += "\nreached the goal" if won else "\nfell into a hole"
        frames.append(frame_with_text(env.render(), header + note, panel_width=280))
        if terminated:
            break
    env.close()
    return frames, won


def episode_gif(path: pathlib.Path, min_frames: int = 6) -> int:
    """Save the first seed's episode that wins after at least ``min_frames - 1`` steps; returns the seed."""
    for seed in range(1000):
        frames, won = frozen_lake_episode(seed)
        if won and len(frames) >= min_frames:
            save_gif(frames, path, fps=2)
            return seed
    raise RuntimeError("no seed below 1000 gave a long winning episode")


def baselines(rows: list[dict]) -> dict[str, dict[str, float]]:
    """Preset -> model (``oracle``, ``random``) -> test success, the figures of the environment cards, from the
    leaderboard's ``rows`` else experiments/preset_baselines; a preset neither has played is left out."""
    found: dict[str, dict[str, float]] = {}
    for preset in PRESETS:
        for model in ("oracle", "random"):
            figure = builtin_test_success(rows, model, preset.name)
            if figure is not None:
                found.setdefault(preset.name, {})[model] = figure["success"]
    return found


def preset_table(pictures: dict[str, str], success: dict[str, dict[str, float]]) -> str:
    """Markdown table of every preset, linking each game's page and picture, with its oracle and random success."""
    lines = ["| preset | Gymnasium id | game | config | max steps | what | oracle / random | picture |",
             "|---|---|---|---|---|---|---|---|"]
    for p in PRESETS:
        game = p.entry_point.rsplit(":", 1)[1]
        page = GAME_PAGES.get(game)
        game_cell = f"[{game.removesuffix('Env')}]({page})" if page else game
        picture = f'<img src="{pictures[p.name]}" height="64">' if p.name in pictures else "(not rendered)"
        config = f"`{json.dumps(p.config)}`" if p.config else "defaults"
        rates = success.get(p.name, {})
        baseline = " / ".join(f"{rates[m]:.2f}" if m in rates else "-" for m in ("oracle", "random"))
        lines.append(f"| `{p.name}` | `{p.env_id}` | {game_cell} | {config} | {p.max_episode_steps or '-'} | "
                     f"{p.description} | {baseline} | {picture} |")
    return "\n".join(lines)


def main() -> None:
    """Render every preset, the FrozenLake GIF, and refresh the table in docs/envs.md."""
    IMAGES.mkdir(exist_ok=True)
    pictures: dict[str, str] = {}
    for preset in PRESETS:
        try:
            frame = preset_picture(preset.name)
        except ModuleNotFoundError as err:
            print(f"skipped {preset.name}: {err}")
            continue
        path = IMAGES / f"preset_{preset.name}.png"
        Image.fromarray(frame).save(path)
        pictures[preset.name] = f"images/{path.name}"
        print(f"wrote {path.relative_to(DOCS.parent)} {frame.shape[1]}x{frame.shape[0]}")
    seed = episode_gif(IMAGES / "frozenlake_episode.gif")
    print(f"wrote docs/images/frozenlake_episode.gif (seed {seed})")
    index = DOCS / "envs.md"
    text = index.read_text()
    if BEGIN not in text or END not in text:
        raise SystemExit(f"{index} lacks the {BEGIN} / {END} markers")
    head, rest = text.split(BEGIN, 1)
    tail = rest.split(END, 1)[1]
    success = baselines(json.loads(LEADERBOARD.read_text())["rows"])
    index.write_text(f"{head}{BEGIN}\n{preset_table(pictures, success)}\n{END}{tail}")
    print(f"updated the preset table in {index.relative_to(DOCS.parent)}")


if __name__ == "__main__":
    main()
