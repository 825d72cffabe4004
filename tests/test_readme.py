"""The documented commands stay true: CI runs the README's test command verbatim, the main command
names a real subcommand and flags of ``ragen-eval``, every ``ragen-eval`` command in a shell
block of the README and docs parses with the real CLI, and the example prompts of docs/protocol.md
are what their commands print today."""

import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from tests.doc_blocks import code_blocks

ROOT = Path(__file__).resolve().parents[1]


def _command_after(marker: str) -> str:
    text = (ROOT / "README.md").read_text()
    match = re.search(rf"<!-- {marker} -->\s*```bash\n(.+?)\n```", text, re.S)
    assert match, f"README.md has no ```bash block after <!-- {marker} -->"
    return match.group(1).strip()


def test_ci_runs_the_readme_test_command():
    ci_lines = [line.strip() for line in (ROOT / ".ci" / "run").read_text().splitlines()]
    assert _command_after("test-command") in ci_lines


def test_main_command_parses_with_the_real_cli():
    from ragen_eval.cli import SUBCOMMANDS, build_parser

    command = _command_after("main-command")
    eval_part = command.split("&&")[-1].strip()
    argv = shlex.split(eval_part)
    assert argv[0] == "ragen-eval"
    rest = argv[1:] if argv[1] in SUBCOMMANDS else ["evaluate", *argv[1:]]
    args = build_parser().parse_args(rest)
    assert args.command == "evaluate" and args.model


#: Pages whose ``ragen-eval`` commands this suite keeps true.
DOC_PAGES = ("README.md", "docs/eval.md", "docs/backends.md", "docs/protocol.md", "docs/envs.md",
             "docs/consistency.md", "docs/interfaces.md", "docs/train.md", "docs/integrations.md")


def _documented_commands(program: str) -> list[tuple[str, str]]:
    """(page, command) for every line of a shell code block that runs ``program``.

    Continuation lines are joined; lines that show output (``ragen-eval evaluate: error: ...``) or a
    synopsis (``--agent random|oracle|PATH [--port P]``) are not commands and are skipped.
    """
    found = []
    for page in DOC_PAGES:
        for block in code_blocks(page):
            if block.language not in ("bash", "sh", ""):
                continue
            for line in block.code.replace("\\\n", " ").splitlines():
                # "cmd || echo ..." runs cmd; what follows || is the shell's fallback, not the CLI's
                command = line.split("&&")[-1].split(" #")[0].split("||")[0].strip().removesuffix("&").strip()
                command = re.sub(r"\s+\d?>>?\s*\S+", "", command)  # a redirection is the shell's, not the CLI's
                words = command.split()
                if not words or words[0] != program or words[1:2] and words[1].endswith(":"):
                    continue
                if "|" in command.replace("||", "") or " [" in command:
                    continue
                found.append((page, command))
    return found


def test_the_docs_show_ragen_eval_commands():
    assert len(_documented_commands("ragen-eval")) >= 15


@pytest.mark.parametrize(("page", "command"), _documented_commands("ragen-eval"))
def test_every_documented_ragen_eval_command_parses(page, command):
    from ragen_eval.cli import SUBCOMMANDS, build_parser

    argv = shlex.split(command)[1:]
    rest = argv if argv and argv[0] in SUBCOMMANDS else ["evaluate", *argv]
    try:
        build_parser().parse_args(rest)
    except SystemExit:
        pytest.fail(f"{page}: `{command}` does not parse with the current ragen-eval CLI")


def _protocol_examples() -> list[tuple[str, str]]:
    """(command, shown output) for each ``python -m ragen_envs.text`` example of docs/protocol.md."""
    text = (ROOT / "docs" / "protocol.md").read_text()
    return re.findall(r"^`(python -m ragen_envs\.text [^`]+)`\n\n```text\n(.*?)```$", text, re.S | re.M)


def test_protocol_page_shows_an_example_of_each_game():
    commands = [command for command, _ in _protocol_examples()]
    assert [c.split()[3] for c in commands] == ["simple_sokoban", "frozenlake", "bandit"]


@pytest.mark.parametrize(("command", "shown"), _protocol_examples(),
                         ids=[command.split()[3] for command, _ in _protocol_examples()])
def test_protocol_examples_match_what_their_commands_print(command, shown):
    argv = shlex.split(command)
    done = subprocess.run([sys.executable, *argv[1:]], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout == shown, f"docs/protocol.md: `{command}` prints something else now; run scripts/doc_examples.py"
