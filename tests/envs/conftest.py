"""Fixtures shared by the env tests."""

from __future__ import annotations

import pytest

from ragen_envs.sokoban import level_files


@pytest.fixture
def fresh_level_sets(monkeypatch, tmp_path):
    """Level sets load from disk (none kept from another test), and user-cache writes land in tmp_path/user_cache."""
    monkeypatch.setattr(level_files, "_loaded", {})
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "user_cache"))
