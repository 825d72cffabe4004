"""The one ``--help`` style of the command lines: each option's default on its line, and worked examples.

``ragen-eval``, its subcommands, ``ragen-train`` and ``ragen-train sft`` build their parsers with
:class:`HelpFormatter` and end their help with an :func:`examples` block, so every command explains
itself the same way.
"""

from __future__ import annotations

import argparse
import re
from collections.abc import Sequence

#: Heading of the examples block (tests find the shown commands under it).
EXAMPLES_HEADING = "examples:"


class HelpFormatter(argparse.HelpFormatter):
    """Keeps the lines of a description or epilog that has several (the examples) and wraps one-line ones, and
    appends ``(default: X)`` to an option's help unless there is no default to show (None, an empty list, a
    flag that takes no value) or the help already says what the default is."""

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        if "\n" in text:
            return "".join(indent + line for line in text.splitlines(keepends=True))
        return super()._fill_text(text, width, indent)

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        default = action.default
        if (not action.option_strings or action.nargs == 0 or default is None or default is argparse.SUPPRESS
                or default == [] or "default" in text.lower()):
            return text
        return f"{text} (default: %(default)s)"


def field_help(docs: dict[str, str], name: str) -> str:
    """A config field's documentation (``config_docs.field_docs``) as an option's help: reST markup removed
    (``x``, :role:`~a.b` -> x, b) and ``%`` escaped for argparse."""
    text = re.sub(r":\w+:`~?(?:[\w.]+\.)?([\w]+)`", r"\1", docs[name])
    return text.replace("``", "").replace("%", "%%")


def examples(pairs: Sequence[tuple[str, str]]) -> str:
    """An epilog of worked examples: each ``(what it does, command)`` pair as a comment line and the command
    (an empty ``what`` continues the example above it)."""
    lines = [EXAMPLES_HEADING]
    for what, command in pairs:
        lines += [f"  # {what}"] * bool(what) + [f"  {command}"]
    return "\n".join(lines)


def shown_examples(help_text: str, prog: str) -> list[str]:
    """The commands an ``--help`` text shows under :data:`EXAMPLES_HEADING` that start with ``prog``."""
    _, found, block = help_text.partition(EXAMPLES_HEADING)
    if not found:
        return []
    return [line.strip() for line in block.splitlines() if line.strip().startswith(prog + " ")]
