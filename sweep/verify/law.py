"""The law along an axis: how the optimum of the setting moves with the axis value, with a bootstrap interval.

    log₂ optimum = c + s · log₂ (axis value)      (least squares over the axis values)

so the optimum scales as value^s: s = 0 across width is μP's promise (Tensor Programs V); across batch at a
fixed token budget s = 1 is the linear rule (Goyal et al. 2017) and s = ½ the square-root rule (Malladi et
al. 2022); across tokens at a fixed batch s is the horizon exponent (Bjorck et al. 2025: LR* ∝ D^−β).

The interval is a percentile bootstrap over the two noises the optimum carries: seeds (each resample draws
the training seeds at every axis value with replacement and averages their curves) and grid noise (each
point of the averaged curve moves by a normal draw with the standard deviation of the points about a
least-squares parabola through five around the best, which is 0 when the valley is an exact parabola). Each
resample's curves go through the same vertex fit as the point estimate. With one seed and fewer than five
finite points at some axis value neither noise is seen: the interval is NaN (not measured), and `sweep
transfer` does not apply such a law. Where the resamples' percentiles leave the estimate out (a skewed resample
distribution), the interval is widened to hold it.
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
    """Standard deviation of five neighbouring finite points around the best (shifted inside the grid at an edge)
    about their least-squares parabola (2 dof); NaN with fewer than five finite points."""
    finite = mean.dropna()
    if len(finite) < 5:
        return float("nan")
    start = int(np.clip(int(np.argmin(finite.to_numpy())) - 2, 0, len(finite) - 5))
    window = finite.iloc[start:start + 5]
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
    if any(len(y) < 2 and not np.isfinite(sigma) for _, y, sigma in curves):
        resamples = 0  # one seed and too few points to see the grid's noise: no interval, rather than a false one
    rng, draws = np.random.default_rng(seed), []
    for _ in range(resamples):
        tops = []
        for x, y, sigma in curves:
            noise = rng.normal(0.0, sigma, len(x)) if np.isfinite(sigma) else 0.0
            mean = y[rng.integers(0, len(y), len(y))].mean(axis=0) + noise
            top = vertex(x, mean)
            tops.append(top.x if top else np.nan)
        if np.isfinite(tops).all():
            draws.append(slope(values, tops))
    low, high = np.quantile(draws, [(1 - LEVEL) / 2, (1 + LEVEL) / 2]) if draws else (np.nan, np.nan)
    if draws:  # a skewed resample distribution can leave the estimate outside its percentiles: widened to hold it
        low, high = min(low, estimate), max(high, estimate)
    return {"slope": estimate, "low": float(low), "high": float(high), "level": LEVEL,
            "at": [float(v) for v in values], "optimum_x": [float(v.x) for v in found]}
