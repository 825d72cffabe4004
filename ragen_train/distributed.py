"""Multi-process training with ``torchrun``: process-group setup and the few collectives the trainer uses.

Launched plainly (no ``WORLD_SIZE`` in the environment) everything degrades to one process and no
collective is called. Under ``torchrun`` the backend is NCCL on GPUs and gloo on the CPU.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

import torch
import torch.distributed as dist

from ragen_eval.devices import torch_device


@dataclass(frozen=True)
class DistInfo:
    """This process's place in the job."""

    rank: int = 0
    world_size: int = 1
    local_rank: int = 0
    device: torch.device = torch.device("cpu")

    @property
    def is_main(self) -> bool:
        """Rank 0 writes logs, plots and checkpoints."""
        return self.rank == 0

    @property
    def distributed(self) -> bool:
        """More than one process."""
        return self.world_size > 1


def init_distributed(device: str = "cpu") -> DistInfo:
    """Join the ``torchrun`` process group if there is one; pick this rank's device."""
    world = int(os.environ.get("WORLD_SIZE", "1"))
    rank = int(os.environ.get("RANK", "0"))
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    dev = torch_device(device, local_rank)
    if dev.type == "cuda":
        torch.cuda.set_device(local_rank)
    if world > 1 and not dist.is_initialized():
        dist.init_process_group(backend="nccl" if dev.type == "cuda" else "gloo")
    return DistInfo(rank, world, local_rank, dev)


def all_gather_objects(info: DistInfo, obj: Any) -> list[Any]:
    """Every rank's ``obj``, in rank order (just ``[obj]`` in one process)."""
    if not info.distributed:
        return [obj]
    out: list[Any] = [None] * info.world_size
    dist.all_gather_object(out, obj)
    return out


def broadcast_object(info: DistInfo, obj: Any) -> Any:
    """Rank 0's ``obj`` on every rank."""
    if not info.distributed:
        return obj
    box = [obj]
    dist.broadcast_object_list(box, src=0)
    return box[0]


def all_reduce_sum(info: DistInfo, tensor: torch.Tensor) -> torch.Tensor:
    """Element-wise sum over ranks (in place; returned for chaining)."""
    if info.distributed:
        dist.all_reduce(tensor, op=dist.ReduceOp.SUM)
    return tensor


def barrier(info: DistInfo) -> None:
    """Wait for every rank."""
    if info.distributed:
        dist.barrier()


def shutdown(info: DistInfo) -> None:
    """Leave the process group."""
    if info.distributed and dist.is_initialized():
        dist.destroy_process_group()
