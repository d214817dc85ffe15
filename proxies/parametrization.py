"""The μP table, parameter by parameter: what each parameter's init, LR and forward multipliers are.

For m = width / base width along a parameter's infinite dims (Tensor Programs V, Table 3 and 8;
the rules of microsoft/mup's MuAdam / MuSGD):

| role                                   | Adam LR     | SGD LR              | forward       |
| hidden (two infinite dims)             | lr / m_in   | lr · m_out / m_in   | 1             |
| embedding, input, biases, norm gains   | lr          | lr · m (one inf dim)| 1             |
| readout (`MuReadout`)                  | lr          | lr · m              | output_mult/m |

A tied embedding (role "tied") is an embedding on the way in and a readout on the way out; its
forward multiplier is the readout's.

Init is whatever the model drew (measured here, not assumed). Weight decay applies to weight matrices
only: never to biases or norm gains, to embeddings only when asked. These are the Adam and SGD columns;
every optimizer's table (Lion, Adam-atan2, Schedule-Free AdamW, Muon too) is in `proxies.optimizers`.

Depth transfer, optional (CompleteP: Dey et al. 2025, "Don't be lazy: CompleteP enables compute-efficient
deep transformers", arXiv 2505.01618, Table 1, α column; α = 1/2 is Depth-μP, Yang et al. 2023, "Tensor
Programs VI"). For m_L = depth / base depth and α ∈ [1/2, 1]:

| where                                           | forward           | Adam LR      | AdamW ε    |
| each residual branch (attention, MLP)           | x + m_L^−α · F(x) |              |            |
| in residual blocks: weights, biases, norm gains |                   | × m_L^(α−1)  | × m_L^−α   |
| embeddings, readout, final norm                 |                   | × 1          | × 1        |

The depth factors multiply the width ones above (hidden Adam LR: lr · m_L^(α−1) / m). Init and weight
decay have no depth factor (Table 1). SGD gets no depth factor: Table 1 gives AdamW rules only. Table 1
also scales the blocks' ε by 1/m_N, but in its μP column, i.e. as a width rule with or without depth; this
table's μP (TP5, mup's MuAdamW) leaves ε alone in width, so only the depth factor is applied here.

Roles are the architecture's, not the parametrization's: a matrix that grows along both dims is "hidden" under
SP too (the builder records which dims grow, `proxies.base_shapes`), so per-role settings
(`optimizer.roles.<role>`, `model.init.<role>`) name the same parameters under μP and SP. Their multipliers are
width-free numbers on top of this table: a role's LR is base LR × μP multiplier × its lr_mult, its init the
model's own × its init multiplier (`scale_init`), so an optimum found at the proxy's width holds at any width.

A module declares itself a residual block with two attributes, which a user model can set the same way:
`branch_mult` (m_L^−α, the multiplier its forward applies to each branch) and `depth_lr_mult` (m_L^(α−1));
`depth_multipliers` computes both. Its parameters get Adam LR × depth_lr_mult and AdamW ε × branch_mult (the
branch multiplier scales their gradients, so ε follows it: Table 1's m_L^−α).
"""
from __future__ import annotations

from dataclasses import dataclass

import torch
from mup import MuReadout
from torch import nn

ROLES = ("hidden", "input", "embedding", "readout", "tied", "bias", "norm", "other")
NORMS = (nn.LayerNorm, nn.RMSNorm, nn.GroupNorm, nn.modules.batchnorm._BatchNorm)


@dataclass(frozen=True)
class ParamRule:
    name: str
    shape: tuple[int, ...]
    base_shape: tuple[int, ...]  # the shape at the base width (equal to `shape` along finite dims)
    inf_dims: tuple[int, ...]
    role: str  # hidden | input | embedding | readout | tied (embedding read out) | bias | norm | other
    init_std: float
    adam_lr_mult: float
    sgd_lr_mult: float
    decays: bool
    forward_mult: float
    depth_lr_mult: float  # the depth factor m_L^(α−1), already in adam_lr_mult
    eps_mult: float  # AdamW ε multiplier, m_L^−α inside residual blocks
    width_mult: float  # m = width / base width where a dim grows with width, else 1 (a role's lr_width_exp: m^e)


def depth_multipliers(depth: int, depth_alpha: float | None, base_depth: int | None) -> tuple[float, float]:
    """(branch_mult, depth_lr_mult) = (m_L^−α, m_L^(α−1)) with m_L = depth / base_depth (CompleteP Table 1);
    (1, 1) when depth_alpha is None. Bad options raise a one-line ValueError naming the field."""
    if base_depth is not None and (isinstance(base_depth, bool) or not isinstance(base_depth, int) or base_depth < 1):
        raise ValueError(f"model.options.base_depth: {base_depth!r} is not a positive integer (the proxy's depth)")
    if depth_alpha is None:
        return 1.0, 1.0
    if isinstance(depth_alpha, bool) or not isinstance(depth_alpha, (int, float)) or not 0.5 <= depth_alpha <= 1:
        raise ValueError(f"model.options.depth_alpha: {depth_alpha!r} is not a number in [0.5, 1] "
                         "(0.5: Depth-μP, 1: CompleteP; leave it unset for plain residuals)")
    if base_depth is None:
        raise ValueError("model.options.base_depth: required with depth_alpha "
                         "(the proxy's depth; m_L = depth / base_depth)")
    m = depth / base_depth
    return m ** -depth_alpha, m ** (depth_alpha - 1)


def _roles(model: nn.Module) -> dict[int, tuple[str, float]]:
    """Map id(parameter) → (role, forward multiplier) from the modules that own it."""
    roles: dict[int, tuple[str, float]] = {}
    for module in model.modules():
        for pname, p in module.named_parameters(recurse=False):
            if isinstance(module, MuReadout) and pname == "weight":  # its bias is added after the 1/m
                tied = roles.get(id(p), ("",))[0] == "embedding"
                roles[id(p)] = ("tied" if tied else "readout", module.output_mult / module.width_mult())
            elif isinstance(module, nn.Embedding):
                roles[id(p)] = ("tied", roles[id(p)][1]) if id(p) in roles else ("embedding", 1.0)
            elif isinstance(module, NORMS):
                roles[id(p)] = ("norm", 1.0)
    return roles


def _depth(model: nn.Module) -> dict[int, tuple[float, float]]:
    """Map id(parameter) → (depth LR multiplier, ε multiplier) for parameters inside residual blocks."""
    depth: dict[int, tuple[float, float]] = {}
    for module in model.modules():
        if hasattr(module, "branch_mult"):
            for p in module.parameters():
                depth[id(p)] = (module.depth_lr_mult, module.branch_mult)
    return depth


def width_mult(model: nn.Module, p: nn.Parameter, grows: int) -> float:
    """m = width / base width for a parameter with a dim that grows with width, else 1: the builder's widths where it
    recorded them (`proxies.mup_builder`, so SP, whose base shapes are its own shapes, has m too), else mup's."""
    if not grows:
        return 1.0
    if hasattr(model, "width") and hasattr(model, "base_width"):
        return model.width / model.base_width
    return float(p.infshape.width_mult()) if p.infshape.ninf() else 1.0


def param_rules(model: nn.Module, decay_embeddings: bool = False) -> list[ParamRule]:
    """One `ParamRule` per parameter of a model whose base shapes are set."""
    roles, depth = _roles(model), _depth(model)
    width_dims = getattr(model, "width_dims", {})  # {name: dims that grow with width}, recorded by the builder
    rules = []
    for name, p in model.named_parameters():
        infshape = p.infshape
        ninf = infshape.ninf()
        if ninf > 2:
            raise ValueError(f"{name}: μP is defined for at most 2 infinite dims, this has {ninf}")
        role, forward = roles.get(id(p), (None, 1.0))
        grows = width_dims.get(name, ninf)
        if role is None:
            role = "hidden" if grows == 2 else "input" if p.ndim >= 2 else "bias" if name.endswith("bias") else "other"
        if ninf == 2:
            adam, sgd = 1.0 / infshape.width_mult(), 1.0 / infshape.fanin_fanout_mult_ratio()
        else:
            adam, sgd = 1.0, float(infshape.width_mult()) if ninf == 1 else 1.0
        decays = p.ndim >= 2 and (role not in ("embedding", "tied") or decay_embeddings)
        depth_lr, eps = depth.get(id(p), (1.0, 1.0))
        rules.append(ParamRule(
            name=name, shape=tuple(p.shape), base_shape=tuple(d.base_dim if d.isinf() else d.dim for d in infshape),
            inf_dims=tuple(i for i, d in enumerate(infshape) if d.isinf()),
            role=role, init_std=float(p.detach().float().std()) if p.numel() > 1 and not p.is_meta else 0.0,
            adam_lr_mult=adam * depth_lr, sgd_lr_mult=sgd, decays=decays, forward_mult=forward,
            depth_lr_mult=depth_lr, eps_mult=eps, width_mult=width_mult(model, p, grows),
        ))
    return rules


def scale_init(model: nn.Module, mults: dict[str, float]) -> None:
    """Multiply every parameter of each role in `mults` by its multiplier, in place (after the model's own init;
    `model.init.<role>`). A role the model does not have, or whose parameters are all zero (a zero-initialised
    readout), is a ValueError naming it: its multiplier would change nothing."""
    by_role: dict[str, list[nn.Parameter]] = {}
    params = dict(model.named_parameters())
    for rule in param_rules(model):
        by_role.setdefault(rule.role, []).append(params[rule.name])
    for role, mult in mults.items():
        if role not in by_role:
            raise ValueError(f"model.init.{role}: the model has no {role} parameter (its roles: {', '.join(by_role)})")
        if not any(p.detach().any() for p in by_role[role]):
            raise ValueError(f"model.init.{role}: every {role} parameter is zero-initialised; a multiplier changes "
                             "nothing (drop it, or turn the zero init off)")
        with torch.no_grad():
            for p in by_role[role]:
                p.mul_(mult)
