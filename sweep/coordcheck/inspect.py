"""`sweep inspect`: the μP table of a model under one optimizer, one row per parameter: which optimizer updates it
(under Muon: Muon or AdamW) and its LR multiplier from that optimizer's table (`proxies.optimizers`). With depth
transfer, its depth factors: "depth LR ×" is already in "LR ×"; see proxies.parametrization."""
from __future__ import annotations

from rich.table import Table

from proxies.optimizers import optimizer_rules
from proxies.parametrization import param_rules
from proxies.registry import build_model
from sweep.coordcheck.args import parse_options


def inspect_table(model: str, width: int, depth: int, parametrization: str, opt: list[str] | None,
                  optimizer: str = "adamw") -> Table:
    net = build_model(model, width, depth, parametrization, **parse_options(opt))
    shapes = {r.name: r for r in param_rules(net)}
    rules = optimizer_rules(net, optimizer)
    depth_columns = any(r.depth_lr_mult != 1 or r.eps_mult != 1 for r in rules)  # depth transfer off the base depth
    table = Table(title=f"{model} width {width} (base {net.base_width}), depth {depth}, {parametrization}, {optimizer}")
    columns = ["parameter", "shape", "inf dims", "role", "owner", "init std", "LR ×", "weight decay", "forward ×"]
    for column in columns + (["depth LR ×", "ε ×"] if depth_columns else []):
        table.add_column(column, justify="left" if column in ("parameter", "role", "owner") else "right")
    for r in rules:
        s = shapes[r.name]
        row = [r.name, "×".join(map(str, s.shape)), ",".join(map(str, s.inf_dims)) or "-", r.role, r.owner,
               f"{r.init_std:.4g}", f"{r.lr_mult:.4g}", "yes" if r.decays else "no", f"{r.forward_mult:.4g}"]
        table.add_row(*row, *([f"{r.depth_lr_mult:.4g}", f"{r.eps_mult:.4g}"] if depth_columns else []))
    if depth_columns:
        branch = sorted({m.branch_mult for m in net.modules() if hasattr(m, "branch_mult")})
        table.caption = f"residual branches × {', '.join(f'{b:.4g}' for b in branch)} (depth transfer)"
    return table
