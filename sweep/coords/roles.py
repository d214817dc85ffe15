"""Per-role settings given on the command line (`--set optimizer.roles.<role>.lr_mult=…`, `model.init.<role>=…`),
checked as a RunConfig checks them and applied to a built model: shared by `sweep coord-check` and `sweep inspect`."""
from __future__ import annotations

import yaml
from torch import nn

from proxies.parametrization import param_rules, scale_init
from sweep.errors import InputError
from sweep.study.space import set_path
from trainer import yaml_io
from trainer.config import ConfigError, RunConfig
from trainer.optim import check_roles

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
