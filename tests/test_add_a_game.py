"""docs/add_a_game.md works as written: its corridor, copied out of the page into a package of its own,
is a complete game for the harness and the trainer through the public interfaces alone.

The package lives in a temporary folder with an installed-package record whose entry point names it
(``ragen_envs.games``), so the real ``ragen-eval`` and ``ragen-train`` commands, started as fresh
processes, find the game by name the way they would find any installed one.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from gymnasium.utils.env_checker import check_env

ROOT = Path(__file__).resolve().parent.parent
GUIDE = ROOT / "docs" / "add_a_game.md"
FILES = re.compile(r"```python (corridor_game/\S+\.py)\n(.*?)```", re.DOTALL)


def guide_files() -> dict[str, str]:
    """The corridor package's files as the guide spells them: path -> source."""
    return dict(FILES.findall(GUIDE.read_text(encoding="utf-8")))


@pytest.fixture(scope="module")
def corridor_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder holding the guide's corridor package and an install record with its entry point."""
    root = tmp_path_factory.mktemp("corridor")
    for name, source in guide_files().items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(source, encoding="utf-8")
    info = root / "corridor_game-0.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: corridor-game\nVersion: 0.0\n")
    (info / "entry_points.txt").write_text("[ragen_envs.games]\ncorridor = corridor_game\n")
    return root


def _run(cli: str, args: list[str], corridor_path: Path, timeout: float) -> subprocess.CompletedProcess[str]:
    """The console script ``cli`` (``ragen_eval.cli``, ``ragen_train.cli``) in a fresh process that sees the package."""
    command = [sys.executable, "-c", f"import sys; from {cli} import main; sys.exit(main(sys.argv[1:]))", *args]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(corridor_path), os.environ.get("PYTHONPATH", "")])}
    return subprocess.run(command, capture_output=True, text=True, env=env, timeout=timeout, cwd=corridor_path)


def test_the_guide_holds_a_game_in_two_files_of_at_most_80_lines():
    files = guide_files()
    assert sorted(files) == ["corridor_game/__init__.py", "corridor_game/game.py"]
    assert sum(len(source.splitlines()) for source in files.values()) <= 80


def test_the_corridor_is_a_gymnasium_env_and_a_text_game(corridor_path, monkeypatch):
    monkeypatch.syspath_prepend(str(corridor_path))
    import ragen_envs
    from ragen_envs.text import TextEpisode

    ragen_envs.registration._installed_games_loaded = False  # this process may have looked before the path existed
    env = ragen_envs.make("corridor")
    check_env(env.unwrapped, skip_render_check=True)
    assert isinstance(env.unwrapped, ragen_envs.TextGame)
    episode = TextEpisode("corridor", seed=0)
    assert "Corridor" in episode.messages[0]["content"] + episode.messages[-1]["content"]
    assert ragen_envs.split_seeds("test", 3, env="corridor")


def _evaluate(model: str, corridor_path: Path, out: Path) -> dict:
    done = _run("ragen_eval.cli", ["--model", model, "--env", "corridor", "--episodes", "12",
                 "--out", str(out), "--run-name", model, "--no-progress", "--json"], corridor_path, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads((out / model / "summary.json").read_text())


def test_ragen_eval_plays_the_corridor_with_the_oracle_and_the_random_player(corridor_path, tmp_path):
    oracle = _evaluate("oracle", corridor_path, tmp_path)["overall"]
    random = _evaluate("random", corridor_path, tmp_path)["overall"]
    assert oracle["episodes"] == random["episodes"] == 12
    assert oracle["success_rate"] == 1.0 and oracle["efficiency"] == 1.0  # the certificate's optimum, every level
    assert random["success_rate"] < 1.0


@pytest.mark.slow
def test_ragen_train_trains_one_step_on_the_corridor(corridor_path, tmp_path):
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    done = _run("ragen_train.cli", ["env=corridor", "total_steps=1", "env_groups=2", "group_size=2",
                 "max_new_tokens=8", "ppo_mini_batch_size=4", "micro_batch_size=2", "plot_every=0",
                 f"output_dir={tmp_path}", "run_name=corridor"], corridor_path, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    rows = [json.loads(line) for line in (tmp_path / "corridor" / "metrics.jsonl").read_text().splitlines()]
    assert [row["step"] for row in rows] == [1]
