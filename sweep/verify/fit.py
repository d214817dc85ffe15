"""The optimum of a loss-vs-setting curve, its drift across widths, and how forgiving it is.

x is log₂ of the setting (octaves), y the validation loss; a diverged or missing point is NaN.

- `vertex`: a parabola y = a·x² + b·x + c least-squares fitted through the best grid point and up to
  `k` neighbours on each side; the optimum is its vertex −b/(2a), kept inside the fitted points.
  When the fit does not open upward (a ≤ 0) or fewer than 3 points are finite, the best grid point.
  A fitted vertex resolves moves smaller than the grid's spacing, which an argmin cannot.
- drift: max − min over widths of the optimum (in octaves).
- `sensitivity` (Wortsman et al. 2023, "Small-scale proxies for large-scale Transformer training
  instabilities", LR sensitivity): mean over the grid of min(y, y_init) − min y, with y_init
  the loss at initialization; a diverged point counts as y_init. Small: the optimum is forgiving.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Optimum:
    x: float  # log₂ of the setting at the optimum
    loss: float  # the fitted parabola's value there (the best point's loss when not fitted)
    fitted: bool


def vertex(x: np.ndarray, y: np.ndarray, k: int = 2) -> Optimum | None:
    """The optimum of y over the grid x (module docstring); None when no point is finite."""
    order = np.argsort(x)
    x, y = np.asarray(x, float)[order], np.asarray(y, float)[order]
    finite = np.isfinite(y)
    if not finite.any():
        return None
    best = int(np.nanargmin(np.where(finite, y, np.nan)))
    window = slice(max(0, best - k), best + k + 1)
    wx, wy = x[window][finite[window]], y[window][finite[window]]
    if len(wx) >= 3:
        a, b, c = np.polyfit(wx, wy, 2)
        if a > 0:
            top = float(np.clip(-b / (2 * a), wx.min(), wx.max()))
            return Optimum(top, float(np.polyval([a, b, c], top)), True)
    return Optimum(float(x[best]), float(y[best]), False)


def sensitivity(y: np.ndarray, loss_init: float) -> float:
    """Mean over the grid of min(y, y_init) − min y (NaN, a diverged point, counts as y_init)."""
    y = np.where(np.isfinite(y), np.asarray(y, float), loss_init)
    capped = np.minimum(y, loss_init)
    return float(capped.mean() - capped.min())


def drift(optima: list[float]) -> float:
    """max − min of the optima across widths (octaves)."""
    return float(max(optima) - min(optima)) if optima else float("nan")
