"""`sweep doctor`: the pre-flight checklist of every training guide, in one verdict table.

Each row is (check, measured, expected, passed). On the run's model and data at the config's width:
- init loss ≈ chance: |L₀ − ln C| ≤ 10% of ln C, C = the model's output size (vocabulary or classes);
- overfit one batch: `overfit_steps` AdamW steps at the config's LR on one batch bring the loss ≤ 50% of L₀;
- grad norm at init, and after `hot_steps` steps at the top of the LR range (`lr_max`, default the config's
  LR): finite and within [1e-4, 1e3] (the pre-clip global norm);
- finite: no nan/inf loss or gradient in any step above;
- parameters without gradient: none whose gradient stays exactly zero (or absent) through every step above;
- parameters outside the optimizer: no leaf tensor that receives a gradient (found by walking the autograd
  graph) but is not in the trainer's optimizer — a Linear kept in a plain list, a frozen Parameter;
- labels shifted (language models): a copy model (logits = 30·onehot(input)) keeps its loss ≥ 50% of ln C; with
  unshifted labels (y = x) it gets ≈ 0;
- train/val disjoint: at most 1% of `windows` sampled validation windows (hashes of x and y) appear among as
  many training windows;
- ids in range: inputs and labels of integer data lie in [0, C);
- causal and examples independent ("use backprop to chart dependencies", Karpathy's "A Recipe for Training
  Neural Networks", 2019): after `CAUSAL_WARMUP` optimizer steps (so a zero-initialized readout has moved), the
  gradient of the loss at position t of example 0 with respect to the input embeddings (the output of the
  nn.Embedding the token ids go through) is exactly zero at every position
  s > t of example 0 (a non-causal or off-by-one mask, a normalization across positions) and everywhere in
  the other examples (a normalization across the batch), and not zero at some s ≤ t (the check reaches the
  inputs). Positions t: the first, the middle and the next-to-last. Language models only: a classifier has
  no positions, and its BatchNorm mixes the batch by design;
- coordinate check (μP only): `sweep.coords.check` at base, 2× and 4× the builder's base width, with the
  config's per-role settings (`model.init`, `optimizer.roles`) at every width;
- and, for information (always pass): parameters and FLOPs per token at the target width (`width`,
  default the config's), and an estimate there of the forward+backward time on this device (the time at the
  config's width plus the marginal seconds per FLOP measured between it and twice it, times the extra FLOPs)
  and of the memory for weights, gradients and AdamW moments (16 bytes per parameter; activations not
  included).
"""
from __future__ import annotations

import hashlib
import math
import time
from dataclasses import dataclass

import pandas as pd
import torch
import torch.nn.functional as F
from torch import nn

from proxies.data import DataSource
from proxies.meta import shapes_only
from proxies.registry import build_model
from sweep.coords import DEFAULT_STEPS, check_batch
from sweep.coords import check as cc
from sweep.coords.check import DEFAULT_LR
from trainer.build import build_net
from trainer.config import RunConfig
from trainer.flops import flops_per_token
from trainer.optim import build_optimizer
from trainer.resolve import resolve

INIT_TOLERANCE = 0.10
OVERFIT_RATIO = 0.5
GRAD_RANGE = (1e-4, 1e3)
COPY_FLOOR = 0.5
OVERLAP_MAX = 0.01
CAUSAL_WARMUP = 2


def cross_entropy(logits: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    return F.cross_entropy(logits.flatten(0, -2).float(), y.flatten())


def unregistered_leaves(loss: torch.Tensor, registered: set[int]) -> int:
    """How many leaf tensors the loss's autograd graph accumulates gradient into that are not in `registered`."""
    seen, stack, outside = set(), [loss.grad_fn], 0
    while stack:
        fn = stack.pop()
        if fn is None or fn in seen:
            continue
        seen.add(fn)
        variable = getattr(fn, "variable", None)
        if variable is not None and id(variable) not in registered:
            outside += 1
        stack.extend(next_fn for next_fn, _ in fn.next_functions)
    return outside


def window_hashes(data: DataSource, split: str, n: int, batch: int, seed: int) -> set[bytes]:
    gen = torch.Generator().manual_seed(seed)
    hashes = set()
    for _ in range(max(1, n // batch)):
        x, y = data.batch(split, batch, gen)
        for xi, yi in zip(x, y, strict=True):
            hashes.add(hashlib.sha1(xi.numpy().tobytes() + yi.numpy().tobytes()).digest())
    return hashes


@dataclass
class Case:
    """What every check reads: the resolved config, its data and model options, the first batch and the generator
    later batches are drawn from (one generator, so the checks see the batches in the order they run)."""
    cfg: RunConfig
    data: DataSource
    options: dict
    x: torch.Tensor
    y: torch.Tensor
    gen: torch.Generator

    def fresh(self) -> tuple[nn.Module, torch.optim.Optimizer]:
        """The config's model at its width, seeded, and the trainer's optimizer for it."""
        m, o = self.cfg.model, self.cfg.optimizer
        torch.manual_seed(self.cfg.seed)
        model = build_net(m, self.options)  # with its per-role init multipliers
        return model, build_optimizer(model, name=o.name, lr=o.lr, weight_decay=o.weight_decay,
                                      betas=(o.beta1, o.beta2), eps=o.eps, momentum=o.momentum, wd_mode=o.wd_mode,
                                      decay_embeddings=o.decay_embeddings, settings=o.settings(),
                                      roles=o.roles.given(), width_exps=o.roles.width_exps())


def row(check: str, measured: str, expected: str, passed: bool) -> dict:
    return {"check": check, "measured": measured, "expected": expected, "passed": bool(passed)}


def grad_norm_row(check: str, norm: float, measured: str) -> dict:
    return row(check, measured, f"finite, {GRAD_RANGE[0]:g} … {GRAD_RANGE[1]:g}",
               math.isfinite(norm) and GRAD_RANGE[0] <= norm <= GRAD_RANGE[1])


def init_checks(case: Case) -> tuple[list[dict], float, int]:
    """Init loss against chance, the gradient norm at init, leaves outside the optimizer; also returns L₀ and C."""
    model, optimizer = case.fresh()
    logits = model(case.x)
    classes = logits.shape[-1]
    chance = math.log(classes)
    loss = cross_entropy(logits, case.y)
    in_optimizer = {id(p) for g in optimizer.param_groups for p in g["params"]}
    outside = unregistered_leaves(loss, in_optimizer)
    loss.backward()
    init_loss = loss.item()
    norm = torch.nn.utils.clip_grad_norm_(model.parameters(), math.inf).item()
    return [row("init loss ≈ ln(classes)", f"{init_loss:.4f}", f"{chance:.4f} ± {INIT_TOLERANCE:.0%}",
                abs(init_loss - chance) <= INIT_TOLERANCE * chance),
            grad_norm_row("grad norm at init", norm, f"{norm:.3g}"),
            row("parameters outside the optimizer", str(outside), "0 (every leaf that gets a gradient is optimized)",
                outside == 0)], init_loss, classes


def hot_checks(case: Case, lr: float, hot_steps: int) -> list[dict]:
    """A few steps at the top of the LR range: gradient norms, finiteness, parameters that never get a gradient."""
    model, optimizer = case.fresh()
    for group in optimizer.param_groups:
        group["lr"] = lr * group["lr_mult"]
    touched = {name: False for name, p in model.named_parameters() if p.requires_grad}
    finite, norms = True, []
    for _ in range(hot_steps):
        xb, yb = case.data.batch("train", case.cfg.batch_size, case.gen)
        optimizer.zero_grad(set_to_none=True)
        loss = cross_entropy(model(xb), yb)
        loss.backward()
        for name, p in model.named_parameters():
            if name in touched and p.grad is not None and bool(p.grad.ne(0).any()):
                touched[name] = True
        norms.append(torch.nn.utils.clip_grad_norm_(model.parameters(), math.inf).item())
        finite &= math.isfinite(loss.item()) and math.isfinite(norms[-1])
        optimizer.step()
    top = max(norms)
    dead = [name for name, hit in touched.items() if not hit]
    named = ", ".join(dead[:3]) + (f" … ({len(dead)})" if len(dead) > 3 else "") if dead else "none"
    return [grad_norm_row(f"grad norm after {hot_steps} steps at lr {lr:g}", top, f"{top:.3g} (max)"),
            row("no nan/inf in loss or gradients", "yes" if finite else "no", "yes", finite),
            row("parameters without gradient", named, "none", not dead)]


def overfit_check(case: Case, steps: int, init_loss: float) -> list[dict]:
    """`steps` optimizer steps on the first batch bring its loss to at most OVERFIT_RATIO of L₀."""
    model, optimizer = case.fresh()
    for _ in range(steps):
        optimizer.zero_grad(set_to_none=True)
        loss = cross_entropy(model(case.x), case.y)
        loss.backward()
        optimizer.step()
    final = cross_entropy(model(case.x), case.y).item()
    return [row(f"overfit one batch ({steps} steps)", f"{final:.4f}",
                f"≤ {OVERFIT_RATIO:.0%} of init ({OVERFIT_RATIO * init_loss:.4f})", final <= OVERFIT_RATIO * init_loss)]


def data_checks(case: Case, classes: int, windows: int) -> list[dict]:
    """Labels shifted (a copy model must not win), ids within [0, C), train and val windows disjoint."""
    x, y, chance, rows = case.x, case.y, math.log(classes), []
    integer = not x.is_floating_point()
    if integer and x.shape == y.shape:
        copy = cross_entropy(30 * F.one_hot(x.clamp(0, classes - 1), classes).float(), y).item()
        rows.append(row("labels shifted (copy model's loss)", f"{copy:.4f}",
                        f"≥ {COPY_FLOOR:.0%} of ln(classes) ({COPY_FLOOR * chance:.4f})", copy >= COPY_FLOOR * chance))
    low = int(min(x.min(), y.min())) if integer else int(y.min())
    high = int(max(x.max(), y.max())) if integer else int(y.max())
    rows.append(row("ids within the vocabulary" if integer else "labels within the classes", f"{low} … {high}",
                    f"0 … {classes - 1}", low >= 0 and high < classes))
    train_h = window_hashes(case.data, "train", windows, case.cfg.batch_size, case.cfg.seed + 1)
    val_h = window_hashes(case.data, "val", windows, case.cfg.batch_size, case.cfg.seed + 2)
    overlap = len(train_h & val_h) / max(1, len(val_h))
    rows.append(row("train and val disjoint (window hashes)",
                    f"{overlap:.2%} of {len(val_h)} val windows seen in train", f"≤ {OVERLAP_MAX:.0%}",
                    overlap <= OVERLAP_MAX))
    return rows


def embedded(model: nn.Module, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor | None]:
    """Run `model(x)` on token ids; returns (output, the output of the nn.Embedding that read `x`, as a tensor that
    requires grad and that the rest of the forward was computed from), or (output, None) when no embedding read x."""
    entered = []

    def hook(module, inputs, output):
        if inputs[0] is x and not entered:
            entered.append(output.detach().requires_grad_())
            return entered[0]

    handles = [m.register_forward_hook(hook) for m in model.modules() if isinstance(m, nn.Embedding)]
    try:
        return model(x), (entered or [None])[0]
    finally:
        for h in handles:
            h.remove()


def causality_rows(case: Case) -> list[dict]:
    """Exact zeros in d loss(example 0, position t) / d embedding(example b, position s) for s > t and for b ≠ 0
    (module doc); no rows for a model without a loss per position (a classifier: BatchNorm mixes its batch by
    design)."""
    if case.x.is_floating_point() or case.x.dim() != 2:
        return []
    model, optimizer = case.fresh()
    for _ in range(CAUSAL_WARMUP):
        optimizer.zero_grad(set_to_none=True)
        cross_entropy(model(case.x), case.y).backward()
        optimizer.step()
    out, inputs = embedded(model, case.x)
    if inputs is None or out.dim() != 3:
        return []
    T, future, across, reached, leaks = out.shape[1], 0.0, 0.0, True, []
    for t in sorted({0, T // 2, max(T - 2, 0)}):
        (grad,) = torch.autograd.grad(F.cross_entropy(out[0, t].float(), case.y[0, t]), inputs, retain_graph=True)
        grad = grad.abs().flatten(2).amax(dim=-1)  # (B, T): the largest dependence of loss(0, t) on each input
        reached &= grad[0, :t + 1].max().item() > 0
        ahead = grad[0, t + 1:]
        if ahead.numel() and ahead.max().item() > 0:
            leaks.append(f"t={t} sees s={t + 1 + int(ahead.nonzero()[0, 0])}")
            future = max(future, ahead.max().item())
        across = max(across, grad[1:].max().item() if len(grad) > 1 else 0.0)
    unreached = "no gradient reaches the inputs at s ≤ t"
    return [row("causal (d loss at t / d inputs after t)",
                f"max |grad| {future:.3g}" + (f" ({'; '.join(leaks)})" if leaks else "") if reached else unreached,
                "exactly 0", future == 0 and reached),
            row("examples independent (d loss of one example / d other examples' inputs)",
                f"max |grad| {across:.3g}" if reached else unreached, "exactly 0", across == 0 and reached)]


def coord_check_row(case: Case) -> list[dict]:
    """The coordinate check at 1×, 2× and 4× the base width, at the LR its bounds are calibrated at, with the
    config's per-role settings (init multipliers, LR multipliers and width exponents) at every width."""
    m, o = case.cfg.model, case.cfg.optimizer
    widths = [m.base_width, 2 * m.base_width, 4 * m.base_width]

    def batch(seed: int):
        return case.data.batch("train", check_batch(m.name), torch.Generator().manual_seed(seed))

    def make_optimizer(model: nn.Module, lr: float) -> torch.optim.Optimizer:
        return build_optimizer(model, name=o.name, lr=lr, roles=o.roles.given(), width_exps=o.roles.width_exps())

    _, _, verdict = cc.coord_check(lambda w: build_net(m.model_copy(update={"width": w}), case.options), batch,
                                   widths, seeds=2, steps=DEFAULT_STEPS, optimizer=o.name,
                                   lr=DEFAULT_LR.get(o.name, o.lr), make_optimizer=make_optimizer)
    slopes = verdict.table[["max_size_slope", "max_delta_slope"]].max(axis=1)
    worst = verdict.table.loc[slopes.idxmax()]
    failing = verdict.table.loc[~verdict.table["passed"]]
    measured = (f"max slope {slopes.max():+.2f} ({worst['module']})" if failing.empty else
                "; ".join(f"{r.module}: {r.why}" for r in failing.itertuples()))
    return [row(f"coordinate check (widths {widths})", measured,
                f"slopes ≤ +{cc.GROW_BOUND}, updates not vanishing (< −{cc.SHRINK_BOUND})", verdict.passed)]


def cost_rows(case: Case, target: int) -> list[dict]:
    """Size, FLOPs, step time and memory at the target width (information: they always pass)."""
    m, seq = case.cfg.model, case.data.tokens_per_example

    def timed(w: int) -> tuple[float, float]:
        """(fastest of 3 forward+backward passes on the batch, FLOPs per token) at width w."""
        torch.manual_seed(case.cfg.seed)
        model = build_model(m.name, w, m.depth, m.parametrization, **case.options)
        times = []
        for _ in range(3):  # the first pass pays for allocation and dispatch warm-up
            start = time.perf_counter()
            cross_entropy(model(case.x), case.y).backward()
            times.append(time.perf_counter() - start)
        return min(times), flops_per_token(model, seq)

    (t1, f1), (t2, f2) = timed(m.width), timed(2 * m.width)
    per_flop = max(t2 - t1, 0.0) / (f2 - f1)  # the marginal cost: small widths are dominated by fixed overheads
    with shapes_only():
        big = build_model(m.name, target, m.depth, m.parametrization, **case.options)
    n_params = sum(p.numel() for p in big.parameters())
    flops = flops_per_token(big, seq)
    estimate = t1 + per_flop * (flops - f1)
    return [row(f"parameters, FLOPs/token at width {target}", f"{n_params:,} params, {flops / 1e6:,.1f} MFLOPs/token",
                "—", True),
            row(f"step time, memory at width {target}", f"≈ {estimate:.3g} s per forward+backward here "
                f"(batch {case.cfg.batch_size}), {16 * n_params / 2 ** 30:.3g} GiB weights+grads+AdamW", "—", True)]


def make_case(cfg: RunConfig, data: DataSource | None = None) -> Case:
    """The resolved config, its data (or `data`), and the first training batch."""
    cfg = resolve(cfg)
    if data is None:
        data = cfg.data.open(cfg.seed)
    gen = torch.Generator().manual_seed(cfg.seed)
    x, y = data.batch("train", cfg.batch_size, gen)
    return Case(cfg, data, {**data.model_options(), **cfg.model.options}, x, y, gen)


def run_doctor(cfg: RunConfig, *, lr_max: float | None = None, width: int | None = None, data: DataSource | None = None,
               overfit_steps: int = 40, hot_steps: int = 5, windows: int = 512,
               coord_check: bool = True) -> tuple[pd.DataFrame, bool]:
    """Run the checklist on `cfg` (its model, data, batch size and LR); `data` replaces the config's data source.

    Returns the verdict table and whether every row passed.
    """
    case = make_case(cfg, data)
    cfg = case.cfg
    rows, init_loss, classes = init_checks(case)
    rows += hot_checks(case, lr_max if lr_max is not None else cfg.optimizer.lr, hot_steps)
    rows += overfit_check(case, overfit_steps, init_loss)
    rows += data_checks(case, classes, windows)
    rows += causality_rows(case)
    if coord_check and cfg.model.parametrization == "mup":
        rows += coord_check_row(case)
    rows += cost_rows(case, width or cfg.model.width)
    table = pd.DataFrame(rows, columns=["check", "measured", "expected", "passed"])
    return table, bool(table["passed"].all())
