"""Load a repository script that is not in a package (``benchmarks/``, ``experiments/``) as a module."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

REPO = Path(__file__).resolve().parents[1]


def load_script(path: str | Path) -> ModuleType:
    """The script at ``path`` (absolute, or relative to the repository root), executed as a fresh module."""
    path = REPO / path
    # named for its path, not its stem: experiments/*/export.py are several scripts, and a sibling's
    # `from export import ...` must not find another folder's export.py under the bare name
    name = "_".join(path.resolve().relative_to(REPO).with_suffix("").parts)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    # registered first, as an import would: dataclasses look their module up while the class is built
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module
