"""Grids that bracket the optimum: which settings to run next on one loss curve, until its optimum is bracketed.

x is log₂ of the setting on a sorted grid, y the seed-mean loss there (NaN: a seed diverged). The optimum is
bracketed when, on each side of the best point, some point lies above it by more than `noise` (a diverged point
counts as above); its vertex is then an interpolation, not an extrapolation. Until then:
- the best point at the grid's edge, or a side whose every point is within the noise of the best (a flat valley):
  extend the grid by one coarse step past that edge (a vertex fitted at an edge is an extrapolation, and a law
  through it inherits the error);
- bracketed but coarse: the midpoints between the best point and each neighbour farther than `resolution` octaves
  from it, so the three points of the vertex (sweep/verify/fit.py) sit on the valley's floor.
Each round adds at most two points; `refine` runs rounds until nothing is left to add or the budget is spent.
The noise is the standard error of a point's seed mean where seeds were run, else the caller's bound (with one seed
the noise is unknown, and the caller must say what it assumes).
"""
from __future__ import annotations

from collections.abc import Callable

import numpy as np

RESOLUTION = 0.5  # octaves: the spacing around the best point refinement stops at
REFINE = 4  # points refinement may add per curve unless told otherwise (verify --refine; a plan's worst case)


def next_values(x: np.ndarray, y: np.ndarray, noise: float, resolution: float = RESOLUTION) -> list[float]:
    """The log₂ settings to run next on this curve (module docstring); [] when its optimum is bracketed and resolved."""
    if not (np.isfinite(noise) and noise >= 0):
        raise ValueError(f"the noise a rise must exceed is finite and ≥ 0, got {noise}")
    x, y = np.asarray(x, float), np.asarray(y, float)
    x, y = x[np.isfinite(x)], y[np.isfinite(x)]  # a setting that is no number is no point of the grid
    if not len(x):
        return []
    order = np.argsort(x)
    x, y = x[order], y[order]
    step = float(np.max(np.diff(x))) if len(x) > 1 else 1.0
    finite = np.isfinite(y)
    if not finite.any():
        return [float(x[0] - step)]  # every point diverged: the optimum lies below the grid
    best = int(np.nanargmin(np.where(finite, y, np.nan)))
    risen = np.where(finite, y - y[best], np.inf) > noise  # a diverged point is above the best
    out = []
    if not risen[:best].any():
        out.append(float(x[0] - step))
    if not risen[best + 1:].any():
        out.append(float(x[-1] + step))
    if out:
        return out
    for neighbour in (best - 1, best + 1):
        gap = abs(x[neighbour] - x[best])
        if gap > resolution + 1e-9:
            out.append(float((x[neighbour] + x[best]) / 2))
    return out


def refine(objective: Callable[[float], float], x: list[float], noise: float, budget: int,
           resolution: float = RESOLUTION) -> tuple[dict[float, float], bool]:
    """Run `objective` (log₂ setting → loss, NaN diverged) on the grid `x`, then `next_values` round by round until
    nothing is left to add or `budget` more points were run; ({x: loss}, whether it ended bracketed and resolved)."""
    if budget < 0:
        raise ValueError(f"a refinement budget is a count of points ≥ 0, got {budget}")
    seen = {float(v): objective(float(v)) for v in x}
    spent = 0
    while True:
        grid = np.array(sorted(seen))
        todo = [v for v in next_values(grid, np.array([seen[v] for v in grid]), noise, resolution) if v not in seen]
        if not todo:
            return seen, True
        if spent + len(todo) > budget:
            return seen, False
        for v in todo:
            seen[v] = objective(v)
        spent += len(todo)
