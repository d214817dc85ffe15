"""The μP recipe of a run as data, for any training loop: `Recipe.from_config(cfg)`, then `recipe.param_groups(model)`
and `recipe.init_(model)`.

A recipe holds what a RunConfig's μP table (`proxies.parametrization`, `proxies.optimizers`) and its parameter groups
(`trainer.optim.param_groups`) make of the model at the run's width and depth, per parameter *pattern* (the name with
each layer index written `*`: `blocks.*.attn.query.weight`): its role, shape, the optimizer that updates it (under
Muon: Muon or AdamW), its group's LR multiplier, LR, weight decay and ε, its init (mean and std, measured), and its
forward multiplier. The model-side multipliers (attention scale, readout multiplier output_mult / m, residual branch
multiplier) sit beside them, with the run's provenance. Nothing is re-derived here: the groups are the trainer's own,
so a loop that uses `param_groups` trains with the groups `sweep` trains with.

Another framework's model names its parameters its own way: `names` maps each of its names (a regex, first match
wins) to a recipe pattern, or to several for a fused matrix (Megatron's `linear_qkv` is query, key and value stacked
along dim 0). A parameter no regex places, one whose shape is not the recipe's, a fused matrix whose parts the recipe
puts in different groups, or a recipe pattern the model lacks, is a `RecipeError` in one line naming it: a recipe
applied to part of a model is never written silently.

Init (`init_`): each parameter is redrawn as normal(mean, std) with the recipe's measured mean and std (ones for norm
gains, zeros for zero-initialised matrices). The std is measured on one block of the model built at the run's width
(init has no depth factor: CompleteP, arXiv 2505.01618, Table 1), after `model.init.<role>`; the zoo's readout draws a
uniform of that std, `init_` a normal of the same std.
"""
from __future__ import annotations

import json
import math
import re
from dataclasses import asdict, dataclass, field, fields
from typing import Any

import torch
from torch import nn

from proxies.meta import shapes_only
from proxies.parametrization import param_rules, scale_init
from proxies.registry import call_builder, resolve_builder
from proxies.resources import check_fits
from trainer.config import SETTINGS, RunConfig
from trainer.optim import optimizer_of, param_groups
from trainer.secret_text import holds_secret

FORMAT_VERSION = 1
LAYER = re.compile(r"\.\d+\.")
GROUP_SKIP = ("params", "names")


class RecipeError(ValueError):
    """A model or a framework the recipe cannot be applied to; the message is one line naming the parameter or
    the setting."""


def pattern_of(name: str) -> str:
    """`blocks.3.attn.query.weight` → `blocks.*.attn.query.weight`."""
    return LAYER.sub(".*.", name)


@dataclass(frozen=True)
class ParamEntry:
    pattern: str
    role: str
    owner: str  # the optimizer that updates it (under Muon: muon or adamw)
    shape: tuple[int, ...]
    group: int  # index into `Recipe.groups`
    lr_mult: float  # × the base LR (width, depth and role factors)
    lr: float
    weight_decay: float
    eps: float | None
    init_mean: float
    init_std: float
    forward_mult: float
    count: int  # parameters with this pattern (one per layer)


@dataclass(frozen=True)
class Recipe:
    model: dict[str, Any]  # name, width, base_width, depth, parametrization, options
    optimizer: dict[str, Any]  # name, lr, weight_decay, betas, eps, momentum, wd_mode, grad_clip, settings
    schedule: dict[str, Any]
    multipliers: dict[str, float | None]  # attn_scale (None: no attention, or several), readout_mult, branch_mult
    groups: list[dict[str, Any]]  # the trainer's parameter groups, without their parameters
    params: list[ParamEntry]
    budget: dict[str, Any] = field(default_factory=dict)  # steps or tokens, batch_size, seq_len
    provenance: dict[str, Any] = field(default_factory=dict)
    format_version: int = FORMAT_VERSION

    @classmethod
    def from_config(cls, cfg: RunConfig, data_options: dict[str, Any] | None = None) -> Recipe:
        """The recipe of `cfg` at its own width and depth. `data_options`: what its data source tells the model
        (`DataSource.model_options()`: vocab_size, block_size). The model is built on the meta device (no memory);
        its init is measured on a one-block copy at the run's width."""
        m, opt = cfg.model, cfg.optimizer
        options = {**(data_options or {}), **m.options}
        builder = resolve_builder(m.name)
        with shapes_only():
            net = call_builder(builder, m.name, m.width, m.depth, m.parametrization, options)
        groups = param_groups(net, opt.lr, opt.weight_decay, optimizer=opt.name, wd_mode=opt.wd_mode,
                              decay_embeddings=opt.decay_embeddings, eps=opt.eps,
                              adjust_lr_fn=opt.muon.adjust_lr_fn if opt.name == "muon" else "match_rms_adamw",
                              roles=opt.roles.given(), width_exps=opt.roles.width_exps())
        rules = {r.name: r for r in param_rules(net, decay_embeddings=opt.decay_embeddings)}
        entries = _entries(groups, rules, measured_init(builder, cfg, options))
        scales = sorted({float(mod.scale) for mod in net.modules() if isinstance(getattr(mod, "scale", None), float)})
        branch = sorted({float(mod.branch_mult) for mod in net.modules() if hasattr(mod, "branch_mult")})
        readout = [e.forward_mult for e in entries.values() if e.role in ("readout", "tied")]
        return cls(
            model={"name": m.name, "width": m.width, "base_width": net.base_width, "depth": m.depth,
                   "parametrization": m.parametrization, "options": options},
            optimizer={"name": opt.name, "lr": opt.lr, "weight_decay": opt.weight_decay,
                       "betas": [opt.beta1, opt.beta2],
                       "eps": opt.eps, "momentum": opt.momentum, "wd_mode": opt.wd_mode, "grad_clip": opt.grad_clip,
                       "settings": opt.settings().model_dump(mode="json") if opt.settings() is not None else {}},
            schedule=cfg.schedule.model_dump(mode="json"),
            multipliers={"attn_scale": scales[0] if len(scales) == 1 else None,
                         "readout_mult": readout[0] if readout else 1.0,
                         "branch_mult": branch[0] if len(branch) == 1 else 1.0 if not branch else None},
            groups=[{k: v for k, v in g.items() if k not in GROUP_SKIP} for g in groups],
            params=list(entries.values()),
            budget={"steps": cfg.steps, "tokens": cfg.tokens, "batch_size": cfg.batch_size,
                    "seq_len": cfg.data.seq_len},
            provenance={"run": cfg.run_id(), **_public(cfg.provenance.model_dump(mode="json", exclude_defaults=True))})

    def patterns(self) -> set[str]:
        return {e.pattern for e in self.params}

    def entry(self, pattern: str) -> ParamEntry:
        for e in self.params:
            if e.pattern == pattern:
                return e
        raise RecipeError(f"{pattern}: not a pattern of this recipe")

    def placed(self, model: nn.Module, names: list[tuple[str, str | tuple[str, ...]]] | None = None
               ) -> list[tuple[str, nn.Parameter, list[ParamEntry]]]:
        """Each trainable parameter of `model` with the recipe entries it holds (one, or a fused matrix's parts),
        its shape checked; `names`: [(regex on the model's names, recipe pattern or patterns)], None: the recipe's
        own names. Raises `RecipeError` naming the first parameter it cannot place or a pattern the model lacks."""
        by_pattern = {e.pattern: e for e in self.params}
        placed, used = [], {}
        for name, p in model.named_parameters():
            if not p.requires_grad:
                continue
            patterns = _patterns(name, names)
            if patterns is None or any(q not in by_pattern for q in patterns):
                raise RecipeError(f"{name}: no rule of the recipe covers this parameter (shape {tuple(p.shape)}); "
                                  "map it to a recipe pattern or freeze it")
            parts = [by_pattern[q] for q in patterns]
            expected = (sum(e.shape[0] for e in parts), *parts[0].shape[1:])
            if tuple(p.shape) != expected:
                raise RecipeError(f"{name}: shape {tuple(p.shape)} is not the recipe's {expected} for "
                                  f"{' + '.join(patterns)} (width {self.model['width']})")
            if len({e.group for e in parts}) > 1:
                raise RecipeError(f"{name}: fuses {' + '.join(patterns)}, which the recipe puts in different groups; "
                                  "unfuse it")
            placed.append((name, p, parts))
            for q in patterns:
                used[q] = used.get(q, 0) + 1
        missing = [e.pattern for e in self.params if e.pattern not in used]
        if missing:
            raise RecipeError(f"{missing[0]}: the recipe's parameter is not in the model (a different architecture?)")
        self._check_counts(used)
        return placed

    def _check_counts(self, used: dict[str, int]) -> None:
        """Each pattern placed as often as the recipe has it. Layers may differ in count (all by the same depth)
        only when the recipe does not depend on depth (no `depth_alpha`: branch multiplier 1)."""
        depth_free = self.multipliers.get("branch_mult") == 1.0 and "depth_alpha" not in self.model.get("options", {})
        layers = {used[e.pattern] for e in self.params if ".*." in e.pattern}
        for e in self.params:
            if used[e.pattern] == e.count or (depth_free and ".*." in e.pattern and len(layers) == 1):
                continue
            why = (f"export the recipe at the model's depth (depth {self.model.get('depth')}: its multipliers "
                   "depend on depth)" if ".*." in e.pattern and len(layers) == 1 else
                   "each is placed once per layer (two parameters mapped onto one entry?)")
            raise RecipeError(f"{e.pattern}: the model has {used[e.pattern]} of these, the recipe {e.count}; {why}")

    def param_groups(self, model: nn.Module, names: list[tuple[str, str | tuple[str, ...]]] | None = None
                     ) -> list[dict[str, Any]]:
        """torch parameter groups for `model`, in the trainer's order and with its keys (`lr`, `lr_mult`,
        `weight_decay`, `owner`, `eps`, …), for `make_optimizer` or any torch optimizer of the recipe's kind."""
        members: list[list[tuple[str, nn.Parameter]]] = [[] for _ in self.groups]
        for name, p, parts in self.placed(model, names):
            members[parts[0].group].append((name, p))
        return [{"params": [p for _, p in group], "names": [n for n, _ in group], **dict(self.groups[i])}
                for i, group in enumerate(members) if group]

    def make_optimizer(self, model: nn.Module, names: list[tuple[str, str | tuple[str, ...]]] | None = None
                  ) -> torch.optim.Optimizer:
        """The recipe's optimizer over `param_groups(model, names)` (`trainer.optim.optimizer_of`)."""
        o = self.optimizer
        settings = SETTINGS[o["name"]](**o["settings"]) if o["name"] in SETTINGS else None
        return optimizer_of(o["name"], self.param_groups(model, names), lr=o["lr"], betas=tuple(o["betas"]),
                            eps=o["eps"], momentum=o["momentum"], settings=settings)

    @torch.no_grad()
    def init_(self, model: nn.Module, names: list[tuple[str, str | tuple[str, ...]]] | None = None,
              generator: torch.Generator | None = None) -> None:
        """Redraw every parameter as normal(mean, std) of its recipe entry, in place; a fused matrix part by part
        (stacked along dim 0)."""
        for _, p, parts in self.placed(model, names):
            start = 0
            for e in parts:
                rows = p[start:start + e.shape[0]]
                rows.normal_(0.0, 1.0, generator=generator).mul_(e.init_std).add_(e.init_mean)
                start += e.shape[0]

    def to_dict(self) -> dict[str, Any]:
        return json.loads(json.dumps(asdict(self)))

    @classmethod
    def from_dict(cls, data: Any) -> Recipe:
        """The recipe `to_dict` wrote; anything else (a missing or unknown key, a wrong type, a number that is not
        finite, a group index out of range) is a RecipeError naming the field."""
        if not isinstance(data, dict):
            raise RecipeError(f"recipe: a JSON object is needed, not {type(data).__name__}")
        version = data.get("format_version")
        if type(version) is not int or not 1 <= version <= FORMAT_VERSION:
            raise RecipeError(f"format_version: {version!r} is not a recipe format this version reads "
                              f"(1 to {FORMAT_VERSION})")
        _keys(data, {f.name for f in fields(cls)}, {"model", "optimizer", "schedule", "multipliers", "groups",
                                                    "params"}, "recipe")
        for key in ("model", "optimizer", "schedule", "multipliers", "budget", "provenance"):
            if key in data and not isinstance(data[key], dict):
                raise RecipeError(f"{key}: a JSON object is needed, not {type(data[key]).__name__}")
        groups = _list_of_dicts(data["groups"], "groups")
        for i, g in enumerate(groups):
            for key in ("lr", "weight_decay"):
                _finite(g.get(key), f"groups[{i}].{key}")
        params = [_param_entry(e, i, len(groups)) for i, e in enumerate(_list_of_dicts(data["params"], "params"))]
        return cls(**{**data, "params": params})


ENTRY_FIELDS = {f.name for f in fields(ParamEntry)}


def _keys(data: dict, allowed: set[str], required: set[str], where: str) -> None:
    unknown, missing = sorted(set(data) - allowed), sorted(required - set(data))
    if unknown or missing:
        key = (unknown or missing)[0]
        raise RecipeError(f"{where}.{key}: {'unknown key' if unknown else 'missing'}; a recipe holds "
                          f"{', '.join(sorted(allowed))}")


def _list_of_dicts(value: Any, where: str) -> list[dict]:
    if not isinstance(value, list) or not all(isinstance(v, dict) for v in value):
        raise RecipeError(f"{where}: a list of JSON objects is needed")
    return value


def _finite(value: Any, where: str, allow_none: bool = False) -> None:
    if value is None and allow_none:
        return
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise RecipeError(f"{where}: {value!r} is not a finite number")


def _param_entry(e: dict, i: int, n_groups: int) -> ParamEntry:
    where = f"params[{i}]"
    _keys(e, ENTRY_FIELDS, ENTRY_FIELDS, where)
    if not isinstance(e["pattern"], str) or not isinstance(e["role"], str) or not isinstance(e["owner"], str):
        raise RecipeError(f"{where}: pattern, role and owner are text")
    shape = e["shape"]
    if not isinstance(shape, list) or not all(type(d) is int and d >= 0 for d in shape):
        raise RecipeError(f"{where}.shape: {shape!r} is not a list of sizes")
    for key in ("group", "count"):
        if type(e[key]) is not int or e[key] < (1 if key == "count" else 0):
            raise RecipeError(f"{where}.{key}: {e[key]!r} is not a valid {key}")
    if e["group"] >= n_groups:
        raise RecipeError(f"{where}.group: {e['group']} is past the recipe's {n_groups} groups")
    for key in ("lr_mult", "lr", "weight_decay", "init_mean", "init_std", "forward_mult"):
        _finite(e[key], f"{where}.{key}")
    _finite(e["eps"], f"{where}.eps", allow_none=True)
    if e["init_std"] < 0:
        raise RecipeError(f"{where}.init_std: {e['init_std']!r} is negative")
    return ParamEntry(**{**e, "shape": tuple(shape)})


def _entries(groups: list[dict], rules: dict, init: dict[str, tuple[float, float]]) -> dict[str, ParamEntry]:
    """One entry per pattern from the trainer's groups, the μP rules (role, forward multiplier) and the measured init;
    a pattern whose layers fall in different groups or shapes is a RecipeError."""
    entries: dict[str, ParamEntry] = {}
    for index, group in enumerate(groups):
        for name, p in zip(group["names"], group["params"], strict=True):
            pattern = pattern_of(name)
            mean, std = init[pattern]
            entry = ParamEntry(pattern=pattern, role=rules[name].role, owner=group["owner"], shape=tuple(p.shape),
                               group=index, lr_mult=group["lr_mult"], lr=group["lr"],
                               weight_decay=group["weight_decay"], eps=group.get("eps"), init_mean=mean,
                               init_std=std, forward_mult=rules[name].forward_mult, count=1)
            seen = entries.get(pattern)
            if seen is not None and (seen.group, seen.shape) != (index, entry.shape):
                raise RecipeError(f"{name}: its layers differ in group or shape; the recipe needs one per pattern")
            entries[pattern] = entry if seen is None else ParamEntry(**{**asdict(seen), "count": seen.count + 1})
    return entries


def _public(provenance: dict[str, Any]) -> dict[str, Any]:
    """`provenance` unless a text in it holds a password or token (a storage URL with user:password@): every export
    prints or writes the provenance, so such a config is refused by the field's name."""
    for key, value in provenance.items():
        if isinstance(value, str) and holds_secret(value):
            raise RecipeError(f"provenance.{key}: holds a password or token, which an export would print; give the "
                              "storage without it (a ${VAR} in the URL, or --storage-password-env)")
    return provenance


def _patterns(name: str, names: list[tuple[str, str | tuple[str, ...]]] | None) -> tuple[str, ...] | None:
    if names is None:
        return (pattern_of(name),)
    for regex, target in names:
        try:
            hit = re.fullmatch(regex, name)
        except (re.error, TypeError) as err:
            raise RecipeError(f"names: {regex!r} is not a regular expression ({err})") from None
        if hit:
            targets = (target,) if isinstance(target, str) else target
            if not isinstance(targets, tuple | list) or not targets or not all(isinstance(t, str) for t in targets):
                raise RecipeError(f"names: {regex!r} maps to {target!r}; give a recipe pattern or a tuple of them")
            return tuple(targets)
    return None


def measured_init(builder, cfg: RunConfig, options: dict[str, Any]) -> dict[str, tuple[float, float]]:
    """{pattern: (mean, std)} of a copy of the model with one block at the run's width, after `model.init.<role>`,
    drawn from a fixed seed (the measurement, not the run's weights). The mean is the constant of a constant init
    (ones, zeros), else 0."""
    m = cfg.model
    with shapes_only():
        sizes = [p.numel() for p in call_builder(builder, m.name, m.width, 1, m.parametrization, options).parameters()]
    check_fits(4 * sum(sizes) + 8 * max(sizes, default=0), "the one-block copy whose init the recipe measures",
               "model.width")
    state = torch.random.get_rng_state()
    try:
        torch.manual_seed(0)
        one = call_builder(builder, m.name, m.width, 1, m.parametrization, options)
        scale_init(one, m.init.given())
    finally:
        torch.random.set_rng_state(state)
    out = {}
    for name, p in one.named_parameters():
        values = p.detach().double()
        std = float(values.std()) if p.numel() > 1 else 0.0
        out[pattern_of(name)] = (float(values.flatten()[0]) if std == 0 else 0.0, std)  # drawn inits are centred
    return out
