"""The rules composed: a proxy trial's RunConfig and a target → the full-size RunConfig and what changed.

Order (each step reads what the steps before it set; tests/test_transfer_rules.py holds it):
0. anchor: a setting a fitted law will move starts from the optimum `sweep verify` measured at the proxy's own
   point (its width, depth, batch and tokens, with the trial's other settings) where one was measured, not from
   the trial's value: the best of many single-seed trials sits off the optimum (the winner's curse), and the law
   was measured around the optimum.
1. width: μP keeps the base settings; the multipliers follow m = width / base width. Under `--role-rule fitted` a
   per-role multiplier whose optimum `sweep verify --param PATH` measured moving with width follows that law,
   mult' = mult·(W'/W)^s (sweep/rules/fitted.py), where μP's table left a role's exponent off.
2. depth: only under the proxy's own depth rule (`model.options.depth_alpha`, CompleteP).
3. budget: the target's steps or tokens (default: the proxy's tokens).
4. batch: `none`, `linear`, `sqrt` or `noise` sets the LR (sqrt also β₁, β₂, ε); then the fitted laws
   (`--batch-rule fitted`, `--horizon-rule fitted`, `--depth-rule fitted`) scale every setting a law was measured
   for, η' = η·(B'/B)^b·(D'/D)^d·(L'/L)^l (sweep/rules/fitted.py). `--batch-rule fitted` with AdamW also moves
   β₁, β₂ and ε by the SDE rule (sqrt's, without its LR; Malladi et al. 2022) unless a law measured them, as the
   batch ladder moved them at each of its values (sweep/rules/axis.py): a law is applied to the runs it measured.
5. warmup: as a fraction of the run or as tokens; never fewer steps than the proxy's when 4 raised the LR.
6. β₂ at a constant half-life in tokens, unless 4 set it (sqrt's and fitted's SDE rule keeps the same half-life to
   first order, a fitted law measured it).
7. weight decay at a constant AdamW timescale 1/(η·λ), with the η of step 4, unless a fitted law measured it.

The proxy's optimizer and its own section travel as they are (width scaling is its μP table's, applied when the
run builds its groups). Rule 6 reads `optimizer.beta2` where it is a second-moment EMA over steps: AdamW,
Adam-atan2, Schedule-Free AdamW and Muon's AdamW part; Lion's β's (a sign of an interpolation, and the momentum)
and Muon's momentum are kept: no rule for them at a new batch is published. Rule 7 applies to every optimizer:
each shrinks the weights by lr·wd per step (decoupled for all but SGD, whose torch decay is L2 with the same
lr·wd per step), so 1/(η·λ) is the decay's timescale in steps for each.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from proxies.registry import base_width_of
from sweep.errors import InputError
from sweep.rules import batch as batch_rules
from sweep.rules import horizon
from sweep.rules.change import Change
from sweep.rules.fitted import EXTRAPOLATION, Law
from sweep.rules.target import MIN_STEPS, Target
from trainer.config import ConfigError, RunConfig

SECOND_MOMENT_BETA2 = ("adamw", "adam_atan2", "schedulefree_adamw", "muon")  # optimizer.beta2: an Adam v EMA


@dataclass
class Transferred:
    config: RunConfig
    changes: list[Change] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    laws: list[dict] = field(default_factory=list)  # each fitted law applied, with its interval and the textbook's


class _Edit:
    """The target's values as a RunConfig dict, with every change recorded."""

    def __init__(self, proxy: RunConfig):
        self.run = proxy.model_dump(mode="json")
        self.changes: list[Change] = []

    def get(self, path: str) -> Any:
        node = self.run
        for part in path.split("."):
            node = node[part]
        return node

    def set(self, rule: str, path: str, after: Any, formula: str) -> None:
        *parents, last = path.split(".")
        node = self.run
        for part in parents:
            node = node[part]
        before = node[last]
        if before != after:
            node[last] = after
            self.changes.append(Change(rule, path, before, after, formula))


def transfer_run(proxy: RunConfig, target: Target, tokens_per_example: int,
                 b_noise: float | None = None, laws: tuple[Law, ...] = (),
                 anchors: dict[str, dict] | None = None) -> Transferred:
    """Apply the rules in order (module docstring) to the proxy's RunConfig; bad targets are InputErrors.
    `anchors`: {setting: {value, optima, sources}} measured at the proxy's point (`sweep.rules.ladder`); None when
    nobody looked (a setting without one is then carried from the trial without a remark)."""
    target.check()
    edit, warnings = _Edit(proxy), []
    if anchors is not None:
        proxy = _anchor(edit, proxy, target, laws, anchors, warnings)
    opt = proxy.optimizer
    _width(edit, proxy, target)
    records = _roles(edit, proxy, target, laws, warnings)
    _depth(edit, proxy, target)

    batch, tps = proxy.batch_size, proxy.batch_size * tokens_per_example
    proxy_steps = proxy.total_steps(tokens_per_example)
    new_batch = target.batch_size or batch
    kappa = new_batch / batch
    edit.set("batch", "batch_size", new_batch, "the target's batch size")
    if new_batch % proxy.grad_accum:
        edit.set("batch", "grad_accum", 1, f"grad_accum {proxy.grad_accum} does not divide batch {new_batch}")
    _budget(edit, proxy, target, proxy_steps * tps)
    new_tps = new_batch * tokens_per_example
    new_steps = RunConfig.parse({**edit.run, "provenance": {}}).total_steps(tokens_per_example)
    if target.tokens is not None and target.tokens < MIN_STEPS * new_tps:  # as `sweep plan` holds it (--steps: check)
        raise InputError(f"--tokens: at least {MIN_STEPS} steps of the full run's batch {new_batch} "
                         f"({MIN_STEPS * new_tps} tokens), got {target.tokens}")

    lr = _batch(edit, proxy, target, kappa, b_noise, warnings)
    ratios = {"batch_size": (batch, new_batch, target.batch_rule == "fitted"),
              "tokens": (proxy_steps * tps, new_steps * new_tps, target.horizon == "fitted"),
              "depth": (proxy.model.depth, edit.get("model.depth"), target.depth_rule == "fitted")}
    records += _fitted(edit, target, laws, ratios, warnings)
    fitted = {r["param"] for r in records}
    sde = target.batch_rule == "fitted" and opt.name == "adamw" and kappa != 1
    if sde:
        _sde_moments(edit, opt, kappa, fitted)
    lr = edit.get("optimizer.lr")
    _warmup(edit, proxy, target, proxy_steps, new_steps, tps, new_tps, lr_grew=lr > opt.lr)
    if opt.name in SECOND_MOMENT_BETA2 and target.beta2 == "halflife" and target.batch_rule != "sqrt" and not sde \
            and "optimizer.beta2" not in fitted:
        edit.set("horizon.beta2", "optimizer.beta2", horizon.beta_constant_halflife(opt.beta2, tps, new_tps),
                 f"β2' = β2^(B'/B): half-life {horizon.halflife_tokens(opt.beta2, tps):.4g} tokens kept")
    if opt.weight_decay > 0 and target.weight_decay != "none" and "optimizer.weight_decay" not in fitted:
        fraction = target.weight_decay == "fraction"
        wd = horizon.weight_decay_constant_timescale(opt.weight_decay, opt.lr, lr, tps, new_tps,
                                                     proxy_steps * tps if fraction else None,
                                                     new_steps * new_tps if fraction else None)
        tau = horizon.adamw_timescale(opt.lr, opt.weight_decay) * tps
        kept = f"τ/D = {tau / (proxy_steps * tps):.4g} of the run" if fraction else f"τ = B/(η·λ) = {tau:.4g} tokens"
        edit.set(f"horizon.weight_decay.{target.weight_decay}", "optimizer.weight_decay", wd,
                 f"AdamW timescale kept (Wang & Aitchison 2024): {kept}")
    try:
        config = RunConfig.parse(edit.run)
    except ConfigError as err:
        raise InputError(f"transfer: the transferred config is invalid ({err})") from None
    return Transferred(config, edit.changes, warnings, records)


def _anchor(edit: _Edit, proxy: RunConfig, target: Target, laws: tuple[Law, ...], anchors: dict[str, dict],
            warnings: list[str]) -> RunConfig:
    """Step 0: the proxy with each setting a fitted law will move at its measured optimum, where one was measured."""
    asked = {"batch_size": target.batch_rule, "tokens": target.horizon, "depth": target.depth_rule}
    moved = sorted({law.param for law in laws if asked.get(law.axis) == "fitted"})
    update = {}
    for param in moved:
        field = param.removeprefix("optimizer.")
        if param not in anchors:
            warnings.append(f"{param} starts from the trial's value: no `sweep verify` of it from this trial fitted "
                            "an optimum at the proxy's own point (a vertex inside its grid, not a poor fit), and the "
                            "best of single-seed trials sits off it")
            continue
        anchor = anchors[param]
        update[field] = anchor["value"]
        optima = ", ".join(f"{v:.4g}" for v in anchor["optima"])
        edit.set("anchor", param, anchor["value"],
                 f"the optimum measured at the proxy's point (geometric mean of {optima}: "
                 f"{', '.join(anchor['sources'])}) in place of the trial's, the best of single-seed trials")
    return proxy.model_copy(update={"optimizer": proxy.optimizer.model_copy(update=update)}) if update else proxy


def _roles(edit: _Edit, proxy: RunConfig, target: Target, laws: tuple[Law, ...], warnings: list[str]) -> list[dict]:
    """Step 1 under `--role-rule fitted`: each per-role multiplier with a width law, by that law."""
    if target.role_rule != "fitted":
        return []
    found = {law.param: law for law in laws if law.axis == "width"}
    if not found:
        warnings.append("--role-rule fitted: no per-role setting of the trial has a width law with an interval "
                        "(`sweep verify SPEC --param optimizer.roles.ROLE.lr_mult`); every role kept as tuned")
    records = []
    for path, law in found.items():
        times = law.beyond(proxy.model.width, target.width)
        if times > EXTRAPOLATION and not target.extrapolate:
            raise InputError(law.past((proxy.model.width, target.width), "--role-rule", "width"))
        value, ratio = edit.get(path), target.width / proxy.model.width
        new, low, high = law.scale(value, ratio)
        records.append(law.record(value, new, (low, high), ratio, times > EXTRAPOLATION, {"kept": value}))
        edit.set("width.fitted", path, new,
                 f"{law.describe(proxy.model.width, target.width, 'width')} → [{low:.4g}, {high:.4g}]"
                 + (" EXTRAPOLATED" if times > EXTRAPOLATION else ""))
    return records


def _fitted(edit: _Edit, target: Target, laws: tuple[Law, ...], ratios: dict, warnings: list[str]) -> list[dict]:
    """Step 4's fitted laws: every setting a law was measured for, scaled along each axis whose rule is `fitted`;
    an axis asked for without a measured LR law, or a target past the measured range, is refused."""
    flags = {"batch_size": "--batch-rule", "tokens": "--horizon-rule", "depth": "--depth-rule"}
    records = []
    for axis, (before, after, asked) in ratios.items():
        if asked and before == after:
            warnings.append(f"{flags[axis]} fitted: the target keeps the proxy's {axis} ({before:g}), so no law "
                            "applies along it")
        if not asked or before == after:
            continue
        found = [law for law in laws if law.axis == axis]
        if not any(law.param == "optimizer.lr" for law in found):
            raise InputError(f"{flags[axis]} fitted: no law of optimizer.lr with an interval measured across "
                             f"{axis}; run `sweep verify SPEC --across {axis}=…` first (an interval needs points "
                             "to spare beyond the valleys' fit: 2+ seeds, or 3+ axis values)")
        for law in found:
            ratio, times = after / before, law.beyond(before, after)
            if times > EXTRAPOLATION and not target.extrapolate:
                raise InputError(law.past((before, after), flags[axis], axis))
            undecided(law, flags[axis], warnings)
            value = edit.get(law.param)
            new, low, high = law.scale(value, ratio)
            textbook = {"linear": value * ratio, "sqrt": value * ratio ** 0.5} if axis == "batch_size" else \
                {"kept": value}
            records.append(law.record(value, new, (low, high), ratio, times > EXTRAPOLATION, textbook))
            flag = " EXTRAPOLATED" if times > EXTRAPOLATION else ""
            edit.set(f"{axis}.fitted", law.param, new,
                     f"{law.describe(before, after, axis)} → [{low:.4g}, {high:.4g}]; textbook "
                     + ", ".join(f"{k} {v:.4g}" for k, v in textbook.items()) + flag)
    composed(laws, ratios, warnings)
    return records


def composed(laws: tuple[Law, ...], ratios: dict, warnings: list[str]) -> None:
    """Batch and horizon laws applied together compose as independent, θ* ∝ B^a·D^b: the batch law at the proxy's
    tokens, then the horizon law at the target's batch. The horizon law was measured at its ladder's batch; where
    that is not the target's, the product assumes the horizon's slope does not change with the batch, which no
    ladder measured (on a byte-level gpt at 4× batch and tokens it set the LR 0.55 octave below the target's
    optimum, benchmarks/README.md), and the compounded interval does not price it."""
    batch, tokens = ratios.get("batch_size", (1, 1, False)), ratios.get("tokens", (1, 1, False))
    if not (batch[2] and tokens[2]) or batch[0] == batch[1] or tokens[0] == tokens[1]:
        return
    for law in laws:
        if law.axis == "tokens" and law.batch is not None and law.batch != batch[1] and any(
                other.param == law.param and other.axis == "batch_size" for other in laws):
            warnings.append(f"{law.param}: the batch and horizon laws compose as independent, but the horizon law "
                            f"was measured at batch {law.batch} and the target trains at batch {batch[1]:g}: how the "
                            "horizon's slope changes with the batch is not measured, and the compounded interval "
                            "does not price it; compare the full run's first evaluations with the prediction")


def undecided(law: Law, flag: str, warnings: list[str]) -> None:
    """A law whose interval holds the textbook rules it should choose between is applied, and said to decide nothing:
    across batch both the square root (½) and linear (1); across tokens or depth 0 (the setting kept)."""
    rules = (0.5, 1.0) if law.axis == "batch_size" else (0.0,)
    if all(law.low <= s <= law.high for s in rules):
        named = "the square-root (½) and the linear (1) rule" if law.axis == "batch_size" else "0 (the setting kept)"
        warnings.append(f"{flag} fitted: the {law.param} law's interval [{law.low:.2f}, {law.high:.2f}] holds {named}, "
                        "so it does not decide between them; more seeds, a finer --range or more values narrow it")


def _sde_moments(edit: _Edit, opt, kappa: float, fitted: set[str]) -> None:
    """Step 4 under `--batch-rule fitted` with AdamW: β₁, β₂, ε by the SDE rule, except those a law measured."""
    try:
        moments = batch_rules.sde_adam_moments(opt.beta1, opt.beta2, opt.eps, kappa)
    except ValueError as err:
        raise InputError(f"--batch-rule fitted: {err}; keep the target's batch closer to the proxy's") from None
    paths = ("optimizer.beta1", "optimizer.beta2", "optimizer.eps")
    formulas = ("1 − β1' = κ(1 − β1)", "1 − β2' = κ(1 − β2)", "ε' = ε/√κ")
    for path, value, formula in zip(paths, moments, formulas, strict=True):
        if path not in fitted:
            edit.set("batch.fitted.sde", path, value, f"{formula}, κ = {kappa:g}: the SDE rule beside the measured "
                     "LR law (Malladi et al. 2022)")


def _width(edit: _Edit, proxy: RunConfig, target: Target) -> None:
    model = proxy.model
    if target.width == model.width:
        return
    if model.parametrization != "mup":
        raise InputError(f"--width: the proxy is in {model.parametrization}, whose optimal settings move with width "
                         "(Tensor Programs V, Fig. 1); transfer across width needs a μP proxy")
    base = model.base_width or base_width_of(model.name)
    edit.set("width", "model.width", target.width,
             f"μP: base settings kept; multipliers follow m = width/{base} = "
             f"{model.width / base:g} → {target.width / base:g}")


def _depth(edit: _Edit, proxy: RunConfig, target: Target) -> None:
    model = proxy.model
    if target.depth is None or target.depth == model.depth:
        return
    alpha = model.options.get("depth_alpha")
    if target.depth_rule == "fitted":
        rule = f"under the model's own rule (depth_alpha {alpha:g})" if alpha is not None else "(no depth rule)"
        edit.set("depth.fitted", "model.depth", target.depth, f"the measured depth law applies in step 4 {rule}")
        return
    if alpha is None:
        raise InputError(f"--depth: μP transfers across width, not depth; the proxy has depth {model.depth} "
                         "and no depth rule (sweep the proxy with model.options.depth_alpha: 1 (CompleteP) or 0.5 "
                         f"and base_depth, or keep --depth {model.depth})")
    base = model.options.get("base_depth", model.depth)
    m_before, m_after = model.depth / base, target.depth / base
    edit.set("depth.completep", "model.depth", target.depth,
             f"CompleteP α={alpha:g} (Dey et al. 2025): branches × m_L^-α, hidden Adam LR × m_L^(α-1), ε × m_L^-α, "
             f"m_L = depth/{base} = {m_before:g} → {m_after:g}")


def _budget(edit: _Edit, proxy: RunConfig, target: Target, proxy_tokens: int) -> None:
    if target.steps is not None:
        edit.set("budget", "tokens", None, "--steps given")
        edit.set("budget", "steps", target.steps, "the target's steps")
    elif target.tokens is not None:
        edit.set("budget", "steps", None, "--tokens given")
        edit.set("budget", "tokens", target.tokens, "the target's tokens")
    elif target.batch_size not in (None, proxy.batch_size):
        edit.set("budget", "steps", None, "the proxy's tokens kept at the new batch")
        edit.set("budget", "tokens", proxy_tokens, "the proxy's tokens kept at the new batch")


def _batch(edit: _Edit, proxy: RunConfig, target: Target, kappa: float, b_noise: float | None,
           warnings: list[str]) -> float:
    """Step 4; returns the target's LR."""
    opt, rule = proxy.optimizer, target.batch_rule
    if kappa == 1:
        return opt.lr
    if rule == "fitted":
        return opt.lr  # the measured law applies after this step (_fitted)
    if rule == "none":
        warnings.append(f"batch size {proxy.batch_size} → {edit.get('batch_size')} with --batch-rule none: "
                        "the settings were tuned at the proxy's batch")
        return opt.lr
    if rule == "linear":
        lr = batch_rules.linear(opt.lr, kappa)
        edit.set("batch.linear", "optimizer.lr", lr, f"η' = κ·η, κ = {kappa:g} (Goyal et al. 2017)")
        return lr
    if rule == "sqrt":
        if opt.name != "adamw":
            raise InputError(f"--batch-rule sqrt: the square-root rule is for Adam; the proxy uses {opt.name} "
                             "(use linear)")
        try:
            lr, b1, b2, eps = batch_rules.sqrt_adam(opt.lr, opt.beta1, opt.beta2, opt.eps, kappa)
        except ValueError as err:
            raise InputError(f"--batch-rule sqrt: {err}") from None
        source = f"κ = {kappa:g} (Malladi et al. 2022)"
        edit.set("batch.sqrt", "optimizer.lr", lr, f"η' = √κ·η, {source}")
        edit.set("batch.sqrt", "optimizer.beta1", b1, f"1 − β1' = κ(1 − β1), {source}")
        edit.set("batch.sqrt", "optimizer.beta2", b2, f"1 − β2' = κ(1 − β2), {source}")
        edit.set("batch.sqrt", "optimizer.eps", eps, f"ε' = ε/√κ, {source}")
        return lr
    if b_noise is None:
        raise InputError("--batch-rule noise: the proxy trial measured no gradient noise scale "
                         "(eval.noise_scale_batches: 0); pick another rule or sweep with it on")
    try:
        lr = batch_rules.noise(opt.lr, proxy.batch_size, edit.get("batch_size"), b_noise)
    except ValueError as err:
        raise InputError(str(err)) from None
    edit.set("batch.noise", "optimizer.lr", lr,
             f"η' = η·(1 + B_noise/B)/(1 + B_noise/B'), B_noise = {b_noise:.4g} examples (McCandlish et al. 2018)")
    if edit.get("batch_size") > b_noise:
        warnings.append(f"batch {edit.get('batch_size')} exceeds the critical batch ≈ B_noise = {b_noise:.4g} "
                        "measured on the proxy: more steps' worth of tokens per step buy little "
                        "(McCandlish et al. 2018), and for Adam the optimal LR can fall again past it "
                        "(Li et al. 2024, the surge)")
    return lr


def _warmup(edit: _Edit, proxy: RunConfig, target: Target, steps: int, new_steps: int, tps: int, new_tps: int,
            lr_grew: bool) -> None:
    warmup = proxy.schedule.warmup_for(steps)
    if warmup == 0 or (new_steps, new_tps) == (steps, tps):
        return
    if target.warmup == "fraction":
        fraction = proxy.schedule.warmup_fraction or warmup / steps
        new = horizon.warmup_fraction_steps(fraction, new_steps)
        formula = f"kept at {fraction:.4g} of the run"
    else:
        new = horizon.warmup_tokens_steps(warmup, tps, new_tps)
        formula = f"kept at {warmup * tps} tokens"
    if lr_grew and new < warmup:
        new, formula = warmup, f"{formula}, but not below the proxy's {warmup} steps since the LR grew"
    elif target.warmup == "fraction" and proxy.schedule.warmup_fraction is not None:
        return  # the fraction carries over as it is
    edit.set("horizon.warmup", "schedule.warmup_fraction", None, "written as steps")
    edit.set(f"horizon.warmup.{target.warmup}", "schedule.warmup_steps", new, formula)
