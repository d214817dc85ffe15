"""`sweep inspect`: the μP table of a model, one row per parameter (with depth transfer, its depth factors:
"depth LR ×" is already in "Adam LR ×"; see proxies.parametrization)."""
from __future__ import annotations

from rich.table import Table

from proxies.parametrization import param_rules
from proxies.registry import build_model
from sweep.coordcheck.args import parse_options


def inspect_table(model: str, width: int, depth: int, parametrization: str, opt: list[str] | None) -> Table:
    net = build_model(model, width, depth, parametrization, **parse_options(opt))
    rules = param_rules(net)
    # depth transfer away from the base depth
    depth_columns = any(r.depth_lr_mult != 1 or r.eps_mult != 1 for r in rules)
    table = Table(title=f"{model} width {width} (base {net.base_width}), depth {depth}, {parametrization}")
    columns = ["parameter", "shape", "inf dims", "role", "init std", "Adam LR ×", "weight decay", "forward ×"]
    for column in columns + (["depth LR ×", "AdamW ε ×"] if depth_columns else []):
        table.add_column(column, justify="left" if column in ("parameter", "role") else "right")
    for r in rules:
        row = [r.name, "×".join(map(str, r.shape)), ",".join(map(str, r.inf_dims)) or "-", r.role,
               f"{r.init_std:.4g}", f"{r.adam_lr_mult:.4g}", "yes" if r.decays else "no", f"{r.forward_mult:.4g}"]
        table.add_row(*row, *([f"{r.depth_lr_mult:.4g}", f"{r.eps_mult:.4g}"] if depth_columns else []))
    if depth_columns:
        branch = sorted({m.branch_mult for m in net.modules() if hasattr(m, "branch_mult")})
        table.caption = f"residual branches × {', '.join(f'{b:.4g}' for b in branch)} (depth transfer)"
    return table
