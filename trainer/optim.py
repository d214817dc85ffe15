"""Optimizers with the μP multipliers as visible parameter groups.

Each group carries `lr_mult` (from `proxies.parametrization`), so a schedule sets
lr_group = lr(t) · lr_mult and the μP ratios hold at every step; fused AdamW and
`torch.compile` see a plain torch optimizer.

Weight decay (AdamW shrinks p by lr_group · wd_group per step; Loshchilov & Hutter 2019):
- `coupled`: wd_group = wd (torch's default), so a hidden group with lr/m also decays m× less;
- `independent`: wd_group = wd / lr_mult, so lr_group · wd_group = lr · wd in every group and
  at every width (what mup's MuAdamW does).
"""
from __future__ import annotations

from collections import defaultdict

import torch
from torch import nn

from proxies.parametrization import param_rules

WD_MODES = ("coupled", "independent")


def param_groups(model: nn.Module, lr: float, weight_decay: float, *, optimizer: str = "adamw",
                 wd_mode: str = "coupled", decay_embeddings: bool = False) -> list[dict]:
    """Parameter groups keyed by (LR multiplier, decays), each with `lr`, `lr_mult`, `decays`, `weight_decay`, `names`."""
    if wd_mode not in WD_MODES:
        raise ValueError(f"optimizer.wd_mode: {wd_mode!r} is not one of {', '.join(WD_MODES)}")
    params = dict(model.named_parameters())
    grouped: dict[tuple[float, bool], list[str]] = defaultdict(list)
    for rule in param_rules(model, decay_embeddings=decay_embeddings):
        if params[rule.name].requires_grad:
            mult = rule.adam_lr_mult if optimizer == "adamw" else rule.sgd_lr_mult
            grouped[(mult, rule.decays)].append(rule.name)
    groups = []
    for (mult, decays), names in sorted(grouped.items(), key=lambda kv: (-kv[0][0], kv[0][1])):
        wd = 0.0 if not decays else weight_decay if wd_mode == "coupled" else weight_decay / mult
        groups.append({"params": [params[n] for n in names], "names": names, "lr_mult": mult, "decays": decays,
                       "lr": lr * mult, "weight_decay": wd})
    return groups


def build_optimizer(model: nn.Module, *, name: str = "adamw", lr: float, weight_decay: float = 0.0,
                    betas: tuple[float, float] = (0.9, 0.95), eps: float = 1e-8, momentum: float = 0.9,
                    wd_mode: str = "coupled", decay_embeddings: bool = False) -> torch.optim.Optimizer:
    """AdamW (fused when every parameter is on CUDA) or SGD with momentum, in μP groups."""
    groups = param_groups(model, lr, weight_decay, optimizer=name, wd_mode=wd_mode, decay_embeddings=decay_embeddings)
    if name == "adamw":
        fused = all(p.is_cuda for g in groups for p in g["params"])
        return torch.optim.AdamW(groups, lr=lr, betas=betas, eps=eps, fused=fused or None)
    if name == "sgd":
        return torch.optim.SGD(groups, lr=lr, momentum=momentum)
    raise ValueError(f"optimizer.name: {name!r} is not one of adamw, sgd")
