"""The model that ships inside the package: what ``--model default`` (and no ``--model``) evaluates.

``ragen_eval/default_model/`` is a ``transformers`` checkpoint (a 0.4M-parameter Qwen2-architecture
model trained on this project's CPU, see its README.md and provenance.json). It is found next to
this module, so it works from an editable checkout and from an installed wheel alike, and it is
played with the ``hf`` backend, in process or behind ``ragen-eval serve --agent default``.
"""

from __future__ import annotations

import hashlib
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


#: Files of a checkpoint directory whose bytes decide what the model answers.
_WEIGHT_SUFFIXES = (".safetensors", ".bin")
_TEXT_SUFFIXES = (".json", ".jinja")
#: Bytes read from each end of a weight file: enough to see any retraining, cheap for a 15 GB model.
_SAMPLE = 1 << 20


def checkpoint_digest(model: str) -> str | None:
    """A SHA-256 fingerprint of a local checkpoint; None for a served model name.

    Config, tokenizer and template files are hashed whole; weight files by their size and their
    first and last MiB, so a multi-GB checkpoint costs milliseconds. A run records it so that
    resuming a run directory after the checkpoint changed (re-trained, re-exported) is refused
    instead of mixing two models' episodes.
    """
    path = Path(resolve_model_path(model))
    if not path.is_dir():
        return None
    digest = hashlib.sha256()
    for file in sorted(p for p in path.iterdir() if p.is_file() and p.suffix in _WEIGHT_SUFFIXES + _TEXT_SUFFIXES):
        size = file.stat().st_size
        digest.update(f"{file.name}\0{size}\0".encode())
        with file.open("rb") as handle:
            if file.suffix in _TEXT_SUFFIXES or size <= 2 * _SAMPLE:
                digest.update(handle.read())
            else:
                digest.update(handle.read(_SAMPLE))
                handle.seek(size - _SAMPLE)
                digest.update(handle.read(_SAMPLE))
    return digest.hexdigest()
