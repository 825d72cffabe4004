"""Reference pages say what things are, not when or how significantly they were measured: no dates, p-values
or commit hashes (those live in the research record, experiments/, and in commit bodies)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
REFERENCE = ("README.md", "docs/envs.md", "docs/protocol.md", "docs/eval.md", "docs/backends.md", "docs/train.md",
             "docs/integrations.md", "docs/add_a_game.md", "docs/interfaces.md", "docs/install.md", "docs/findings.md",
             "docs/index.md", "docs/consistency.md",
             *sorted(str(p.relative_to(ROOT)) for p in (ROOT / "docs" / "envs").glob("*.md")),
             *sorted(str(p.relative_to(ROOT)) for p in (ROOT / "docs" / "api").glob("*.md")))
#: Pages of measured figures, each written by its benchmark script (which says when and where it ran).
RESULTS = ("docs/benchmarks.md", *sorted(str(p.relative_to(ROOT)) for p in (ROOT / "docs" / "benchmarks").glob("*.md")))
HISTORY = {
    "a date": re.compile(r"\b20\d\d-\d\d-\d\d\b"),
    "a p-value": re.compile(r"(?<![\w-])p ?[=<] ?(0?\.\d|\d(\.\d+)?e-\d)"),
    "a commit hash": re.compile(r"\b(commit|at|since|in) `?[0-9a-f]{7,40}\b"),
}


@pytest.mark.parametrize("page", REFERENCE)
def test_reference_pages_hold_no_history(page):
    text = (ROOT / page).read_text()
    found = [f"{what}: {m.group(0)!r}" for what, pattern in HISTORY.items() for m in pattern.finditer(text)]
    assert not found, f"{page} holds {found}; move the measurement to the research record (experiments/)"


def test_the_patterns_catch_what_they_name():
    assert HISTORY["a date"].search("measured 2026-12-02 on")
    assert HISTORY["a p-value"].search("McNemar p = 0.0007") and HISTORY["a p-value"].search("(p=3e-13)")
    assert not HISTORY["a p-value"].search("top-p < 1") and not HISTORY["a p-value"].search("an exact p-value")
    assert HISTORY["a commit hash"].search("up to commit 1790521:")


def test_every_page_of_the_site_is_reference_or_results():
    pages = {str(p.relative_to(ROOT)) for p in (ROOT / "docs").rglob("*.md")}
    assert pages - set(REFERENCE) - set(RESULTS) == set(), "a new docs page: add it to REFERENCE (or RESULTS)"
