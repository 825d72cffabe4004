"""Shared fixtures for the whole suite."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

#: Modules the ``[render]`` extra installs; tests marked ``render`` need all of them.
RENDER_MODULES = ("pygame", "PIL")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Skip tests marked ``render`` where the ``[render]`` extra is not installed (a bare install)."""
    missing = [name for name in RENDER_MODULES if importlib.util.find_spec(name) is None]
    if not missing:
        return
    skip = pytest.mark.skip(reason=f"needs the [render] extra ({', '.join(missing)} not installed)")
    for item in items:
        if "render" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny random Qwen2 checkpoint (model + tokenizer, transformers format), built once per session.

    Built by :func:`ragen_train.tiny.build_tiny_checkpoint` with seed 0 and the default shape
    (hidden 128, 2 layers, head size 64): loads with ``AutoModelForCausalLM``/``AutoTokenizer``
    and with vLLM. Treat it as read-only; copy it before training in place.
    """
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from ragen_train.tiny import build_tiny_checkpoint

    return build_tiny_checkpoint(tmp_path_factory.mktemp("tiny_model"), seed=0)
