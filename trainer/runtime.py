"""Where a run executes: device, precision, and the process group under torchrun."""
from __future__ import annotations

import os
from contextlib import nullcontext
from dataclasses import dataclass
from datetime import timedelta

import torch
import torch.distributed as dist

from trainer.config import ConfigError


@dataclass(frozen=True)
class Runtime:
    device: torch.device
    dtype: torch.dtype | None  # autocast dtype; None: full fp32
    rank: int = 0
    world: int = 1
    grouped: bool = False  # a process group was joined for this run (always under torchrun and under FSDP)

    @property
    def main(self) -> bool:
        return self.rank == 0

    @property
    def distributed(self) -> bool:
        return self.world > 1

    def autocast(self):
        if self.dtype is None:
            return nullcontext()
        return torch.autocast(self.device.type, dtype=self.dtype)


def start(device: str, precision: str, group: bool = False, timeout_s: float = 3600.0) -> Runtime:
    """Resolve the device and precision; join the process group when launched by torchrun, or a group of one
    process when `group` (FSDP shards over a process group, also of one), whose collectives wait `timeout_s` for
    the other processes before giving up.

    CUDA: TF32 matmuls on, NCCL between processes, bf16 autocast by default. CPU: gloo, fp32 by
    default (bf16 and fp16 autocast work there too, slowly; fp16 always runs with a GradScaler).
    """
    world = int(os.environ.get("WORLD_SIZE", "1"))
    rank = int(os.environ.get("RANK", "0"))
    if device == "auto":
        device = "cuda" if torch.cuda.is_available() else "cpu"
    if device.startswith("cuda"):
        if not torch.cuda.is_available():
            raise ConfigError("device: cuda was asked for but torch sees no CUDA device")
        index = local_device_index(device, world)
        torch.cuda.set_device(index)
        dev = torch.device("cuda", index)
        torch.backends.cuda.matmul.allow_tf32 = True
        torch.backends.cudnn.allow_tf32 = True
    else:
        dev = torch.device("cpu")
        # fp32 subnormals show up in the attention backward after a few dozen steps and made CPU
        # steps ~1.4× slower (benchmarks/trainer_overhead.py); flushing them to zero costs nothing.
        # The flag is per thread and inherited by threads created later: it reaches torch's
        # OpenMP workers when set before the first parallel op, as in a fresh training process.
        torch.set_flush_denormal(True)
    if precision == "auto":
        precision = "bf16" if dev.type == "cuda" else "fp32"
    dtype = {"fp32": None, "bf16": torch.bfloat16, "fp16": torch.float16}[precision]
    grouped = (world > 1 or group) and not dist.is_initialized()
    if grouped:
        backend = "nccl" if dev.type == "cuda" else "gloo"
        # NCCL is told the rank's device: left to guess, it takes rank % device_count (and warns that a rank
        # mapped otherwise can hang), where the device is LOCAL_RANK modulo the visible ones
        options = {"timeout": timedelta(seconds=timeout_s), "device_id": dev if dev.type == "cuda" else None}
        if world > 1 or "MASTER_ADDR" in os.environ:  # torchrun, whatever the number of processes
            dist.init_process_group(backend, **options)
        else:
            dist.init_process_group(backend, store=dist.HashStore(), rank=0, world_size=1, **options)
    return Runtime(device=dev, dtype=dtype, rank=rank, world=world, grouped=grouped)


def local_device_index(device: str, world: int) -> int:
    """The CUDA device of this process. Under torchrun, LOCAL_RANK modulo the visible devices: a SLURM cluster that
    binds one GPU per task shows each rank a single device, index 0, whatever its LOCAL_RANK."""
    if world == 1:
        return torch.device(device).index or 0
    return int(os.environ.get("LOCAL_RANK", "0")) % torch.cuda.device_count()


def stop(runtime: Runtime) -> None:
    if runtime.grouped and dist.is_initialized():
        dist.destroy_process_group()


def mean_across(runtime: Runtime, value: torch.Tensor) -> torch.Tensor:
    """The mean of a scalar tensor over processes (itself when alone)."""
    if runtime.distributed:
        value = value.detach().clone()
        dist.all_reduce(value, op=dist.ReduceOp.SUM)  # gloo has no AVG
        value /= runtime.world
    return value


def agree(runtime: Runtime, flag: bool) -> bool:
    """Rank 0's decision, made known to every process."""
    if not runtime.distributed:
        return flag
    t = torch.tensor([int(flag)], device=runtime.device)
    dist.broadcast(t, src=0)
    return bool(t.item())


def barrier(runtime: Runtime) -> None:
    if runtime.distributed:
        dist.barrier()
