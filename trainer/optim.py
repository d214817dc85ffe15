"""Optimizers with the μP multipliers as visible parameter groups.

Each group carries `lr_mult` (from `proxies.parametrization`), so a schedule sets
lr_group = lr(t) · lr_mult and the μP ratios hold at every step; fused AdamW and
`torch.compile` see a plain torch optimizer.

Weight decay (AdamW shrinks p by lr_group · wd_group per step; Loshchilov & Hutter 2019):
- `coupled`: wd_group = wd (torch's default), so a hidden group with lr/m also decays m× less;
- `independent`: wd_group = wd / (width part of lr_mult), so lr_group · wd_group = lr · wd in every
  group and at every width (what mup's MuAdamW does). With depth transfer the depth factor m_L^(α−1)
  stays in the product: CompleteP's Table 1 scales λ with width (λ · m_N) but not with depth.

AdamW groups also carry `eps_mult` and eps_group = eps · eps_mult (m_L^−α inside residual blocks under
depth transfer, else 1; see `proxies.parametrization`). Parameters are grouped by (lr_mult, decays,
eps_mult, depth part of lr_mult); SGD groups have no ε and no depth factor.
"""
from __future__ import annotations

from collections import defaultdict

import torch
from torch import nn

from proxies.parametrization import param_rules

WD_MODES = ("coupled", "independent")


def param_groups(model: nn.Module, lr: float, weight_decay: float, *, optimizer: str = "adamw",
                 wd_mode: str = "coupled", decay_embeddings: bool = False, eps: float = 1e-8) -> list[dict]:
    """Parameter groups keyed by (LR multiplier, decays, ε multiplier, depth LR multiplier), each with `lr`,
    `lr_mult`, `decays`, `weight_decay`, `names`, and for AdamW `eps_mult` and `eps`."""
    if wd_mode not in WD_MODES:
        raise ValueError(f"optimizer.wd_mode: {wd_mode!r} is not one of {', '.join(WD_MODES)}")
    adam = optimizer == "adamw"
    params = dict(model.named_parameters())
    grouped: dict[tuple[float, bool, float, float], list[str]] = defaultdict(list)
    for rule in param_rules(model, decay_embeddings=decay_embeddings):
        if params[rule.name].requires_grad:
            if adam:
                grouped[(rule.adam_lr_mult, rule.decays, rule.eps_mult, rule.depth_lr_mult)].append(rule.name)
            else:
                grouped[(rule.sgd_lr_mult, rule.decays, 1.0, 1.0)].append(rule.name)
    groups = []
    for (mult, decays, eps_mult, depth_mult), names in sorted(grouped.items(), key=lambda kv: (-kv[0][0], kv[0][1], -kv[0][2])):
        wd = 0.0 if not decays else weight_decay if wd_mode == "coupled" else weight_decay * depth_mult / mult
        group = {"params": [params[n] for n in names], "names": names, "lr_mult": mult, "decays": decays,
                 "lr": lr * mult, "weight_decay": wd}
        if adam:
            group.update(eps_mult=eps_mult, eps=eps * eps_mult)
        groups.append(group)
    return groups


def build_optimizer(model: nn.Module, *, name: str = "adamw", lr: float, weight_decay: float = 0.0,
                    betas: tuple[float, float] = (0.9, 0.95), eps: float = 1e-8, momentum: float = 0.9,
                    wd_mode: str = "coupled", decay_embeddings: bool = False) -> torch.optim.Optimizer:
    """AdamW (fused when every parameter is on CUDA) or SGD with momentum, in μP groups."""
    groups = param_groups(model, lr, weight_decay, optimizer=name, wd_mode=wd_mode, decay_embeddings=decay_embeddings, eps=eps)
    if name == "adamw":
        fused = all(p.is_cuda for g in groups for p in g["params"])
        return torch.optim.AdamW(groups, lr=lr, betas=betas, eps=eps, fused=fused or None)
    if name == "sgd":
        return torch.optim.SGD(groups, lr=lr, momentum=momentum)
    raise ValueError(f"optimizer.name: {name!r} is not one of adamw, sgd")
