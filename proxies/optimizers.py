"""The μP table of each optimizer: for every parameter, which optimizer updates it and with which LR multiplier.

`proxies.parametrization.param_rules` finds each parameter's role, base shape, init and forward multiplier;
those do not depend on the optimizer (μP's init and `MuReadout` are shared). What differs is the LR column,
and for Muon which parameters it owns. m = width / base width along a parameter's infinite dims.

Adam family: AdamW, Lion, Adam-atan2, Schedule-Free AdamW (Tensor Programs V, Table 3, Adam column):

| role                                  | init            | LR        | forward       |
| embedding, input, bias, norm gain     | as base         | lr        | 1             |
| hidden (two infinite dims)            | ∝ 1/√fan_in     | lr / m_in | 1             |
| readout (`MuReadout`)                 | zero or 1/fan_in| lr        | output_mult/m |

The column holds because each coordinate's update is Θ(lr) whatever its gradient's scale:
- AdamW: m̂ / (√v̂ + ε);
- Lion (Chen et al. 2023, "Symbolic Discovery of Optimization Algorithms"): sign(β1·m + (1 − β1)·g) ∈ {±1};
- Adam-atan2 (Everett et al. 2024, "Scaling Exponents Across Parameterizations and Optimizers", §3.4):
  a·atan2(m̂, b·√v̂), bounded and scale-invariant, with no ε (ε's width scaling is a hidden footgun of Adam);
- Schedule-Free AdamW (Defazio et al. 2024, "The Road Less Scheduled"): z takes Adam-normalised steps,
  x_t = (1 − c_t)·x_{t−1} + c_t·z_t averages them and y = (1 − β1)·z + β1·x is where the gradient is taken. The
  averaging weights c_t ∝ t^r · lr_max^power are the same in every group (a constant LR multiplier cancels in
  c_t), so the per-coordinate step size stays Adam's. This is an argument, not a proof: the coordinate check
  is what verifies it.
Depth factors (CompleteP, see `proxies.parametrization`) apply as for AdamW; the ε factor only where there is an
ε (AdamW and Schedule-Free AdamW).

SGD: Tensor Programs V's SGD column (`ParamRule.sgd_lr_mult`), no depth factor.

Muon: `torch.optim.Muon` owns the 2-D weight matrices other than embeddings and readout (roles hidden and
input: the same matrices under μP and SP); every other parameter (embeddings, readout, vectors, tensors of
other rank such as convolutions) is AdamW's, with the Adam column above. Muon's update is
ΔW = lr · mult · s(A, B) · O, where O is the Newton–Schulz orthogonalisation of the momentum (singular values
≈ 1, so ‖O‖_* ≈ 1) and s is torch's `adjust_lr_fn` for a weight of shape (A, B) = (fan_out, fan_in):
    original:         s(A, B) = √max(1, A/B)        (Keller Jordan's Muon)
    match_rms_adamw:  s(A, B) = 0.2 · √max(A, B)    (Liu et al. 2025, "Muon is Scalable for LLM Training")
The spectral condition (Yang, Simon & Bernstein 2023, "A Spectral Condition for Feature Learning", Condition 1)
asks ‖ΔW‖_* = Θ(√(fan_out / fan_in)). Holding it at every width with the LR tuned at the base shape (A₀, B₀):
    mult = √((A/B) / (A₀/B₀)) · s(A₀, B₀) / s(A, B)
A hidden matrix grows along both dims by m, so A/B = A₀/B₀ and
    original:         mult = 1          (s depends on A/B only)
    match_rms_adamw:  mult = 1 / √m     (s grows as √max(A, B))
An input matrix (fan_out = m·A₀ ≥ fan_in, fixed) gets mult = 1 under both (the target and s both grow as √m).
Under SP every base shape is the shape, so mult = 1 and only s scales the update.
Muon's weight decay shrinks W by lr · mult · wd (torch applies it before the shape factor), like AdamW's.
No depth factor is applied to Muon's matrices: CompleteP derives its depth rules for AdamW only.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from torch import nn

from proxies.parametrization import param_rules

ADAM_FAMILY = ("adamw", "lion", "adam_atan2", "schedulefree_adamw")
OPTIMIZERS = (*ADAM_FAMILY, "sgd", "muon")
ADJUST_LR_FNS = ("original", "match_rms_adamw")
WITH_EPS = ("adamw", "schedulefree_adamw")  # Muon's AdamW part is "adamw"


@dataclass(frozen=True)
class OptimizerRule:
    name: str
    role: str  # as `ParamRule.role`
    owner: str  # the optimizer that updates it: the optimizer's name, or "muon" | "adamw" under Muon
    init_std: float
    forward_mult: float
    lr_mult: float  # width and depth factors together
    depth_lr_mult: float  # the depth part of lr_mult
    eps_mult: float  # ε multiplier (1 where the owner has no ε)
    decays: bool
    width_mult: float  # as `ParamRule.width_mult`


def muon_shape_factor(shape: tuple[int, ...], adjust_lr_fn: str) -> float:
    """torch.optim.Muon's s(A, B) for a weight of shape (A, B): √max(1, A/B) or 0.2·√max(A, B)."""
    a, b = shape[:2]
    if adjust_lr_fn == "original":
        return math.sqrt(max(1.0, a / b))
    if adjust_lr_fn == "match_rms_adamw":
        return 0.2 * math.sqrt(max(a, b))
    raise ValueError(f"optimizer.muon.adjust_lr_fn: {adjust_lr_fn!r} is not one of {', '.join(ADJUST_LR_FNS)}")


def muon_lr_mult(shape: tuple[int, ...], base_shape: tuple[int, ...], adjust_lr_fn: str) -> float:
    """mult = √((A/B) / (A₀/B₀)) · s(A₀, B₀) / s(A, B): ‖ΔW‖_* ∝ √(fan_out/fan_in) at every width (module docstring)."""
    (a, b), (a0, b0) = shape[:2], base_shape[:2]
    shape_ratio = muon_shape_factor(base_shape, adjust_lr_fn) / muon_shape_factor(shape, adjust_lr_fn)
    return math.sqrt((a / b) / (a0 / b0)) * shape_ratio


def optimizer_rules(model: nn.Module, optimizer: str, *, adjust_lr_fn: str = "match_rms_adamw",
                    decay_embeddings: bool = False) -> list[OptimizerRule]:
    """One `OptimizerRule` per parameter of a model whose base shapes are set (`adjust_lr_fn`: Muon only)."""
    if optimizer not in OPTIMIZERS:
        raise ValueError(f"optimizer.name: {optimizer!r} is not one of {', '.join(OPTIMIZERS)}")
    rules = []
    for r in param_rules(model, decay_embeddings=decay_embeddings):
        owner = "adamw" if optimizer == "muon" else optimizer
        lr, depth = r.adam_lr_mult, r.depth_lr_mult
        if optimizer == "sgd":
            lr, depth = r.sgd_lr_mult, 1.0
        elif optimizer == "muon" and r.role in ("hidden", "input") and len(r.shape) == 2:
            owner, lr, depth = "muon", muon_lr_mult(r.shape, r.base_shape, adjust_lr_fn), 1.0
        rules.append(OptimizerRule(name=r.name, role=r.role, owner=owner, init_std=r.init_std,
                                   forward_mult=r.forward_mult, lr_mult=lr, depth_lr_mult=depth,
                                   eps_mult=r.eps_mult if owner in WITH_EPS else 1.0, decays=r.decays,
                                   width_mult=r.width_mult))
    return rules
