"""Whether the full run fits one device: its training state against the device's memory, and FSDP2 when it does not.

    state = N · 16 bytes    fp32 weights (4) + gradients (4) + AdamW's two moments (8), N counted on a meta-device
                            copy of the model (proxies/resources.py); activations are not counted
    rule:   state > ½ · device memory  →  parallel.kind: fsdp (each of P processes then holds about state / P)

The other half of the device is left to activations, the allocator and the communication buffers (ZeRO, Rajbhandari
et al. 2020, §3: the 16 bytes per parameter of mixed-precision Adam are what sharding divides). The device's memory
is `--device-memory GB`, else that of the CUDA device this command sees; with neither, nothing is decided.
"""
from __future__ import annotations

from proxies.registry import count_parameters
from proxies.resources import BYTES_PER_PARAMETER, gib
from sweep.rules.change import Change
from trainer.config import ParallelConfig, RunConfig


def device_memory(given_gb: float | None) -> int | None:
    """Bytes of one device: the flag's, else the visible CUDA device's, else None."""
    if given_gb is not None:
        return int(given_gb * 2 ** 30)
    import torch

    return torch.cuda.get_device_properties(0).total_memory if torch.cuda.is_available() else None


def state_bytes(cfg: RunConfig, model_options: dict) -> tuple[int, int]:
    """The full run's parameter count and its training state in bytes."""
    model = cfg.model
    params = count_parameters(model.name, model.width, model.depth, model.parametrization,
                              **{**model_options, **model.options})
    return params, params * BYTES_PER_PARAMETER


def sharding_change(cfg: RunConfig, model_options: dict, memory: int | None) -> tuple[Change | None, str]:
    """The change to `parallel` the memory rule makes (None: the run fits, or no device memory is known, or the
    config sets `parallel` itself) and the estimate, as one line."""
    params, need = state_bytes(cfg, model_options)
    estimate = f"{params:,} parameters × {BYTES_PER_PARAMETER} B = {gib(need)} of weights, gradients and AdamW state"
    if memory is None:
        return None, f"{estimate}; give --device-memory GB to let transfer decide on FSDP2"
    fits = need <= memory / 2
    line = f"{estimate} {'≤' if fits else '>'} ½ × {gib(memory)} per device"
    if fits or cfg.parallel is not None:
        return None, line
    return Change("memory.fsdp", "parallel.kind", "ddp", "fsdp", f"{line}: sharded across the processes (FSDP2)"), line


def with_sharding(cfg: RunConfig) -> RunConfig:
    return cfg.model_copy(update={"parallel": ParallelConfig(kind="fsdp")})
