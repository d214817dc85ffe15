"""The loss law L(N, D) = E + A·N^−α + B·D^−β fitted by variable projection, and the whole curve it predicts.

Variable projection (Golub & Pereyra 1973): for fixed exponents (α, β) the law is linear in (E, A, B), whose best
non-negative values are one non-negative least squares solve (scipy's nnls); the exponents are then found by
minimising that solve's residual sum of squares over (α, β) alone — a two-dimensional, smooth profile, evaluated
on a coarse log grid (16 × 16, 0.02–1.5) and refined from its best point (scipy's L-BFGS-B, α, β in [0.01, 2]).
Fitting all five at once (Hoffmann et al. 2022, Approach 3) couples the scales with the exponents and stalls in
their valleys; Approach 2 (the parabola's vertex of each isoFLOP profile, then a line through the vertices) is
biased wherever a profile is not a parabola in log N about its sampled points (Besiroglu et al. 2024;
tests/test_varpro.py measures both on one synthetic law).

`leave_one_out`: the law refitted without the ladder's largest rung predicts it: the error the extrapolation
makes one rung out, the figure a user checks the target's prediction by.

The whole curve (`curve`): the ladder's validation curves at their optima, each as its reducible loss
(L(t) − E) / (L(T) − E) against the fraction t/T of its run, collapse onto one shape when the schedule is the same
("Scaling with Collapse", 2025); the full run's curve is E + (L̂(N, D) − E) · that shape, its band the ladder's
spread of shapes about it widened by the final loss's interval.
"""
from __future__ import annotations

import itertools

import numpy as np
from scipy.optimize import minimize, nnls

BOUNDS = ((0.01, 2.0), (0.01, 2.0))
GRID = tuple(np.geomspace(0.02, 1.5, 16))


def columns(n, d, alpha: float, beta: float) -> np.ndarray:
    n, d = np.asarray(n, float), np.asarray(d, float)
    return np.stack([np.ones_like(n), n ** -alpha, d ** -beta], axis=1)


def profile(exponents, n, d, loss) -> tuple[np.ndarray, float]:
    """((E, A, B) ≥ 0, residual sum of squares) at fixed exponents."""
    coef, norm = nnls(columns(n, d, *exponents), np.asarray(loss, float))
    return coef, float(norm ** 2)


def fit(n, d, loss) -> dict:
    """{E, A, B, alpha, beta, sse}: the law by variable projection (module docstring)."""
    n, d, loss = (np.asarray(v, float) for v in (n, d, loss))
    scale_n, scale_d = np.exp(np.mean(np.log(n))), np.exp(np.mean(np.log(d)))  # A, B at the points' scale

    def sse(p):
        return profile(p, n / scale_n, d / scale_d, loss)[1]

    start = min(itertools.product(GRID, GRID), key=sse)  # the profile on a coarse grid, then refined from its best
    best = minimize(sse, start, method="L-BFGS-B", bounds=BOUNDS)
    alpha, beta = (float(x) for x in best.x)
    (e, a, b), err = profile(best.x, n / scale_n, d / scale_d, loss)
    return {"E": float(e), "A": float(a * scale_n ** alpha), "B": float(b * scale_d ** beta), "alpha": alpha,
            "beta": beta, "sse": err, "points": len(loss)}


def value(law: dict, n, d):
    return law["E"] + law["A"] * np.asarray(n, float) ** -law["alpha"] + law["B"] * np.asarray(d, float) ** -law["beta"]


def leave_one_out(n, d, loss) -> dict:
    """{predicted, measured, error}: the law fitted without the largest rung (largest N, then D) predicting it;
    error relative to the measured loss."""
    n, d, loss = (np.asarray(v, float) for v in (n, d, loss))
    held = np.lexsort((d, n))[-1]
    keep = np.arange(len(loss)) != held
    predicted = float(value(fit(n[keep], d[keep], loss[keep]), n[held], d[held]))
    return {"predicted": predicted, "measured": float(loss[held]), "error": predicted / float(loss[held]) - 1}


def curve(law: dict, target_n: float, target_d: float, ladder: list[tuple[np.ndarray, np.ndarray]],
          final: tuple[float, float], fractions: np.ndarray) -> dict:
    """{fraction, loss, low, high}: the full run's predicted validation curve (module docstring). `ladder`: each
    run's (fractions of its run, validation losses), its last point its end; `final`: the final loss's interval."""
    return collapse(ladder, law["E"], float(value(law, target_n, target_d)), final, fractions)


def collapse(ladder: list[tuple[np.ndarray, np.ndarray]], floor: float, end: float, final: tuple[float, float],
             fractions: np.ndarray) -> dict:
    """The ladder's curves as reducible loss over their final value, their median scaled to `end` and their
    extremes to the final interval's ends (module docstring). Only where two curves or more were measured (a
    fraction before a curve's first evaluation is not extrapolated): the band starts where its spread is seen."""
    fractions = np.asarray(fractions, float)
    shapes = np.array([np.where(fractions >= f[0], np.interp(fractions, f, (y - floor) / (y[-1] - floor)), np.nan)
                       for f, y in ladder])
    seen = np.sum(np.isfinite(shapes), axis=0) >= min(2, len(ladder))
    shapes, fractions = shapes[:, seen], fractions[seen]
    return {"fraction": fractions, "loss": floor + (end - floor) * np.nanmedian(shapes, axis=0),
            "low": floor + (final[0] - floor) * np.nanmin(shapes, axis=0),
            "high": floor + (final[1] - floor) * np.nanmax(shapes, axis=0)}
