"""The docs site: links to repository files outside it are rewritten, broken ones kept for --strict, and the
whole site builds with warnings as errors where the [docs] extra is installed."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from tests.script_modules import REPO, load_script

hook = load_script("scripts/docs_repo_links.py")


def _page(markdown: str, src_path: str = "train.md", repo_url: str | None = None) -> str:
    files = [SimpleNamespace(src_uri=p.relative_to(REPO / "docs").as_posix()) for p in (REPO / "docs").rglob("*")
             if p.is_file()]
    config = {"docs_dir": str(REPO / "docs"), "repo_url": repo_url}
    return hook.on_page_markdown(markdown, SimpleNamespace(file=SimpleNamespace(src_path=src_path)), config, files)


def test_links_to_repository_files_outside_the_site_become_repository_paths():
    assert _page("the [board](../leaderboards/leaderboard.md).") == (
        "the board (`leaderboards/leaderboard.md` in the repository).")
    assert _page("runs in [experiments/baselines/starpo/](../experiments/baselines/starpo/)") == (
        "runs in `experiments/baselines/starpo/`")
    assert _page("[board](../leaderboards/leaderboard.md#x)", repo_url="https://example.org/r/") == (
        "[board](https://example.org/r/blob/HEAD/leaderboards/leaderboard.md#x)")
    assert _page("![a](images/x.png) [t](../scripts/)", repo_url="https://example.org/r") == (
        "![a](images/x.png) [t](https://example.org/r/tree/HEAD/scripts/)")


@pytest.mark.parametrize("link", [
    "[games](envs.md)", "[one game](envs/sokoban.md#actions)", "[web](https://gymnasium.farama.org)",
    "[here](#top)", "[missing](../no_such_file.md)", "[outside](../../../etc/passwd)",
])
def test_pages_urls_anchors_and_broken_links_are_left_to_mkdocs(link):
    assert _page(f"see {link}.") == f"see {link}."


@pytest.mark.slow
def test_the_site_builds_with_warnings_as_errors(tmp_path):
    pytest.importorskip("mkdocs")
    pytest.importorskip("mkdocstrings")
    env = {**os.environ, "PYTHON": sys.executable, "SITE_DIR": str(tmp_path / "site"), "NO_MKDOCS_2_WARNING": "1"}
    subprocess.run([str(REPO / "scripts" / "build_docs.sh")], check=True, env=env, capture_output=True, timeout=600)
    assert "ragen_eval.cli.build_parser" in (tmp_path / "site" / "api" / "ragen_eval" / "index.html").read_text()
