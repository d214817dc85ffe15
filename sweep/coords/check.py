"""Coordinate check with a verdict on sizes and updates (Tensor Programs V, §D.1 and Figure 5; TP IV).

For widths w₁ < … < wₖ and seeds, train each model for T−1 steps on one fixed batch per seed (as
microsoft/mup's `get_coord_data` does with `fix_data`) and record, per module and step t (t updates
applied; t = 0 is the initialisation):
- size   mean |x_t|        of the module's output on that batch;
- delta  mean |x_t − x_0|  the update of that output since initialisation, same batch, same seed.
Probes: every module's output ("activation"), the model's output ("logits"), and the pre-softmax
scores of every attention layer (`proxies.gpt.AttentionLogits`, "attention").

μP is defined by the updates: every Δx_t must stay Θ(1) per coordinate as width grows (TP IV §5, the
abc-parametrizations; TP V Table 3). Per module and step the least-squares slope
of log(mean over seeds) against log(width) is fitted, for sizes and deltas. A module fails when
- its size or its delta grows with width: a slope above +`GROW_BOUND` at some step (SP, a missing
  1/m readout multiplier, an unscaled hidden LR, 1/√d attention with a growing head dim);
- its delta shrinks with width at every step: the largest delta slope below −`SHRINK_BOUND`, i.e.
  the layer stops learning as width grows (a vector-like or input parameter given a hidden
  matrix's 1/m LR, a readout LR scaled down). Attention scores are exempt: q·k from a zero query
  approaches its limit from below, the more slowly the larger the head dim (with SGD it is still
  rising at t = 7, slope ≈ −0.5); the query and key layers that make it carry the rule.
Shrinking sizes are not failures: μP predicts them at proxy widths (logits at t = 0 with a non-zero
readout init shrink like 1/√m, slope ≈ −0.5). A delta that shrinks at some steps only is not one
either: with a growing head dim the 1/d attention logits start below their limit (q and k not yet
aligned, slope ≈ −0.5) and reach it as training aligns them, and at a large LR the narrowest
residual streams run ahead of the wider ones after a few steps on one batch. Outputs exactly zero
at some width (a zero query at t = 0, every delta at t = 0) have no slope and are skipped.

The bounds come from the calibration in `benchmarks/coord_check_calibration.py` (table in
docs/guide/coord-check.md): at the CLI defaults correct μP models (every zoo model, both attention regimes, AdamW and
SGD) reach growth ≤ +0.26 and a largest delta slope ≥ −0.50; the planted bugs of tests/mutations
reach growth ≥ +0.39 (readout ×1/√m; the others ≥ +0.52) or ≤ −0.94. mup's own tests accept a ratio
within [1/1.2, 1.2] over 4× width (|slope| ≤ 0.13), which finite-width effects alone exceed here.
"""
from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
import torch
import torch.nn.functional as F
from torch import nn

from proxies.gpt import AttentionLogits
from trainer.optim import build_optimizer

GROW_BOUND = 0.35
SHRINK_BOUND = 0.7
LOGITS = "logits"

# The check's LR per optimizer: at it, μP passes and SP fails on every zoo model (docs/guide/coord-check.md).
# Schedule-Free at 2^-6 failed the heads-fixed regime (attention logits +0.43) and passes at 2^-7 (+0.01; SP +1.70):
# a slope that vanishes when the LR halves is the narrow width's q·k running ahead at a large step (AdamW reaches
# +0.34 at 2^-6 too), not its μP table, which holds for the interpolated point the check measures as for z.
DEFAULT_LR = {"adamw": 2 ** -7, "sgd": 0.1, "muon": 2 ** -7, "lion": 2 ** -9, "schedulefree_adamw": 2 ** -7,
              "adam_atan2": 2 ** -7}

Batch = tuple[torch.Tensor, torch.Tensor]
MakeOptimizer = Callable[[nn.Module, float], torch.optim.Optimizer]


@dataclass
class Verdict:
    """Per-module rows (module, kind, slopes, step of the worst, passed, why) and the overall outcome."""

    table: pd.DataFrame
    passed: bool


def probe_kind(name: str, module: nn.Module) -> str:
    if not name:
        return LOGITS
    return "attention" if isinstance(module, AttentionLogits) else "activation"


def record_coords(model: nn.Module, optimizer: torch.optim.Optimizer, batch: Batch, steps: int) -> list[dict]:
    """Train `model` steps−1 times on `batch`; per step and module, mean |x_t| and mean |x_t − x_0|."""
    x, y = batch
    rows: list[dict] = []
    first: dict[str, torch.Tensor] = {}
    step = 0

    def hook(name: str, kind: str):
        def record(module, inputs, output):
            if isinstance(output, torch.Tensor) and output.is_floating_point():
                out = output.detach().float()
                start = first.setdefault(name, out.clone())
                rows.append({"step": step, "module": name or LOGITS, "kind": kind,
                             "size": out.abs().mean().item(), "delta": (out - start).abs().mean().item()})
        return record

    handles = [m.register_forward_hook(hook(name, probe_kind(name, m))) for name, m in model.named_modules()]
    try:
        model.train()
        for step in range(steps):
            logits = model(x)
            if step == steps - 1:
                break
            loss = F.cross_entropy(logits.flatten(0, -2).float(), y.flatten())
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
    finally:
        for h in handles:
            h.remove()
    return rows


def _slope(g: pd.DataFrame, column: str) -> float:
    if (g[column] > 0).all() and g["width"].nunique() > 1:
        return float(np.polyfit(np.log(g["width"]), np.log(g[column]), 1)[0])
    return math.nan  # exactly zero somewhere: nothing scales


def fit_slopes(coords: pd.DataFrame) -> pd.DataFrame:
    """Slopes of log(mean over seeds) against log(width), per module and step, for size and delta."""
    mean = coords.groupby(["module", "kind", "step", "width"], sort=False)[["size", "delta"]].mean().reset_index()
    out = [{"module": module, "kind": kind, "step": step,
            "size_slope": _slope(g, "size"), "delta_slope": _slope(g, "delta")}
           for (module, kind, step), g in mean.groupby(["module", "kind", "step"], sort=False)]
    return pd.DataFrame(out)


VERDICT_COLUMNS = ["module", "kind", "max_size_slope", "max_delta_slope", "min_delta_slope", "step", "passed", "why"]


def verdict(slopes: pd.DataFrame, grow: float = GROW_BOUND, shrink: float = SHRINK_BOUND) -> Verdict:
    """Per module: the largest size and delta slopes (and the step of the larger), the smallest delta slope,
    and pass = nothing grows beyond +grow and the delta keeps up at some step (largest delta slope ≥ −shrink;
    not asked of attention scores)."""
    rows = []
    for (module, kind), g in slopes.groupby(["module", "kind"], sort=False):
        peak = g[["size_slope", "delta_slope"]].max(axis=1)
        if peak.isna().all():
            continue
        max_size, max_delta = g["size_slope"].max(), g["delta_slope"].max()
        why = []
        if max_size > grow:
            why.append("size grows")
        if max_delta > grow:
            why.append("update grows")
        if max_delta < -shrink and kind != "attention":
            why.append("update vanishes")
        rows.append({"module": module, "kind": kind, "max_size_slope": max_size, "max_delta_slope": max_delta,
                     "min_delta_slope": g["delta_slope"].min(), "step": int(g.loc[peak.idxmax(), "step"]),
                     "passed": not why, "why": ", ".join(why)})
    table = pd.DataFrame(rows, columns=VERDICT_COLUMNS)
    return Verdict(table=table, passed=bool(table["passed"].all()))


def coord_check(make_model: Callable[[int], nn.Module], make_batch: Callable[[int], Batch], widths: Sequence[int],
                seeds: int, steps: int, *, optimizer: str = "adamw", lr: float = 2 ** -6,
                make_optimizer: MakeOptimizer | None = None) -> tuple[pd.DataFrame, pd.DataFrame, Verdict]:
    """Run the check. `make_batch(seed)` gives the batch trained on, shared by every width of a seed;
    `make_optimizer(model, lr)` defaults to the μP groups of `trainer.optim.build_optimizer`.

    Returns the raw coordinates (width, seed, step, module, kind, size, delta), the slopes and the verdict.
    """
    make_optimizer = make_optimizer or (lambda model, lr: build_optimizer(model, name=optimizer, lr=lr))
    rows: list[dict] = []
    for seed in range(seeds):
        batch = make_batch(seed)
        for width in widths:
            torch.manual_seed(seed)
            model = make_model(width)
            rows += [{"width": width, "seed": seed, **row}
                     for row in record_coords(model, make_optimizer(model, lr), batch, steps)]
    coords = pd.DataFrame(rows)
    slopes = fit_slopes(coords)
    return coords, slopes, verdict(slopes)
