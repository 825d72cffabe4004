r"""The one way config fields are documented, and the ``--help-config`` listing every command prints from it.

A field is documented by the string literal right below it in the dataclass body (an attribute
docstring, as Sphinx and IDEs read them)::

    max_turns: int | None = None
    \"\"\"Turns (model calls) per episode; None: the game's default.\"\"\"

:func:`config_help` lists every field of a config with its default and that text; a field whose type
is a config dataclass is listed field by field under its dotted name (``protocol.max_turns``), the
names the ``key=value`` overrides of :mod:`ragen_envs.overrides` take.
"""

from __future__ import annotations

import ast
import functools
import inspect
import json
import textwrap
from collections.abc import Mapping
from dataclasses import fields, is_dataclass
from typing import Any
from ragen_envs.config_dicts import field_default, non_default_fields
from ragen_envs.text import make_env


@functools.cache
def field_docs(cls: type) -> dict[str, str]:
    """Field name -> the first paragraph of its attribute docstring, on one line ({} without source)."""
    docs: dict[str, str] = {}
    for klass in reversed(cls.__mro__):  # a subclass's text wins over its base's
        if not is_dataclass(klass):
            continue
        try:
            tree = ast.parse(textwrap.dedent(inspect.getsource(klass)))
        except (OSError, TypeError):  # no source file (an interactive or generated class)
            continue
        body = tree.body[0].body if tree.body and isinstance(tree.body[0], ast.ClassDef) else []
        for stmt, after in zip(body, body[1:]):
            if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name) and isinstance(after, ast.Expr) \
                    and isinstance(after.value, ast.Constant) and isinstance(after.value.value, str):
                docs[stmt.target.id] = " ".join(inspect.cleandoc(after.value.value).split("\n\n")[0].split())
    return docs


def config_help(config: Any, prefix: str = "") -> str:
    """One line per field of ``config``: ``  name = value  # doc``, values as JSON.

    ``config`` is a config dataclass (the values shown are its defaults) or an instance of one (its
    own values). A field holding a config dataclass gets its own line (in the compact stored form,
    ``{}`` for the defaults) followed by its fields as ``name.field``.
    """
    cls = config if isinstance(config, type) else type(config)
    docs = field_docs(cls)
    lines = []
    for f in fields(cls):
        if not f.init:
            continue
        default = field_default(f) if config is cls else getattr(config, f.name)
        nested = is_dataclass(default) and not isinstance(default, type)
        shown = json.dumps(non_default_fields(default) if nested else default, default=_shown)
        doc = docs.get(f.name)
        lines.append(f"  {prefix}{f.name} = {shown}" + (f"  # {doc}" if doc else ""))
        if nested:
            lines.append(config_help(default, f"{prefix}{f.name}."))
    return "\n".join(lines)


def game_config_help(env: str, overrides: Mapping[str, Any] | None = None, prefix: str = "env_config.") -> str:
    """:func:`config_help` of the game config that plays preset ``env``: its preset's values, then ``overrides``."""
    game = make_env(env, overrides)
    try:
        return config_help(game.unwrapped.config, prefix)
    finally:
        game.close()


def _shown(value: object) -> object:
    """What JSON lacks: a config inside a list as its non-default fields, anything else as its repr."""
    return non_default_fields(value) if is_dataclass(value) and not isinstance(value, type) else repr(value)
