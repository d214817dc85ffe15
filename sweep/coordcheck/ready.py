"""Refuse, in one line, a model or optimizer that is not μP-ready before a coordinate check runs.

What μP needs (Tensor Programs V, Table 3; microsoft/mup's README):
- base shapes on every parameter (`mup.set_base_shapes`; the zoo's `@proxies.mup_builder`), so each
  parameter knows which of its dimensions grow with width and by how much (m);
- a readout that multiplies its output by 1/m (`mup.MuReadout`), never a plain `nn.Linear` whose
  fan-in grows with width while its fan-out stays fixed (`proxies.base_shapes.refuse_plain_readout`);
- a width-aware optimizer: each parameter's LR is the base LR times its μP multiplier
  (`proxies.parametrization`: Adam lr/m on hidden matrices, SGD per MuSGD), as
  `trainer.optim.build_optimizer`, `mup.MuAdamW` or `mup.MuSGD` build it.
"""
from __future__ import annotations

import math
from collections import Counter

import torch
from torch import nn

from proxies.base_shapes import refuse_plain_readout
from proxies.parametrization import param_rules
from sweep.errors import InputError


def refuse_unless_mup_ready(model: nn.Module, optimizer: torch.optim.Optimizer, optimizer_name: str) -> None:
    """Raise InputError naming the first parameter, module or LR that μP cannot work with."""
    for name, p in model.named_parameters():
        if not hasattr(p, "infshape"):
            raise InputError(f"model: parameter {name} has no base shapes; μP needs mup.set_base_shapes "
                             "(decorate the builder with @proxies.mup_builder(base_width=...))")
    try:
        refuse_plain_readout(model)
    except ValueError as err:
        raise InputError(str(err)) from None
    lr_of = {id(p): group["lr"] for group in optimizer.param_groups for p in group["params"]}
    rules = [(r, lr_of[id(p)]) for r, (_, p) in zip(param_rules(model), model.named_parameters(), strict=True)
             if id(p) in lr_of]
    mult = (lambda r: r.adam_lr_mult) if optimizer_name == "adamw" else (lambda r: r.sgd_lr_mult)
    base = Counter(round(lr / mult(r), 12) for r, lr in rules).most_common(1)[0][0]
    for rule, lr in rules:
        if not math.isclose(lr, base * mult(rule), rel_tol=1e-6):
            raise InputError(f"optimizer: {rule.name} ({rule.role}) has lr {lr:.3g}; μP needs {base * mult(rule):.3g} "
                             f"(base lr × {mult(rule):.3g}, Tensor Programs V Table 3): build it with "
                             "trainer.optim.build_optimizer, mup.MuAdamW or mup.MuSGD")
