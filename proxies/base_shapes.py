"""Base shapes: which dimensions of each parameter grow with width, read off the model itself.

μP needs, for every parameter, the dimensions that scale with width ("infinite" dims) and the
ratio m = width / base width along them (Tensor Programs V, §4 and Appendix; microsoft/mup
`set_base_shapes`). They are never hand-written: the builder makes two more copies of the model
on the meta device (no memory, no init cost), one at the base width and one at twice the base
width; a dimension that differs between the two is infinite.

Under SP every multiplier is 1 (mup's `set_base_shapes(model, None)`), so at the base width the
μP and SP models are the same network, parameter for parameter.

A μP model has no plain `nn.Linear` readout (fan-in grows with width, fan-out fixed): its logits
need the 1/m of `mup.MuReadout` (Tensor Programs V, Table 3). The builder refuses such a model with
a one-line ValueError naming the module, rather than mup's assertion from inside `set_base_shapes`.
"""
from __future__ import annotations

import functools
from collections.abc import Callable
from pathlib import Path

import mup
from torch import nn

from proxies.meta import shapes_only

PARAMETRIZATIONS = ("mup", "sp")


def mup_builder(base_width: int) -> Callable:
    """Turn `make(width, depth, parametrization, **options) -> nn.Module` into a zoo builder.

    The returned builder has the same signature, declares `base_width`, and returns a model
    whose parameters carry `p.infshape` (μP multipliers) with readout init rescaled once, and records
    `model.width_dims` (`width_dims`), `model.width` and `model.base_width` under both parametrizations.
    """

    def decorate(make: Callable[..., nn.Module]) -> Callable[..., nn.Module]:
        @functools.wraps(make)
        def build(width: int, depth: int, parametrization: str = "mup", **options) -> nn.Module:
            if parametrization not in PARAMETRIZATIONS:
                raise ValueError(f"model.parametrization: {parametrization!r} is not one of "
                                 f"{', '.join(PARAMETRIZATIONS)}")
            model = make(width, depth, parametrization=parametrization, **options)
            with shapes_only():
                base = make(base_width, depth, parametrization=parametrization, **options)
                delta = make(2 * base_width, depth, parametrization=parametrization, **options)
            model.width_dims = width_dims(base, delta)
            if parametrization == "sp":
                mup.set_base_shapes(model, None)
            else:
                mup.set_base_shapes(model, base, delta=delta, do_assert=False)
                refuse_plain_readout(model)
            model.width, model.base_width = width, base_width
            model.parametrization = parametrization
            return model

        build.base_width = base_width
        return build

    return decorate


def width_dims(base: nn.Module, delta: nn.Module) -> dict[str, int]:
    """{parameter name: how many of its dims grow with width}, read off two widths: the structure that names a
    parameter's role (`proxies.parametrization`) under SP as under μP, where SP's multipliers are all 1."""
    return {name: sum(a != b for a, b in zip(p.shape, q.shape, strict=True))
            for (name, p), (_, q) in zip(base.named_parameters(), delta.named_parameters(), strict=True)}


def save_base_shapes(model: nn.Module, path: str | Path) -> None:
    """Write the model's base shapes (YAML, mup's .bsh format) so a run can be rebuilt exactly."""
    mup.save_base_shapes(model, str(path))


def refuse_plain_readout(model: nn.Module) -> None:
    """Raise ValueError naming the first `nn.Linear` (not `MuReadout`) whose fan-in is infinite and fan-out finite."""
    for name, m in model.named_modules():
        if (isinstance(m, nn.Linear) and not isinstance(m, mup.MuReadout) and hasattr(m.weight, "infshape")
                and m.weight.infshape[1].isinf() and not m.weight.infshape[0].isinf()):
            raise ValueError(f"model.readout: {name} is a plain nn.Linear readout (fan-in grows with width, fan-out "
                             "fixed); μP needs mup.MuReadout, which scales the logits by 1/m "
                             "(Tensor Programs V, Table 3)")


def has_base_shapes(model: nn.Module) -> bool:
    return all(hasattr(p, "infshape") for p in model.parameters())
