"""How a model is laid out over processes and memory: FSDP2 sharding and activation checkpointing, per block.

A block is an entry of a `nn.ModuleList` (gpt and llama `blocks.i`, mlp `hidden.i`); neither changes a parameter's
name, so the μP table, the optimizer groups and the checkpoints name the same parameters as without them.

FSDP2 (`torch.distributed.fsdp.fully_shard`, PyTorch's per-parameter sharding) is applied to each block and then
to the root, as torchtitan does: each parameter becomes a DTensor sharded along its first dimension, gathered for
its block's forward and backward. Two things of mup do not survive that swap (mup issue #59 is the same loss under
FSDP1): the `infshape` attribute of each parameter, put back by name on the sharded parameters so the μP optimizer
groups are built exactly as unsharded, and `MuReadout.width_mult()`, read from the weight's `infshape` in every
forward (where FSDP hands it the gathered weight, which has none): each readout's multiplier is frozen as a
number before sharding.

Mixed precision on CUDA under bf16: parameters gathered in bf16 for compute, gradients reduced in fp32 (torchtitan's
default: a bf16 sum over many processes loses the low bits of small gradients); on CPU and under fp32 everything
stays fp32.

`torch.distributed`'s FSDP, DTensor and checkpoint modules are imported where they are used: loading them costs
about half a second, paid otherwise by every process that trains on one device (each sweep worker, each CLI call).
"""
from __future__ import annotations

import sys

import mup
import torch
from mup import MuReadout
from torch import nn

from trainer.config import ParallelConfig
from trainer.runtime import Runtime


def blocks(model: nn.Module) -> list[nn.Module]:
    """The model's blocks: every entry of every `nn.ModuleList` in it."""
    return [child for m in model.modules() if isinstance(m, nn.ModuleList) for child in m]


def checkpoint_activations(model: nn.Module) -> None:
    """Recompute each block's activations in the backward instead of keeping them (torch's composable, non-reentrant
    activation checkpointing: the module tree and its parameter names are unchanged). Same losses, less memory."""
    from torch.distributed._composable import checkpoint

    for block in blocks(model):
        checkpoint(block)


def shard(model: nn.Module, parallel: ParallelConfig, run: Runtime) -> None:
    """FSDP2 over all processes of the run's group: each block, then the root; μP's attributes kept (module doc)."""
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard

    infshapes = mup.get_infshapes(model)  # by parameter name
    for readout in (m for m in model.modules() if isinstance(m, MuReadout)):
        readout.width_mult = constant(readout.width_mult())
    bf16 = run.device.type == "cuda" and run.dtype == torch.bfloat16
    policy = MixedPrecisionPolicy(param_dtype=torch.bfloat16 if bf16 else None,
                                  reduce_dtype=torch.float32 if bf16 else None)
    mesh = init_device_mesh(run.device.type, (run.world,))
    for block in blocks(model):
        fully_shard(block, mesh=mesh, mp_policy=policy, reshard_after_forward=parallel.reshard_after_forward)
    fully_shard(model, mesh=mesh, mp_policy=policy, reshard_after_forward=parallel.reshard_after_forward)
    for name, p in model.named_parameters():
        p.infshape = infshapes[name]


def is_dtensor(t: object) -> bool:
    """Whether `t` is a DTensor (FSDP2's sharded parameter). None exists before `torch.distributed.tensor` is
    imported, so an unsharded run never imports it."""
    dtensor = sys.modules.get("torch.distributed.tensor")
    return dtensor is not None and isinstance(t, dtensor.DTensor)


def full(t: torch.Tensor) -> torch.Tensor:
    """A tensor whole on every process: a DTensor's full value (a norm of FSDP2's sharded gradients), else itself."""
    return t.full_tensor() if is_dtensor(t) else t


def constant(value: float):
    """A method that returns `value` (a readout's width multiplier, fixed once the model is built)."""
    return lambda: value


class ShardedModel:
    """The model's part of the TrainState under FSDP2: its sharded state dict (DTensors, by parameter name)."""

    def __init__(self, model: nn.Module):
        self.model = model

    def state_dict(self) -> dict:
        from torch.distributed.checkpoint.state_dict import get_model_state_dict

        return get_model_state_dict(self.model)

    def load_state_dict(self, state: dict) -> None:
        from torch.distributed.checkpoint.state_dict import set_model_state_dict

        set_model_state_dict(self.model, state)


class ShardedOptimizer:
    """The optimizer's part under FSDP2: its state keyed by parameter name, DTensors sharded as the parameters are
    (torch's `get_optimizer_state_dict`). Before the first step the optimizer has no state, and the state dict is
    the optimizer's own (groups only): torch's would first take a zero-LR step to create the state, and an AdamW
    step count of 1 where there should be 0 changes every later bias correction. A composite optimizer (Muon with
    AdamW) is given to torch as its parts."""

    def __init__(self, model: nn.Module, optimizer: torch.optim.Optimizer):
        self.model, self.optimizer = model, optimizer
        self.parts = list(getattr(optimizer, "parts", {"": optimizer}).values())

    def state_dict(self) -> dict:
        if not any(part.state for part in self.parts):
            return {"unstepped": self.optimizer.state_dict()}
        return self.sharded_state_dict()

    def sharded_state_dict(self) -> dict:
        """The state dict in torch's sharded form, the state created first if there is none (a template to load
        a checkpoint into)."""
        from torch.distributed.checkpoint.state_dict import get_optimizer_state_dict

        return get_optimizer_state_dict(self.model, self.parts)

    def load_state_dict(self, state: dict) -> None:
        if "unstepped" in state:
            self.optimizer.load_state_dict(state["unstepped"])  # no state: as the optimizer was built
        else:
            from torch.distributed.checkpoint.state_dict import set_optimizer_state_dict

            set_optimizer_state_dict(self.model, self.parts, state)
