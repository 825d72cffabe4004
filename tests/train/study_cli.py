"""The command line every study's ``analyze.py`` shares (``arm_comparison.study_main``), checked on one analysis."""

from __future__ import annotations

import json
from types import ModuleType

import pytest


def empty_study_summary(analyze: ModuleType, tmp_path, monkeypatch) -> dict:
    """Check that a missing folder is a usage error (exit 2, no summary written), then export and analyse an empty
    runs folder (exit 0): the summary it wrote."""
    monkeypatch.setattr(analyze, "HERE", tmp_path)
    with pytest.raises(SystemExit) as stopped:
        analyze.main([str(tmp_path / "missing")])
    assert stopped.value.code == 2 and not (tmp_path / "summary.json").exists()
    (tmp_path / "runs").mkdir()
    assert analyze.main([str(tmp_path / "runs"), "--export", str(tmp_path / "data")]) == 0
    return json.loads((tmp_path / "summary.json").read_text())
