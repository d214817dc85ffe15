"""The μP table, parameter by parameter: what each parameter's init, LR and forward multipliers are.

For m = width / base width along a parameter's infinite dims (Tensor Programs V, Table 3 and 8;
the rules of microsoft/mup's MuAdam / MuSGD):

| role                                   | Adam LR     | SGD LR              | forward       |
| hidden (two infinite dims)             | lr / m_in   | lr · m_out / m_in   | 1             |
| embedding, input, biases, norm gains   | lr          | lr · m (one inf dim)| 1             |
| readout (`MuReadout`)                  | lr          | lr · m              | output_mult/m |

A tied embedding (role "tied") is an embedding on the way in and a readout on the way out; its
forward multiplier is the readout's.

Init is whatever the model drew (measured here, not assumed). Weight decay applies to weight
matrices only: never to biases or norm gains, to embeddings only when asked.
"""
from __future__ import annotations

from dataclasses import dataclass

from mup import MuReadout
from torch import nn

NORMS = (nn.LayerNorm, nn.RMSNorm, nn.GroupNorm, nn.modules.batchnorm._BatchNorm)


@dataclass(frozen=True)
class ParamRule:
    name: str
    shape: tuple[int, ...]
    inf_dims: tuple[int, ...]
    role: str  # hidden | input | embedding | readout | tied (embedding read out) | bias | norm | other
    init_std: float
    adam_lr_mult: float
    sgd_lr_mult: float
    decays: bool
    forward_mult: float


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


def param_rules(model: nn.Module, decay_embeddings: bool = False) -> list[ParamRule]:
    """One `ParamRule` per parameter of a model whose base shapes are set."""
    roles = _roles(model)
    rules = []
    for name, p in model.named_parameters():
        infshape = p.infshape
        ninf = infshape.ninf()
        if ninf > 2:
            raise ValueError(f"{name}: μP is defined for at most 2 infinite dims, this has {ninf}")
        role, forward = roles.get(id(p), (None, 1.0))
        if role is None:
            role = "hidden" if ninf == 2 else "input" if p.ndim >= 2 else "bias" if name.endswith("bias") else "other"
        if ninf == 2:
            adam, sgd = 1.0 / infshape.width_mult(), 1.0 / infshape.fanin_fanout_mult_ratio()
        else:
            adam, sgd = 1.0, float(infshape.width_mult()) if ninf == 1 else 1.0
        decays = p.ndim >= 2 and (role not in ("embedding", "tied") or decay_embeddings)
        rules.append(ParamRule(
            name=name, shape=tuple(p.shape), inf_dims=tuple(i for i, d in enumerate(infshape) if d.isinf()),
            role=role, init_std=float(p.detach().float().std()) if p.numel() > 1 else 0.0,
            adam_lr_mult=adam, sgd_lr_mult=sgd, decays=decays, forward_mult=forward,
        ))
    return rules
