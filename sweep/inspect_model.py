"""`sweep inspect`: the μP table of a model, one row per parameter."""
from __future__ import annotations

from rich.table import Table

from proxies.parametrization import param_rules
from proxies.registry import build_model
from sweep.errors import InputError
from sweep.models import parse_options


def inspect_table(model: str, width: int, depth: int, parametrization: str, opt: list[str] | None) -> Table:
    if parametrization not in ("mup", "sp"):
        raise InputError(f"--parametrization: {parametrization!r} is not one of mup, sp")
    net = build_model(model, width, depth, parametrization, **parse_options(opt))
    table = Table(title=f"{model} width {width} (base {net.base_width}), depth {depth}, {parametrization}")
    for column in ("parameter", "shape", "inf dims", "role", "init std", "Adam LR ×", "weight decay", "forward ×"):
        table.add_column(column, justify="left" if column in ("parameter", "role") else "right")
    for r in param_rules(net):
        table.add_row(r.name, "×".join(map(str, r.shape)), ",".join(map(str, r.inf_dims)) or "-", r.role,
                      f"{r.init_std:.4g}", f"{r.adam_lr_mult:.4g}", "yes" if r.decays else "no", f"{r.forward_mult:.4g}")
    return table
