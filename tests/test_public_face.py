"""The harness and the trainer use the games only through their public face.

Every module of ``ragen_eval``, ``ragen_train`` and ``ragen_verifiers`` is parsed (not imported) and
each import statement, at module level or inside a function, is checked: importing a game's package or any of
its modules (``ragen_envs.sokoban``, ``ragen_envs.frozen_lake.planning``, ...) is a failure. What
they may use instead is ``ragen_envs``, ``ragen_envs.text``, registration, splits, the certificate
and the ``TextGame`` interface, so that a new game needs no change in either package.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import ragen_envs

ROOT = Path(__file__).resolve().parent.parent
GAME_PACKAGES = ("sokoban", "frozen_lake", "bandit", "countdown", "sudoku", "rubiks")
PRIVATE = tuple(f"ragen_envs.{game}" for game in GAME_PACKAGES)


def private_imports(source: str) -> list[tuple[int, str]]:
    """(line, imported name) of every import of a game-private module in ``source``."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            # "from ragen_envs import sokoban" names the game package as an attribute
            names = [node.module] if _is_private(node.module) else [f"{node.module}.{a.name}" for a in node.names]
        else:
            continue
        found += [(node.lineno, name) for name in names if _is_private(name)]
    return sorted(found)


def _is_private(module: str) -> bool:
    return module in PRIVATE or module.startswith(tuple(p + "." for p in PRIVATE))


def offenders(package: str) -> list[str]:
    """``path:line name`` of every private import in the package's modules."""
    out = []
    for path in sorted((ROOT / package).rglob("*.py")):
        for line, name in private_imports(path.read_text(encoding="utf-8")):
            out.append(f"{path.relative_to(ROOT)}:{line} {name}")
    return out


def test_the_game_packages_named_here_are_the_real_ones():
    # Guards the check itself: if a game package were renamed, the walk below would pass vacuously.
    for game in GAME_PACKAGES:
        assert (Path(ragen_envs.__file__).parent / game / "__init__.py").is_file()


def test_the_walk_finds_every_spelling_of_a_private_import():
    source = """
import ragen_envs.sokoban
from ragen_envs.frozen_lake.planning import plan_turn
from ragen_envs import bandit
def lazy():
    from ragen_envs.sokoban.text import RAGEN_SYMBOLS
from ragen_envs import make, text
from ragen_envs.text import TextEpisode
from ragen_envs.splits import split_seeds
import ragen_envs.sokobanish
"""
    assert [line for line, _ in private_imports(source)] == [2, 3, 4, 6]


@pytest.mark.parametrize("package", ["ragen_eval", "ragen_train", "ragen_verifiers"])
def test_no_module_imports_a_game_private_module(package):
    assert offenders(package) == []
