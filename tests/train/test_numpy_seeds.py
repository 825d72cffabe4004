"""A NumPy integer seed is the same seed as the Python int, in the trainer's seeded entry points."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("transformers")
from safetensors.torch import load_file  # noqa: E402

from ragen_train.tiny import build_tiny_checkpoint  # noqa: E402


def test_tiny_checkpoint_takes_a_numpy_seed(tiny_model_dir, tmp_path):
    built = build_tiny_checkpoint(tmp_path / "m", seed=np.int64(0))  # the fixture's model: seed 0
    ours, fixture = load_file(built / "model.safetensors"), load_file(tiny_model_dir / "model.safetensors")
    assert ours.keys() == fixture.keys() and all((ours[k] == fixture[k]).all() for k in ours)
    with pytest.raises(TypeError, match="seed must be an integer"):
        build_tiny_checkpoint(tmp_path / "bad", seed=True)
