"""The law along an axis: how the optimum of the setting moves with the axis value, with a bootstrap interval.

    log₂ optimum = c + s · log₂ (axis value)      (least squares over the axis values)

so the optimum scales as value^s: s = 0 across width is μP's promise (Tensor Programs V); across batch at a
fixed token budget s = 1 is the linear rule (Goyal et al. 2017) and s = ½ the square-root rule (Malladi et
al. 2022); across tokens at a fixed batch s is the horizon exponent (Bjorck et al. 2025: LR* ∝ D^−β).

The interval is a percentile bootstrap over the two noises the optimum carries: seeds (each resample draws
the training seeds at every axis value with replacement and averages their curves) and grid noise (each
point of the averaged curve moves by a normal draw with the standard deviation of the points about a
least-squares parabola through the best five, which is 0 when the valley is an exact parabola). Each
resample's curves go through the same vertex fit as the point estimate.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from sweep.verify.analysis import seed_mean
from sweep.verify.fit import vertex

LEVEL = 0.95  # the interval's nominal coverage
RESAMPLES = 1000


def slope(at: np.ndarray, optimum_x: np.ndarray) -> float:
    """s of the least-squares line log₂ optimum = c + s·log₂ at."""
    return float(np.polyfit(np.log2(np.asarray(at, float)), np.asarray(optimum_x, float), 1)[0])


def grid_noise(mean: pd.Series) -> float:
    """Standard deviation of the best five finite points about their least-squares parabola (2 dof)."""
    finite = mean.dropna()
    if len(finite) < 6:
        return 0.0
    best = int(np.argmin(finite.to_numpy()))
    window = finite.iloc[max(0, best - 2):best + 3]
    if len(window) < 5:
        return 0.0
    x, y = window.index.to_numpy(float), window.to_numpy(float)
    residuals = y - np.polyval(np.polyfit(x, y, 2), x)
    return float(np.sqrt(np.sum(residuals ** 2) / (len(x) - 3)))


def fit_law(points: pd.DataFrame, axis: str, resamples: int = RESAMPLES, seed: int = 0) -> dict | None:
    """{slope, low, high, level, at, optimum_x} for one parametrization's points; None when an axis value has
    no optimum or fewer than two values have one."""
    curves, values = [], sorted(points[axis].unique())
    for at in values:
        group = points[points[axis] == at]
        by_seed = group.pivot_table(index="seed", columns="x", values="loss", aggfunc="first", dropna=False)
        curves.append((by_seed.columns.to_numpy(float), by_seed.to_numpy(float), grid_noise(seed_mean(group))))
    found = [vertex(x, np.mean(y, axis=0)) for x, y, _ in curves]
    if len(values) < 2 or any(v is None for v in found):
        return None
    estimate = slope(values, [v.x for v in found])
    rng, draws = np.random.default_rng(seed), []
    for _ in range(resamples):
        tops = []
        for x, y, sigma in curves:
            mean = y[rng.integers(0, len(y), len(y))].mean(axis=0) + rng.normal(0.0, sigma, len(x))
            top = vertex(x, mean)
            tops.append(top.x if top else np.nan)
        if np.isfinite(tops).all():
            draws.append(slope(values, tops))
    low, high = np.quantile(draws, [(1 - LEVEL) / 2, (1 + LEVEL) / 2]) if draws else (np.nan, np.nan)
    return {"slope": estimate, "low": float(low), "high": float(high), "level": LEVEL,
            "at": [float(v) for v in values], "optimum_x": [float(v.x) for v in found]}
