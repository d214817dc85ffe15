"""`sweep inspect`: the μP table of a model under one optimizer, one row per parameter: which optimizer updates it
(under Muon: Muon or AdamW) and its LR multiplier from that optimizer's table (`proxies.optimizers`). With depth
transfer, its depth factors: "depth LR ×" is already in "LR ×"; see proxies.parametrization.

With per-role settings (`--set optimizer.roles.<role>.lr_mult=…`, `.weight_decay_mult=…`, `model.init.<role>=…`,
checked as a RunConfig checks them) the table shows their effect: "LR ×" is the optimizer's multiplier × the role's
lr_mult × m^lr_width_exp (m = width / base width), "init std" is measured after the init multiplier, and columns
name each role multiplier ("role LR × m^e" where an exponent is set: lr_mult × m^lr_width_exp) and each role's
exponent."""
from __future__ import annotations

import yaml
from rich.table import Table
from torch import nn

from proxies.optimizers import optimizer_rules
from proxies.parametrization import param_rules, scale_init
from proxies.registry import build_model
from sweep.coordcheck.args import parse_options
from sweep.errors import InputError
from sweep.study.space import set_path
from trainer import yaml_io
from trainer.config import ConfigError, RunConfig
from trainer.optim import check_roles, role_lr_mult

ROLE_PATHS = ("optimizer.roles.", "model.init.")


def role_settings(pairs: list[str] | None) -> RunConfig:
    """`["optimizer.roles.embedding.lr_mult=4", "model.init.readout=0.5", …]` → a RunConfig holding them
    (every other field at its default); a bad path or value is an InputError naming it."""
    tree: dict = {"steps": 1}
    for pair in pairs or []:
        path, sep, value = pair.partition("=")
        if not sep or not path.startswith(ROLE_PATHS):
            raise InputError(f"--set: {pair!r} is not PATH=VALUE with PATH under {' or '.join(ROLE_PATHS)}")
        try:
            tree = set_path(tree, path, yaml_io.load(value))
        except yaml.YAMLError as err:
            raise InputError(f"--set {path}: {value!r} is not a YAML value ({' '.join(str(err).split())})") from None
    try:
        return RunConfig.parse(tree)
    except ConfigError as err:
        raise InputError(f"--set: {err}") from None


def apply_roles(net: nn.Module, cfg: RunConfig) -> None:
    """Refuse a role the model does not have, or a decay multiplier on a role that never decays (as training does);
    scale the init of each role `model.init` names."""
    rules = param_rules(net)
    present = {r.role for r in rules}
    for role in cfg.model.init.given().keys() - present:
        raise InputError(f"--set: model.init.{role}: the model has no {role} parameter "
                         f"(its roles: {', '.join(sorted(present))})")
    try:
        check_roles(cfg.optimizer.roles.given(), rules, cfg.optimizer.roles.width_exps())
        scale_init(net, cfg.model.init.given())
    except ValueError as err:
        raise InputError(f"--set: {err}") from None


def inspect_table(model: str, width: int, depth: int, parametrization: str, opt: list[str] | None,
                  optimizer: str = "adamw", settings: list[str] | None = None) -> Table:
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
