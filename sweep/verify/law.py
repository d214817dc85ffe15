"""The law along an axis: how the optimum of the setting moves with the axis value, with its interval.

    log₂ optimum = c + s · log₂ (axis value)

so the optimum scales as value^s: s = 0 across width is μP's promise (Tensor Programs V); across batch at a
fixed token budget s = 1 is the linear rule (Goyal et al. 2017) and s = ½ the square-root rule (Malladi et al.
2022); across tokens at a fixed batch s is the horizon exponent (Bjorck et al. 2025: LR* ∝ D^−β).

s and its interval come from one fit over every point of the ladder, seeds as replicates (sweep/rules/valley.py);
the optimum shown per axis value is its own vertex (sweep/verify/fit.py), for the table and the figure. With one
seed the seed-to-seed movement of the optimum is not seen apart from the scatter about the line
(`seed_noise_known` false); with two axis values and one seed there is no interval (NaN), and `sweep transfer`
then uses the published prior alone (sweep/rules/prior.py).
"""
from __future__ import annotations

import math

import pandas as pd

from sweep.rules.summary import SLOPE_LIMIT
from sweep.rules.valley import LEVEL, valley_fit
from sweep.verify.analysis import seed_mean
from sweep.verify.fit import vertex

__all__ = ["LEVEL", "fit_law"]


def fit_law(points: pd.DataFrame, axis: str) -> dict | None:
    """The joint fit's {slope, low, high, level, residual, scatter, seeds, …} with `at` (the axis values) and
    `optimum_x` (each value's own vertex); None when an axis value has no optimum or fewer than two values have one,
    or the slope is past ±SLOPE_LIMIT; an interval reaching past it is none (NaN: `sweep transfer` uses the prior)."""
    values = sorted(points[axis].unique())
    found = [vertex(mean.index.to_numpy(), mean.to_numpy())
             for mean in (seed_mean(points[points[axis] == at]) for at in values)]
    if len(values) < 2 or any(v is None for v in found):
        return None
    law = valley_fit(points, axis)
    if law is None or not abs(law["slope"]) <= SLOPE_LIMIT:  # 2^64 per doubling: no law a grid measures
        return None
    if not all(abs(law[end]) <= SLOPE_LIMIT for end in ("low", "high")):  # an unbounded interval: none (the prior)
        law = {**law, "low": math.nan, "high": math.nan}
    return {**law, "at": [float(v) for v in values], "optimum_x": [float(v.x) for v in found]}
