"""argparse pieces shared by the command lines of ``ragen-eval`` and ``ragen-train``."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import Any


class GivenOnce(argparse.Action):
    """Store a comma-list flag's value, refusing a second use of the flag.

    argparse keeps the last of a repeated flag, so ``--env bandit --env frozenlake`` would quietly play
    FrozenLake alone; a list flag says how to list instead.
    """

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace,
                 values: str | Sequence[Any] | None, option_string: str | None = None) -> None:
        if getattr(namespace, f"_given_{self.dest}", False):
            parser.error(f"{option_string} was given twice; list several in one: {option_string} a,b")
        setattr(namespace, f"_given_{self.dest}", True)
        setattr(namespace, self.dest, values)
