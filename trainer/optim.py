"""Optimizers with the μP multipliers as visible parameter groups.

Each group carries `lr_mult` (from the optimizer's table in `proxies.optimizers`), so a schedule sets
lr_group = lr(t) · lr_mult and the μP ratios hold at every step; fused AdamW and `torch.compile` see a plain
torch optimizer.

Weight decay (AdamW shrinks p by lr_group · wd_group per step; Loshchilov & Hutter 2019; Lion, Adam-atan2,
Schedule-Free AdamW and Muon decay by the same product):
- `coupled`: wd_group = wd (torch's default), so a hidden group with lr/m also decays m× less;
- `independent`: wd_group = wd / (width part of lr_mult), so lr_group · wd_group = lr · wd in every
  group and at every width (what mup's MuAdamW does). With depth transfer the depth factor m_L^(α−1)
  stays in the product: CompleteP's Table 1 scales λ with width (λ · m_N) but not with depth.

Groups of an optimizer with ε (AdamW, Schedule-Free AdamW, Muon's AdamW part) also carry `eps_mult` and
eps_group = eps · eps_mult (m_L^−α inside residual blocks under depth transfer, else 1; see
`proxies.parametrization`). Parameters are grouped by (owner, lr_mult, decays, eps_mult, depth part of lr_mult,
role weight-decay multiplier).

Per-role multipliers (`optimizer.roles.<role>`, width-free numbers tuned on the proxy): a role's lr_mult is
the μP multiplier × its `lr_mult` × m^`lr_width_exp` (m = width / base width; the exponent 0 unless set), for every
optimizer (under Muon for its hidden matrices too), and its decay
× its `weight_decay_mult`: coupled, wd_group = wd · wd_mult; independent, wd_group = wd · wd_mult / (width part of
lr_mult, role LR multiplier included), so a role's LR multiplier changes its step and not its decay timescale,
which only wd_mult moves. Every multiplier at 1 gives the same groups, in the same order, as without them.

The libraries: `torch.optim` (AdamW, SGD, Muon), `lion-pytorch` (Lion), `adam-atan2-pytorch` (Adam-atan2, which
torch does not have), `schedulefree` (Schedule-Free AdamW, its authors' implementation).
"""
from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import torch
from adam_atan2_pytorch import AdamAtan2
from lion_pytorch import Lion
from pydantic import BaseModel
from schedulefree import AdamWScheduleFree
from torch import nn

from proxies.optimizers import WITH_EPS, optimizer_rules
from trainer.config import SETTINGS, ConfigError

WD_MODES = ("coupled", "independent")


def param_groups(model: nn.Module, lr: float, weight_decay: float, *, optimizer: str = "adamw",
                 wd_mode: str = "coupled", decay_embeddings: bool = False, eps: float = 1e-8,
                 adjust_lr_fn: str = "match_rms_adamw", roles: dict[str, tuple[float, float]] | None = None,
                 width_exps: dict[str, float] | None = None) -> list[dict]:
    """Parameter groups keyed by (owner, LR multiplier, decays, ε multiplier, depth LR multiplier), each with
    `lr`, `lr_mult`, `decays`, `weight_decay`, `names`, `owner`, where the owner has an ε `eps_mult`, `eps`, and
    where a role's decay multiplier is not 1 `weight_decay_mult`.
    Under Muon, Muon's groups come first. `roles`: {role: (lr_mult, weight_decay_mult)} (`RoleMults.given`), each
    folded into the LR multiplier and the decay of that role's parameters; `width_exps`: {role: e}
    (`RoleMults.width_exps`), that role's LR multiplier × m^e (m = width / base width, `ParamRule.width_mult`)."""
    if wd_mode not in WD_MODES:
        raise ValueError(f"optimizer.wd_mode: {wd_mode!r} is not one of {', '.join(WD_MODES)}")
    params = dict(model.named_parameters())
    grouped: dict[tuple[str, float, bool, float, float, float], list[str]] = defaultdict(list)
    rules = optimizer_rules(model, optimizer, adjust_lr_fn=adjust_lr_fn, decay_embeddings=decay_embeddings)
    roles, width_exps = roles or {}, width_exps or {}
    check_roles(roles, rules, width_exps)
    lr_mults = {role: lr_mult for role, (lr_mult, _) in roles.items()}
    for rule in rules:
        if params[rule.name].requires_grad:
            role_lr, role_wd = role_lr_mult(rule, lr_mults, width_exps), roles.get(rule.role, (1.0, 1.0))[1]
            role_wd = role_wd if rule.decays else 1.0  # no group of its own for a decay it does not have
            key = (rule.owner, rule.lr_mult * role_lr, rule.decays, rule.eps_mult, rule.depth_lr_mult, role_wd)
            grouped[key].append(rule.name)
    groups = []
    for (owner, mult, decays, eps_mult, depth_mult, wd_mult), names in sorted(
            grouped.items(), key=lambda kv: (kv[0][0] != "muon", -kv[0][1], kv[0][2], -kv[0][3])):
        wd = 0.0 if not decays else weight_decay * wd_mult if wd_mode == "coupled" else (
            weight_decay * wd_mult * depth_mult / mult)
        group = {"params": [params[n] for n in names], "names": names, "lr_mult": mult, "decays": decays,
                 "lr": lr * mult, "weight_decay": wd, "owner": owner}
        if wd_mult != 1.0:  # names the group apart from one of the same LR (trainer.signals)
            group["weight_decay_mult"] = wd_mult
        if owner in WITH_EPS:
            group.update(eps_mult=eps_mult, eps=eps * eps_mult)
        groups.append(group)
    return groups


def build_optimizer(model: nn.Module, *, name: str = "adamw", lr: float, weight_decay: float = 0.0,
                    betas: tuple[float, float] = (0.9, 0.95), eps: float = 1e-8, momentum: float = 0.9,
                    wd_mode: str = "coupled", decay_embeddings: bool = False,
                    settings: BaseModel | None = None, roles: dict[str, tuple[float, float]] | None = None,
                    width_exps: dict[str, float] | None = None) -> torch.optim.Optimizer:
    """The optimizer `name` in its μP groups. `settings`: its own section of the RunConfig
    (`OptimizerConfig.settings()`; None: that section's defaults); `roles`, `width_exps`: per-role multipliers and
    width exponents (`param_groups`). Schedule-Free AdamW comes in train mode."""
    settings = settings if settings is not None else SETTINGS[name]() if name in SETTINGS else None
    adjust = settings.adjust_lr_fn if name == "muon" else "match_rms_adamw"
    groups = param_groups(model, lr, weight_decay, optimizer=name, wd_mode=wd_mode, decay_embeddings=decay_embeddings,
                          eps=eps, adjust_lr_fn=adjust, roles=roles, width_exps=width_exps)
    return optimizer_of(name, groups, lr=lr, betas=betas, eps=eps, momentum=momentum, settings=settings)


def optimizer_of(name: str, groups: list[dict], *, lr: float, betas: tuple[float, float] = (0.9, 0.95),
                 eps: float = 1e-8, momentum: float = 0.9, settings: BaseModel | None = None) -> torch.optim.Optimizer:
    """The optimizer `name` over groups as `param_groups` makes them (under Muon, each group's `owner` says
    which part takes it)."""
    settings = settings if settings is not None else SETTINGS[name]() if name in SETTINGS else None
    if name == "adamw":
        return _adamw(groups, lr, betas, eps)
    if name == "sgd":
        return torch.optim.SGD(groups, lr=lr, momentum=momentum)
    if name == "lion":
        return Lion(groups, lr=lr, betas=(settings.beta1, settings.beta2))
    if name == "adam_atan2":
        return AdamAtan2(groups, lr=lr, betas=betas)
    if name == "schedulefree_adamw":
        optimizer = AdamWScheduleFree(groups, lr=lr, betas=betas, eps=eps, warmup_steps=settings.warmup_steps,
                                      r=settings.r, weight_lr_power=settings.weight_lr_power)
        optimizer.train()  # the loop trains first; it switches to eval() around evaluation and checkpoints
        return optimizer
    if name == "muon":
        muon = torch.optim.Muon([g for g in groups if g["owner"] == "muon"], lr=lr, momentum=settings.momentum,
                                nesterov=settings.nesterov, ns_steps=settings.ns_steps,
                                adjust_lr_fn=settings.adjust_lr_fn)
        return MuonWithAdamW(muon, _adamw([g for g in groups if g["owner"] == "adamw"], lr, betas, eps))
    raise ValueError(f"optimizer.name: {name!r} is not one of adamw, sgd, muon, lion, schedulefree_adamw, adam_atan2")


def role_lr_mult(rule, lr_mults: dict[str, float], width_exps: dict[str, float]) -> float:
    """A parameter's role factor on its optimizer's table: the role's lr_mult × m^lr_width_exp (m = width / base
    width, `rule.width_mult`); 1 for a role given neither."""
    return lr_mults.get(rule.role, 1.0) * rule.width_mult ** width_exps.get(rule.role, 0.0)


def check_roles(roles: dict[str, tuple[float, float]], rules: list, width_exps: dict[str, float] | None = None) -> None:
    """A role given multipliers ({role: (lr_mult, weight_decay_mult)}) must be one the model has (not
    `optimizer.roles.tied` on an untied model), and one given a decay multiplier must have a parameter that decays
    (norm gains and biases never do, embeddings only with `decay_embeddings`): either multiplier would change
    nothing, and is a ConfigError (bad input) naming it. `rules`: the model's per-parameter rules (each with role,
    decays). A role given only a width exponent must be one the model has too."""
    roles = {role: (1.0, 1.0) for role in width_exps or {}} | roles
    present, decaying = {r.role for r in rules}, {r.role for r in rules if r.decays}
    for role, (_, wd_mult) in roles.items():
        if role not in present:
            raise ConfigError(f"optimizer.roles.{role}: the model has no {role} parameter "
                             f"(its roles: {', '.join(sorted(present))})")
        if wd_mult != 1.0 and role not in decaying:
            raise ConfigError(f"optimizer.roles.{role}.weight_decay_mult: no {role} parameter is decayed (decay "
                             "applies to matrices; to embeddings only with optimizer.decay_embeddings), so a "
                             "multiplier changes nothing")


@contextmanager
def averaged_weights(optimizer: torch.optim.Optimizer) -> Iterator[None]:
    """Inside the block the parameters are what evaluation and checkpoints need; after it, training's again.

    Schedule-Free AdamW (Defazio et al. 2024) takes gradients at y = (1 − β1)·z + β1·x but its answer is the
    average x: `eval()` moves the parameters to x, `train()` back to y (from x and z). A checkpoint written inside
    holds x, z and eval mode, as its authors ask; `train_mode` after loading it gives the y the run left.
    Every other optimizer's parameters are its answer: nothing changes."""
    if not isinstance(optimizer, AdamWScheduleFree):
        yield
        return
    optimizer.eval()
    try:
        yield
    finally:
        optimizer.train()


def train_mode(optimizer: torch.optim.Optimizer) -> None:
    """After loading a checkpoint written in `averaged_weights`: Schedule-Free's parameters back to y (its step
    refuses to run in eval mode); other optimizers are always in train mode."""
    if isinstance(optimizer, AdamWScheduleFree):
        optimizer.train()


def _adamw(groups: list[dict], lr: float, betas: tuple[float, float], eps: float) -> torch.optim.AdamW:
    """AdamW, fused when every parameter is on CUDA."""
    fused = all(p.is_cuda for g in groups for p in g["params"])
    return torch.optim.AdamW(groups, lr=lr, betas=betas, eps=eps, fused=fused or None)


class MuonWithAdamW(torch.optim.Optimizer):
    """Muon on the hidden matrices and AdamW on the rest, as one optimizer (torch has no combinator).

    Its `param_groups` are the two parts' own group dicts, Muon's first, so a scheduler, `GradScaler`, gradient
    clipping and `zero_grad` act on both; `step` steps both; the state dict is {"muon": …, "adamw": …}.
    """

    def __init__(self, muon: torch.optim.Muon, adamw: torch.optim.AdamW):
        self.parts = {"muon": muon, "adamw": adamw}
        super().__init__([g for part in self.parts.values() for g in part.param_groups], {})
        self._share_groups()

    def _share_groups(self) -> None:
        self.param_groups = [g for part in self.parts.values() for g in part.param_groups]

    def step(self, closure=None):
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        for part in self.parts.values():
            part.step()
        return loss

    def state_dict(self) -> dict[str, Any]:
        return {name: part.state_dict() for name, part in self.parts.items()}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        for name, part in self.parts.items():
            part.load_state_dict(state_dict[name])
        self._share_groups()  # loading replaces each part's group dicts
