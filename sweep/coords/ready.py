"""Refuse, in one line, a model or optimizer that is not μP-ready before a coordinate check runs.

What μP needs (Tensor Programs V, Table 3; microsoft/mup's README):
- base shapes on every parameter (`mup.set_base_shapes`; the zoo's `@proxies.mup_builder`), so each
  parameter knows which of its dimensions grow with width and by how much (m);
- a readout that multiplies its output by 1/m (`mup.MuReadout`), never a plain `nn.Linear` whose
  fan-in grows with width while its fan-out stays fixed (`proxies.base_shapes.refuse_plain_readout`);
- a width-aware optimizer: each parameter's LR is the base LR times its multiplier in the chosen optimizer's μP
  table (`proxies.optimizers`: the Adam column lr/m on hidden matrices for AdamW, Lion, Adam-atan2 and
  Schedule-Free AdamW, SGD per MuSGD, Muon's shape-factor correction), as `trainer.optim.build_optimizer`,
  `mup.MuAdamW` or `mup.MuSGD` build it; under Muon, the matrices the table gives Muon are in Muon's groups
  and the rest in AdamW's.
"""
from __future__ import annotations

import math
from collections import Counter

import torch
from torch import nn

from proxies.base_shapes import refuse_plain_readout
from proxies.optimizers import optimizer_rules
from sweep.errors import InputError
from trainer.optim import role_lr_mult


def refuse_unless_mup_ready(model: nn.Module, optimizer: torch.optim.Optimizer, optimizer_name: str,
                            role_lr: dict[str, float] | None = None,
                            width_exps: dict[str, float] | None = None) -> None:
    """Raise InputError naming the first parameter, module or LR that μP cannot work with. `role_lr`, `width_exps`:
    the per-role LR multipliers and width exponents asked for (`optimizer.roles.ROLE.lr_mult`, `.lr_width_exp`), on
    top of the table's."""
    role_lr, width_exps = role_lr or {}, width_exps or {}
    for name, p in model.named_parameters():
        if not hasattr(p, "infshape"):
            raise InputError(f"model: parameter {name} has no base shapes; μP needs mup.set_base_shapes "
                             "(decorate the builder with @proxies.mup_builder(base_width=...))")
    try:
        refuse_plain_readout(model)
    except ValueError as err:
        raise InputError(str(err)) from None
    groups = {id(p): group for group in optimizer.param_groups for p in group["params"]}
    adjust = next((g["adjust_lr_fn"] or "original" for g in optimizer.param_groups if "adjust_lr_fn" in g),
                  "match_rms_adamw")  # torch.optim.Muon's groups say which update scale they use
    table = optimizer_rules(model, optimizer_name, adjust_lr_fn=adjust)
    rules = [(r, groups[id(p)]) for r, (_, p) in zip(table, model.named_parameters(), strict=True)
             if id(p) in groups]
    mult = {r.name: r.lr_mult * role_lr_mult(r, role_lr, width_exps) for r, _ in rules}
    base = Counter(round(g["lr"] / mult[r.name], 12) for r, g in rules).most_common(1)[0][0]
    for rule, group in rules:
        by_muon = "ns_steps" in group  # a torch.optim.Muon group
        if optimizer_name == "muon" and (rule.owner == "muon") != by_muon:
            raise InputError(f"optimizer: {rule.name} ({rule.role}) is updated by {'Muon' if by_muon else 'AdamW'}; "
                             f"μP with Muon gives it to {'AdamW' if by_muon else 'Muon'} (proxies.optimizers): "
                             "build it with trainer.optim.build_optimizer")
        if not math.isclose(group["lr"], base * mult[rule.name], rel_tol=1e-6):
            raise InputError(f"optimizer: {rule.name} ({rule.role}) has lr {group['lr']:.3g}; μP needs "
                             f"{base * mult[rule.name]:.3g} (base lr × {mult[rule.name]:.3g}, the {optimizer_name} "
                             "table of proxies.optimizers): build it with trainer.optim.build_optimizer, mup.MuAdamW "
                             "or mup.MuSGD")
