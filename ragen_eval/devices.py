"""The torch device a run names, checked before anything is loaded or written (ragen-eval's hf backend and
ragen-train share it)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import torch


def torch_device(device: str, local_rank: int | None = None) -> torch.device:
    """The torch device ``device`` names; with ``local_rank`` (a ``torchrun`` process) any ``cuda`` means
    ``cuda:local_rank``. A ValueError when the name is not a device or the device is not available, so a run fails
    before it writes anything."""
    import torch  # the [eval] profile runs without torch; only the hf backend and training call this

    try:
        dev = torch.device(device)
    except RuntimeError as error:  # torch's own words name the accepted device types
        raise ValueError(f"device={device!r} is not a torch device: {error}") from None
    if dev.type == "cuda":
        if not torch.cuda.is_available():
            raise ValueError(f"device={device!r} but CUDA is not available")
        if local_rank is not None:
            return torch.device("cuda", local_rank)
        if dev.index is not None and dev.index >= torch.cuda.device_count():
            raise ValueError(f"device={device!r} but only {torch.cuda.device_count()} CUDA device(s) are visible")
    elif dev.type != "cpu":
        try:  # mps, xpu, ...: a tensor there is the one check every backend answers
            torch.empty(0, device=dev)
        except (RuntimeError, AssertionError) as error:
            raise ValueError(f"device={device!r} is not available: {error}") from None
    return dev
