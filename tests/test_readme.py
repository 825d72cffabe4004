"""The README's two commands stay true: CI runs the test command verbatim, and the main command names
a real subcommand and flags of ``ragen-eval``."""

import re
import shlex
from pathlib import Path

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
