"""`sweep inspect`: the μP table of a model under one optimizer, one row per parameter: which optimizer updates it
(under Muon: Muon or AdamW) and its LR multiplier from that optimizer's table (`proxies.optimizers`). With depth
transfer, its depth factors: "depth LR ×" is already in "LR ×"; see proxies.parametrization.

With per-role settings (`--set optimizer.roles.<role>.lr_mult=…`, `.weight_decay_mult=…`, `model.init.<role>=…`,
checked as a RunConfig checks them) the table shows their effect: "LR ×" is the optimizer's multiplier × the role's
lr_mult × m^lr_width_exp (m = width / base width), "init std" is measured after the init multiplier, and columns
name each role multiplier ("role LR × m^e" where an exponent is set: lr_mult × m^lr_width_exp) and each role's
exponent."""
from __future__ import annotations

from rich.table import Table

from proxies.optimizers import optimizer_rules
from proxies.parametrization import param_rules
from proxies.registry import build_model
from sweep.coords.args import parse_options
from sweep.coords.roles import apply_roles, role_settings
from trainer.optim import role_lr_mult


def inspect_table(model: str, width: int, depth: int, parametrization: str, opt: list[str] | None,
                  optimizer: str, settings: list[str] | None = None) -> Table:
    cfg = role_settings(settings)
    roles, init, exps = cfg.optimizer.roles.given(), cfg.model.init.given(), cfg.optimizer.roles.width_exps()
    lr_mults = {role: lr_mult for role, (lr_mult, _) in roles.items()}
    net = build_model(model, width, depth, parametrization, **parse_options(opt))
    apply_roles(net, cfg)
    shapes = {r.name: r for r in param_rules(net)}
    rules = optimizer_rules(net, optimizer)
    depth_columns = any(r.depth_lr_mult != 1 or r.eps_mult != 1 for r in rules)  # depth transfer off the base depth
    role_columns = bool(roles or init)
    table = Table(title=f"{model} width {width} (base {net.base_width}), depth {depth}, {parametrization}, {optimizer}")
    columns = ["parameter", "shape", "inf dims", "role", "owner", "init std", "LR ×", "weight decay", "forward ×"]
    columns += ["role LR × m^e" if exps else "role LR ×", "role WD ×", "init ×"] if role_columns else []
    columns += ["width exp"] if exps else []
    for column in columns + (["depth LR ×", "ε ×"] if depth_columns else []):
        table.add_column(column, justify="left" if column in ("parameter", "role", "owner") else "right")
    for r in rules:
        s = shapes[r.name]
        lr_mult, wd_mult = role_lr_mult(r, lr_mults, exps), roles.get(r.role, (1.0, 1.0))[1]
        row = [r.name, "×".join(map(str, s.shape)), ",".join(map(str, s.inf_dims)) or "-", r.role, r.owner,
               f"{s.init_std:.4g}", f"{r.lr_mult * lr_mult:.4g}", "yes" if r.decays else "no", f"{r.forward_mult:.4g}"]
        row += [f"{lr_mult:.4g}", f"{wd_mult:.4g}", f"{init.get(r.role, 1.0):.4g}"] if role_columns else []
        row += [f"{exps.get(r.role, 0.0):g}"] if exps else []
        table.add_row(*row, *([f"{r.depth_lr_mult:.4g}", f"{r.eps_mult:.4g}"] if depth_columns else []))
    if depth_columns:
        branch = sorted({m.branch_mult for m in net.modules() if hasattr(m, "branch_mult")})
        table.caption = f"residual branches × {', '.join(f'{b:.4g}' for b in branch)} (depth transfer)"
    return table
