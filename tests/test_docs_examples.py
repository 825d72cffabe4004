"""Every example of the reference pages runs as written, in the page's order: per page, its ``bash`` blocks
in a shell and its ``python`` blocks in one Python session, all in one fresh working directory, as a reader
following the page would run them. Blocks that cannot run here carry a skip marker with a reason
(tests/doc_blocks.py); blocks that show output or a file are told apart by their fence language."""

from __future__ import annotations

import re

import pytest

from tests.doc_blocks import REPO, RUNNABLE, PythonSession, code_blocks, run_shell

#: Reference pages whose examples run here. README.md's commands run in tests/test_readme_commands.py;
#: docs/integrations.md's doors (OpenEnv, TRL, verifiers) run in their own profiles' tests, not yet from the page.
PAGES = ("docs/index.md", "docs/install.md", "docs/envs.md",
         *sorted(str(p.relative_to(REPO)) for p in (REPO / "docs" / "envs").glob("*.md")),
         "docs/protocol.md", "docs/eval.md", "docs/backends.md", "docs/train.md", "docs/add_a_game.md",
         "docs/interfaces.md", "docs/consistency.md")
#: Pages whose examples load a model in process (the [train] extra: torch, transformers).
NEEDS_TRAIN = ("docs/eval.md", "docs/backends.md", "docs/train.md")
#: Repository folders the examples name by relative path (as run from a checkout's root).
CHECKOUT = ("configs",)
#: First words of a line that runs something; an untagged or output block starting with one is mislabelled.
PROGRAMS = re.compile(r"^(\$ )?(ragen-eval|ragen-train|python|pip|curl|bash|git|export|openenv) (?!\S+: )")


def test_every_skip_marker_gives_a_reason_and_precedes_a_block():
    for page in (*PAGES, "README.md"):
        blocks = code_blocks(page)
        assert [b for b in blocks if b.skip == ""] == [], f"{page}: a docs-test skip marker without a reason"
        markers = (REPO / page).read_text().count("<!-- docs-test: skip")
        assert markers == sum(b.skip is not None for b in blocks), f"{page}: a skip marker not right before a fence"


def test_blocks_that_are_not_run_are_not_commands():
    mislabelled = [str(b) for page in PAGES for b in code_blocks(page)
                   if b.language not in RUNNABLE and PROGRAMS.match(b.code.lstrip())]
    assert mislabelled == [], f"blocks that show commands but are not tagged bash: {mislabelled}"


def test_the_pages_hold_examples_that_run():
    runnable = [b for page in PAGES for b in code_blocks(page) if b.language in RUNNABLE and b.skip is None]
    assert len(runnable) >= 30, len(runnable)


@pytest.mark.slow
@pytest.mark.parametrize("page", PAGES)
def test_the_page_examples_run_in_order(page, tmp_path):
    if page in NEEDS_TRAIN:
        pytest.importorskip("torch")
        pytest.importorskip("transformers")
    for name in CHECKOUT:
        (tmp_path / name).symlink_to(REPO / name)
    session = PythonSession(tmp_path)
    try:
        for block in code_blocks(page):
            if block.language not in RUNNABLE or block.skip is not None:
                continue
            if block.path:
                (tmp_path / block.path).parent.mkdir(parents=True, exist_ok=True)
                (tmp_path / block.path).write_text(block.code)
            elif block.language == "python":
                ok, out = session.run(block.code)
                assert ok, f"{block}: the python block raised:\n{out[-3000:]}"
            else:
                done = run_shell(block.code, tmp_path)
                assert done.returncode == 0, (f"{block}: the bash block exited {done.returncode}:\n"
                                              f"{done.stdout[-2000:]}\n{done.stderr[-2000:]}")
    finally:
        session.close()
