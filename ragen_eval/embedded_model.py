"""The model that ships inside the package: what ``--model default`` (and no ``--model``) evaluates.

``ragen_eval/default_model/`` is a ``transformers`` checkpoint (a 0.4M-parameter Qwen2-architecture
model trained on this project's CPU, see its README.md and provenance.json). It is found next to
this module, so it works from an editable checkout and from an installed wheel alike, and it is
played with the ``hf`` backend, in process or behind ``ragen-eval serve --agent default``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

#: The name that stands for the embedded checkpoint on the command line (``--model``, ``--agent``).
DEFAULT_MODEL = "default"
_DIRECTORY = "default_model"


def default_model_path() -> Path:
    """The directory of the embedded checkpoint; ``FileNotFoundError`` if the install lacks it."""
    path = Path(__file__).resolve().parent / _DIRECTORY
    if not (path / "config.json").is_file() or not (path / "model.safetensors").is_file():
        raise FileNotFoundError(f"the embedded default model is missing from {path} (a broken install?); "
                                "reinstall ragen-envs or pass --model PATH of a checkpoint")
    return path


def default_model_provenance() -> dict[str, Any]:
    """The embedded checkpoint's ``provenance.json`` (how it was trained and its test-split figures)."""
    return json.loads((default_model_path() / "provenance.json").read_text())


def resolve_model_path(model: str) -> str:
    """``model`` as a checkpoint path: the embedded directory for ``default``, anything else unchanged."""
    return str(default_model_path()) if model == DEFAULT_MODEL else model
