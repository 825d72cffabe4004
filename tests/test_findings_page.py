"""docs/findings.md is what scripts/findings.py writes from the committed finding.json files, and each names a
verdict, an existing figure and record."""

from __future__ import annotations

import json

import pytest

from tests.script_modules import load_script

findings = load_script("scripts/findings.py")


def test_the_committed_page_is_the_generated_one():
    page = findings.ROOT / "docs" / "findings.md"
    assert page.read_text() == findings.render(findings.load_findings()), "rerun python scripts/findings.py"


def test_a_finding_without_a_known_verdict_or_figure_is_refused(tmp_path):
    study = tmp_path / "experiments" / "s"
    study.mkdir(parents=True)
    (study / "plot.png").write_bytes(b"png")
    (study / "results.md").write_text("r")
    entry = {"order": 1, "finding": "f", "claim": "c", "setup": "s", "result": "r", "test": "t",
             "verdict": "reproduced", "figure": "experiments/s/plot.png", "record": "experiments/s/results.md"}
    (study / "finding.json").write_text(json.dumps(entry))
    assert [f["finding"] for f in findings.load_findings(tmp_path)] == ["f"]
    (study / "finding.json").write_text(json.dumps({**entry, "verdict": "sort of"}))
    with pytest.raises(ValueError, match="verdict must be one of"):
        findings.load_findings(tmp_path)
    (study / "finding.json").write_text(json.dumps({**entry, "figure": "experiments/s/none.png"}))
    with pytest.raises(ValueError, match="does not exist"):
        findings.load_findings(tmp_path)
