"""Planted μP bugs: each breaks one rule of Tensor Programs V (Yang et al. 2022, Table 3; μP attention) on a
freshly built zoo model or on its optimizer groups. Shared by the mutation tests and the calibration
benchmark (`benchmarks/coord_check_calibration.py`).

A bug is a `Bug(name, rule, model, options, mutate_model, mutate_groups)`: the model is built with
`options` (in μP unless `parametrization` says otherwise), then `mutate_model(model)` edits it in place;
`mutate_groups(groups, model)` edits the μP groups of `optimizer` (`trainer.optim.param_groups`, the optimizer's
table in `proxies.optimizers`) before the optimizer is made.
"""
from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

import torch
from mup import MuReadout
from torch import nn

from proxies.gpt import CausalSelfAttention
from proxies.llama import GroupedQueryAttention
from proxies.registry import build_model
from trainer.optim import optimizer_of, param_groups


def keep(_model: nn.Module) -> None:
    """No mutation."""


def keep_groups(groups: list[dict], _model: nn.Module) -> list[dict]:
    return groups


@dataclass(frozen=True)
class Bug:
    name: str
    rule: str  # the Tensor Programs V rule the bug breaks
    model: str
    options: dict = field(default_factory=dict)
    mutate_model: Callable[[nn.Module], None] = keep
    mutate_groups: Callable[[list[dict], nn.Module], list[dict]] = keep_groups
    parametrization: str = "mup"
    optimizer: str = "adamw"
    widths: tuple[int, ...] | None = None  # None: 1×, 2×, 4× the base width (Muon on CPU: narrower, docs/guide)


def readout_times(power: float) -> Callable[[nn.Module], None]:
    """Readout forward multiplier 1/m^power instead of 1/m."""
    def mutate(model: nn.Module) -> None:
        for module in model.modules():
            if isinstance(module, MuReadout):
                m = module.width_mult()
                module.width_mult = lambda m=m: m ** power
    return mutate


def sqrt_d_attention(model: nn.Module) -> None:
    """SP's attention logits q·k/√d_head in place of μP's q·k/d_head (same at the base width)."""
    for module in model.modules():
        if isinstance(module, (CausalSelfAttention, GroupedQueryAttention)):
            module.scale = module.head_dim ** -0.5


def unscaled_hidden_init(model: nn.Module) -> None:
    """Hidden matrices drawn with the base width's std 1/√fan_in_base at every width (no 1/√m)."""
    for p in model.parameters():
        if p.infshape.ninf() == 2 and p.abs().sum() > 0:  # a zero-initialised query stays zero
            fan_in_base = p.infshape[1].base_dim * math.prod(p.shape[2:])
            with torch.no_grad():
                p.normal_(0.0, fan_in_base ** -0.5)


def flat_lr(groups: list[dict], _model: nn.Module) -> list[dict]:
    """Every group at the base LR: a plain optimizer, hidden matrices not at lr/m."""
    base = max(g["lr"] for g in groups)
    return [{**g, "lr": base, "lr_mult": 1.0} for g in groups]


def muon_without_shape_correction(groups: list[dict], _model: nn.Module) -> list[dict]:
    """Muon's matrices at the base LR: torch's 0.2·√max(A, B) left to grow the update √m per doubling."""
    return [{**g, "lr": g["lr"] / g["lr_mult"], "lr_mult": 1.0} if g["owner"] == "muon" else g for g in groups]


def vector_lr_like_hidden(groups: list[dict], model: nn.Module) -> list[dict]:
    """Input-like and vector-like parameters (one or no infinite dim) given the hidden 1/m LR."""
    m = model_width_mult(model)
    return [g if g["lr_mult"] != 1.0 else {**g, "lr": g["lr"] / m} for g in groups]


def model_width_mult(model: nn.Module) -> float:
    return next(p.infshape.width_mult() for p in model.parameters() if p.infshape.ninf() == 2)


BUGS = [
    Bug("readout ×1 (no 1/m)", "Table 3: output weights' multiplier 1/fan_in (MuReadout)", "gpt",
        mutate_model=readout_times(0.0)),
    Bug("readout ×1/√m", "Table 3: output weights' multiplier 1/fan_in, not 1/√fan_in", "gpt",
        mutate_model=readout_times(0.5)),
    Bug("attention 1/√d, heads fixed", "μP attention: logits q·k/d_head, not q·k/√d_head", "gpt",
        {"n_head": 4}, mutate_model=sqrt_d_attention),
    Bug("llama attention 1/√d, heads fixed", "μP attention: logits q·k/d_head, not q·k/√d_head (RoPE keeps norms)",
        "llama", {"n_head": 4, "n_kv_head": 2}, mutate_model=sqrt_d_attention),
    Bug("hidden Adam LR not /m", "Table 3: hidden weights' Adam LR 1/fan_in", "gpt", mutate_groups=flat_lr),
    Bug("embedding/bias/gain LR /m", "Table 3: input weights and biases keep an Adam LR Θ(1)", "gpt",
        mutate_groups=vector_lr_like_hidden),
    Bug("input layer/bias LR /m", "Table 3: input weights and biases keep an Adam LR Θ(1)", "mlp",
        mutate_groups=vector_lr_like_hidden),
    Bug("hidden init not 1/√fan_in", "Table 3: hidden weights' init variance 1/fan_in", "gpt",
        mutate_model=unscaled_hidden_init),
    Bug("Muon without its shape factor", "spectral condition: ‖ΔW‖ = Θ(√(fan_out/fan_in)) needs lr/√m with "
        "match_rms_adamw", "gpt", mutate_groups=muon_without_shape_correction, optimizer="muon",
        widths=(32, 64, 128)),
    Bug("Lion hidden LR not /m", "Table 3 (Adam column, sign update): hidden weights' LR 1/fan_in", "gpt",
        mutate_groups=flat_lr, optimizer="lion"),
    Bug("Adam-atan2 hidden LR not /m", "Table 3 (Adam column, bounded update): hidden weights' LR 1/fan_in", "gpt",
        mutate_groups=flat_lr, optimizer="adam_atan2"),
    Bug("Schedule-Free hidden LR not /m", "Table 3 (Adam column, averaged iterates): hidden weights' LR 1/fan_in",
        "gpt", mutate_groups=flat_lr, optimizer="schedulefree_adamw"),
]


def make_model(bug: Bug, depth: int = 2, **data_options) -> Callable[[int], nn.Module]:
    def make(width: int) -> nn.Module:
        model = build_model(bug.model, width, depth, bug.parametrization, **data_options, **bug.options)
        bug.mutate_model(model)
        return model
    return make


def make_optimizer(bug: Bug) -> Callable[[nn.Module, float], torch.optim.Optimizer]:
    """The bug's optimizer over its μP groups after `mutate_groups` (betas 0.9, 0.95; other settings default)."""
    def make(model: nn.Module, lr: float) -> torch.optim.Optimizer:
        groups = param_groups(model, lr, 0.0, optimizer=bug.optimizer)
        return optimizer_of(bug.optimizer, bug.mutate_groups(groups, model), lr=lr)
    return make
