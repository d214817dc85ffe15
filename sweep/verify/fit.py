"""The optimum of a loss-vs-setting curve, how well it is located, its drift, and how forgiving it is.

x is log₂ of the setting (octaves), y the validation loss; a diverged or missing point is NaN.

- `vertex`: the parabola through the best grid point and its two neighbours (three points, exact), its
  vertex −b/(2a) the optimum. Through three points whose middle one is the lowest the parabola opens upward,
  its vertex lies between the neighbours and its value is at most the best point's loss: the loss reported at
  the optimum can never sit above a point that was run. (A least-squares parabola through five points does:
  on an asymmetric valley its vertex value was measured 0.039 above the best run point.) A fitted vertex
  resolves moves smaller than the grid's spacing, which an argmin cannot.
  When the best point is at the grid's edge or beside a diverged point, the optimum is that point, not fitted.
- `residual`: the root mean square of the points two steps from the best about that parabola — how well
  the local parabola describes the valley beyond the points it went through (0 when there are none; large on
  an asymmetric valley, which the three-point vertex still locates).
  The fit is `poor` when it is not fitted, or when the valley is not one valley within `REACH` steps of the
  best point (a point lower than one nearer the best, on the same side): the noise is then as deep as the
  valley, and the vertex is a guess at the grid's resolution.
- drift: max − min over widths of the optimum (in octaves).
- `sensitivity` (Wortsman et al. 2023, "Small-scale proxies for large-scale Transformer training
  instabilities", LR sensitivity): mean over the grid of min(y, y_init) − min y, with y_init
  the loss at initialization; a diverged point counts as y_init. Small: the optimum is forgiving.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

REACH = 3  # grid steps each side of the best point that must rise away from it


@dataclass(frozen=True)
class Optimum:
    x: float  # log₂ of the setting at the optimum
    loss: float  # the parabola's value there (the best point's loss when not fitted)
    fitted: bool
    residual: float = 0.0  # RMS of the points two steps out about the parabola (loss units)
    poor: bool = False  # not fitted, or not one valley within REACH steps of the best point


def vertex(x: np.ndarray, y: np.ndarray) -> Optimum | None:
    """The optimum of y over the grid x (module docstring); None when no point is finite."""
    order = np.argsort(x)
    x, y = np.asarray(x, float)[order], np.asarray(y, float)[order]
    finite = np.isfinite(y)
    if not finite.any():
        return None
    best = int(np.nanargmin(np.where(finite, y, np.nan)))
    if best == 0 or best == len(x) - 1 or not finite[best - 1:best + 2].all():
        return Optimum(float(x[best]), float(y[best]), False, 0.0, True)
    coeffs = np.polyfit(x[best - 1:best + 2], y[best - 1:best + 2], 2)
    top = float(-coeffs[1] / (2 * coeffs[0]))  # a > 0: the middle point is the lowest of the three
    outer = [i for i in (best - 2, best + 2) if 0 <= i < len(x) and finite[i]]
    residual = float(np.sqrt(np.mean((y[outer] - np.polyval(coeffs, x[outer])) ** 2))) if outer else 0.0
    return Optimum(top, float(min(np.polyval(coeffs, top), y[best])), True, residual, not one_valley(y, best))


def one_valley(y: np.ndarray, best: int) -> bool:
    """Whether the finite points within REACH steps of `best` never fall moving away from it."""
    left = y[max(0, best - REACH):best + 1][::-1]
    right = y[best:best + REACH + 1]
    return all(np.all(np.diff(side[np.isfinite(side)]) >= 0) for side in (left, right))


def sensitivity(y: np.ndarray, loss_init: float) -> float:
    """Mean over the grid of min(y, y_init) − min y (NaN, a diverged point, counts as y_init)."""
    y = np.where(np.isfinite(y), np.asarray(y, float), loss_init)
    capped = np.minimum(y, loss_init)
    return float(capped.mean() - capped.min())


def drift(optima: list[float]) -> float:
    """max − min of the optima across widths (octaves)."""
    return float(max(optima) - min(optima)) if optima else float("nan")
