"""Coordinate check with a verdict (Tensor Programs V, §D.1 and Figure 5; microsoft/mup `coord_check`).

For widths w₁ < … < wₖ, seeds and the first T steps, train each model and record the mean |x| of
every module's output (the root module's output is the logits) at step t (t updates applied; t=0
is the initialisation). Per module and step, fit the least-squares slope of log(mean over seeds of
|x|) against log(width). Under μP every coordinate stays Θ(1), so every slope is near 0; under SP
with Adam the hidden updates, and with them the logits, grow like width (slope ≈ 1).

Verdict: a module fails when its slope at any step exceeds +`SLOPE_THRESHOLD`: growth with width
is the failure μP exists to prevent, and the one that moves the optimal learning rate. Shrinking
coordinates are reported but do not fail, because correct μP models show them at proxy widths:
logits at t=0 with a non-zero readout init shrink like 1/√m (slope ≈ -0.5), and with a growing
head dim the 1/d_head attention logits start below their Θ(1) limit (≈ -0.5 at t=1) until q and
k align. Outputs that are exactly zero at some width (a zero-initialised query or readout at
t=0) have no slope and are skipped.

Why +0.35: mup's own tests accept a size ratio within [1/1.2, 1.2] over a 4× width change at
steps 1–3, i.e. |slope| ≤ log 1.2 / log 4 ≈ 0.13. At proxy widths (64→512) finite-width effects
alone move correct models further: mup's get_coord_data gives ≈ 0.17 on a correct 2-layer μP
GPT (1.27× over 4×), and the zoo measures up to ≈ +0.25 here. The failures sit well above:
SP ≈ +0.7 (ResNet) to +2 (GPT, MLP), an unscaled hidden Adam LR ≈ +1.8, a plain Linear readout
≈ +0.7, 1/√d attention with a growing head dim ≈ +0.5 once q and k align. +0.35 leaves ≥ 0.1
of margin on both sides; mup's ±20% would fail correct models at these widths.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np
import pandas as pd
import torch
import torch.nn.functional as F
from torch import nn

from trainer.optim import build_optimizer

SLOPE_THRESHOLD = 0.35
LOGITS = "logits"


@dataclass
class Verdict:
    """Per-module rows (module, max_slope, step, min_slope, passed) and the overall outcome."""

    table: pd.DataFrame
    passed: bool


def record_sizes(make_model: Callable[[int], nn.Module], batches: Sequence[tuple[torch.Tensor, torch.Tensor]],
                 width: int, seed: int, *, optimizer: str, lr: float) -> list[dict]:
    """Train one model on `batches` (one step each) and record mean |output| of every module per step."""
    torch.manual_seed(seed)
    model = make_model(width)
    model.train()
    opt = build_optimizer(model, name=optimizer, lr=lr)
    rows: list[dict] = []
    step = 0

    def hook(name: str):
        def record(module, inputs, output):
            if isinstance(output, torch.Tensor) and output.is_floating_point():
                rows.append({"width": width, "seed": seed, "step": step, "module": name,
                             "size": output.detach().abs().mean().item()})
        return record

    handles = [m.register_forward_hook(hook(name or LOGITS)) for name, m in model.named_modules()]
    try:
        for step, (x, y) in enumerate(batches):
            logits = model(x)
            loss = F.cross_entropy(logits.flatten(0, -2).float(), y.flatten())
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
    finally:
        for h in handles:
            h.remove()
    return rows


def fit_slopes(sizes: pd.DataFrame) -> pd.DataFrame:
    """Slope of log(mean |x| over seeds) against log(width), per module and step."""
    mean = sizes.groupby(["module", "step", "width"], sort=False)["size"].mean().reset_index()
    out = []
    for (module, step), g in mean.groupby(["module", "step"], sort=False):
        if (g["size"] > 0).all() and g["width"].nunique() > 1:
            slope = float(np.polyfit(np.log(g["width"]), np.log(g["size"]), 1)[0])
        else:
            slope = math.nan  # exactly zero somewhere: zero-initialised, no scaling to measure
        out.append({"module": module, "step": step, "slope": slope})
    return pd.DataFrame(out)


def verdict(slopes: pd.DataFrame, threshold: float = SLOPE_THRESHOLD) -> Verdict:
    """Per module: the largest slope and its step, the smallest slope, and pass = largest ≤ threshold."""
    rows = []
    for module, g in slopes.dropna(subset=["slope"]).groupby("module", sort=False):
        worst = g.loc[g["slope"].idxmax()]
        rows.append({"module": module, "max_slope": float(worst["slope"]), "step": int(worst["step"]),
                     "min_slope": float(g["slope"].min()), "passed": bool(worst["slope"] <= threshold)})
    table = pd.DataFrame(rows, columns=["module", "max_slope", "step", "min_slope", "passed"])
    return Verdict(table=table, passed=bool(table["passed"].all()))


def coord_check(make_model: Callable[[int], nn.Module], make_batches: Callable[[int], list], widths: Sequence[int],
                seeds: int, *, optimizer: str = "adamw", lr: float = 2 ** -6,
                threshold: float = SLOPE_THRESHOLD) -> tuple[pd.DataFrame, pd.DataFrame, Verdict]:
    """Run the check. `make_batches(seed)` gives the step batches, shared by every width of a seed.

    Returns the raw sizes, the fitted slopes and the verdict.
    """
    rows: list[dict] = []
    for seed in range(seeds):
        batches = make_batches(seed)
        for width in widths:
            rows += record_sizes(make_model, batches, width, seed, optimizer=optimizer, lr=lr)
    sizes = pd.DataFrame(rows)
    slopes = fit_slopes(sizes)
    return sizes, slopes, verdict(slopes, threshold)
