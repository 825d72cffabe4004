"""Checkpoints in ``transformers`` format, with everything needed to resume exactly.

Layout of ``<run_dir>/checkpoints/step_000050/`` (step = steps completed):

- the policy as ``save_pretrained`` writes it (config, safetensors, generation config) plus the
  tokenizer: ``ragen-eval --backend hf --model DIR`` and ``vllm.LLM(DIR)`` load it as is;
- ``critic/``: the critic backbone (transformers format) and ``value_head.pt``;
- ``trainer_state.pt``: optimizer state, step, RNG states, the collapse monitor's history.

``trainer_state.pt`` is written last, into a temporary directory renamed into place, so a
directory that has it is complete; a crash mid-save leaves no half checkpoint behind.
"""

from __future__ import annotations

import random
import re
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import torch

from ragen_train.policy import ActorCritic, save_critic

_STEP_DIR = re.compile(r"^step_(\d+)$")
STATE_FILE = "trainer_state.pt"


def rng_state() -> dict[str, Any]:
    """Python, NumPy and torch global RNG states (the trainer seeds its own draws, but libraries may not)."""
    state = {"python": random.getstate(), "numpy": np.random.get_state(), "torch": torch.get_rng_state()}
    if torch.cuda.is_available():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def set_rng_state(state: dict[str, Any]) -> None:
    """Restore :func:`rng_state`."""
    random.setstate(state["python"])
    np.random.set_state(state["numpy"])
    torch.set_rng_state(state["torch"])
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])


def save_checkpoint(
    run_dir: str | Path,
    step: int,
    model: ActorCritic,
    tokenizer: Any,
    optimizer: torch.optim.Optimizer,
    extra: dict[str, Any] | None = None,
    keep: int = 2,
) -> Path:
    """Write the checkpoint after ``step`` completed steps; keep only the newest ``keep``; return its dir."""
    root = Path(run_dir) / "checkpoints"
    final = root / f"step_{step:06d}"
    tmp = root / f".tmp_step_{step:06d}"
    if tmp.exists():
        shutil.rmtree(tmp)
    tmp.mkdir(parents=True)
    model.lm.save_pretrained(tmp)
    tokenizer.save_pretrained(tmp)
    save_critic(model, tmp / "critic")
    state = {"step": step, "optimizer": optimizer.state_dict(), "rng": rng_state(), "extra": extra or {}}
    torch.save(state, tmp / STATE_FILE)
    if final.exists():
        shutil.rmtree(final)
    tmp.rename(final)
    for old in list_checkpoints(run_dir)[:-keep] if keep > 0 else []:
        shutil.rmtree(old)
    return final


def list_checkpoints(run_dir: str | Path) -> list[Path]:
    """Complete checkpoint directories of a run, oldest first."""
    root = Path(run_dir) / "checkpoints"
    if not root.is_dir():
        return []
    found = [(int(m.group(1)), p) for p in root.iterdir()
             if (m := _STEP_DIR.match(p.name)) and (p / STATE_FILE).is_file()]
    return [p for _, p in sorted(found)]


def latest_checkpoint(run_dir: str | Path) -> Path | None:
    """The newest complete checkpoint of a run, or None."""
    found = list_checkpoints(run_dir)
    return found[-1] if found else None


def load_trainer_state(checkpoint: str | Path) -> dict[str, Any]:
    """The ``trainer_state.pt`` of a checkpoint (optimizer, step, RNG, extra)."""
    path = Path(checkpoint) / STATE_FILE
    if not path.is_file():
        raise FileNotFoundError(f"{path} does not exist; {checkpoint} is not a complete ragen-train checkpoint")
    # weights_only=False: the state holds Python/NumPy RNG tuples; the file is our own.
    return torch.load(path, map_location="cpu", weights_only=False)
