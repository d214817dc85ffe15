"""One fit over every point of a ladder: a valley in log₂ setting whose vertex moves along log₂ axis.

    loss(x, a, r) = L_{a,r} + h_a·(x − x₀ − s·(u_a − ū))²,    u_a = log₂ a,   h_a > 0

with x the log₂ setting, a the axis value, r the seed (its own level L_{a,r}: a seed that trains a little better at
every setting shifts its curve, not the optimum), h_a the valley's curvature at each axis value, and x₀, s shared:
the law log₂ θ* = x₀ + s·(u − ū). Seeds are replicates of the same valley, every point counts once, and the slope
comes out of one nonlinear least-squares fit (scipy's `least_squares`) instead of a line through per-value vertices.
Only each value's valley is fitted: the points within `REACH` octaves of its best seed-mean point, at least the three
nearest (a valley is a parabola near its floor; LR valleys are steeper above the optimum than below, and a wider
window pulls the vertex toward the shallow side by an amount that changes along the axis: on a 1-octave grid five
points measured an mlp's μP width slope at 0.14 where its vertices drift 0.04 per octave); a setting where any seed
diverged is left out.

The slope's interval is the Wald interval of the fit, s ± t_{n−p}·se(s), se from σ̂²(JᵀJ)⁻¹ with σ̂² = RSS/(n − p)
(Bates & Watts 1988, §2.3), its coverage checked on synthetic ladders (tests/test_laws.py). σ̂ prices the points'
scatter about the valley; with one seed the seed-to-seed movement of the optimum is not seen (`seed_noise_known`
false), and the interval says so. No interval (NaN) when the fit has no residual degrees of freedom.
"""
from __future__ import annotations

import math

import numpy as np
import pandas as pd
from scipy.optimize import least_squares
from scipy.stats import t as student

REACH = 1.5  # octaves each side of a value's best point whose points enter its valley (at least the three nearest)
LEVEL = 0.95


def windows(at: np.ndarray, x: np.ndarray, loss: np.ndarray) -> list[tuple[float, np.ndarray, bool]]:
    """(axis value, a mask of its valley's points, whether its best point is at the grid's edge) per axis value: the
    settings within REACH octaves of its best seed-mean point (at least three), less any where a seed diverged."""
    out = []
    for value in np.unique(at):
        here = at == value
        xs, where = np.unique(x[here], return_inverse=True)
        total, count = np.bincount(where, loss[here]), np.bincount(where)
        mean = total / count  # NaN where any seed diverged
        finite = np.isfinite(mean)
        xs, mean = xs[finite], mean[finite]
        if len(xs) < 3:
            continue
        best = int(np.argmin(mean))
        near = np.argsort(np.abs(xs - xs[best]), kind="stable")
        take = max(3, int(np.sum(np.abs(xs - xs[best]) <= REACH + 1e-9)))  # at least the three nearest the best
        out.append((float(value), here & np.isin(x, xs[near[:take]]), best in (0, len(xs) - 1)))
    return out


def valley_fit(points: pd.DataFrame, axis: str, level: float = LEVEL) -> dict | None:
    """{slope, low, high, level, centre, residual, scatter, dof, points, curves, seeds, seed_noise_known, edge_at}
    of the joint fit (module docstring) over rows (axis, x, seed, loss); None with fewer than two axis values that
    have a valley."""
    return fit_valley(*(points[c].to_numpy(float) for c in (axis, "x", "seed", "loss")), level=level)


def fit_valley(at: np.ndarray, x: np.ndarray, seed: np.ndarray, loss: np.ndarray, level: float = LEVEL) -> dict | None:
    """`valley_fit` on arrays: one entry per run (axis value, log₂ setting, seed, loss; NaN a diverged run)."""
    found = windows(at, x, loss)
    if len(found) < 2:
        return None
    u = np.log2([value for value, _, _ in found])
    ubar = float(u.mean())
    rung = np.full(len(x), -1)
    for i, (_, mask, _) in enumerate(found):
        rung[mask] = i
    keep = (rung >= 0) & np.isfinite(loss)
    x, y, rung, seed = x[keep], loss[keep], rung[keep], seed[keep]
    curve = np.unique(np.column_stack([rung, seed]), axis=0, return_inverse=True)[1].ravel()
    rung_of = np.zeros(curve.max() + 1, int)
    rung_of[curve] = rung
    tops, cov, rss = curves_fit(x, y, rung, curve, len(found))
    slope, low, high, centre, scatter = line(tops, cov, u[rung_of] - ubar, level)
    seeds = len(np.unique(seed))
    return {"slope": slope, "low": low, "high": high, "level": level, "centre": centre, "axis_centre": 2.0 ** ubar,
            "residual": math.sqrt(rss / len(x)), "scatter": scatter, "dof": len(tops) - 2, "points": len(x),
            "curves": len(tops), "seeds": seeds, "seed_noise_known": seeds > 1,
            "edge_at": [value for value, _, edge in found if edge], "fit": "joint valley"}


def curves_fit(x, y, rung, curve, n_rungs) -> tuple[np.ndarray, np.ndarray, float]:
    """Stage 1, every point at once: loss = L_c + h_a·(x − v_c)² (a level and a vertex per curve c = (value, seed),
    a curvature per value a); (the vertices v_c, their covariance σ̂²(JᵀJ)⁻¹, the residual sum of squares)."""
    n_curves = int(curve.max()) + 1
    start = initial(x, y, rung, curve, n_rungs, n_curves)

    def split(p):
        return p[:n_curves], np.exp(p[n_curves:n_curves + n_rungs]), p[n_curves + n_rungs:]

    def residuals(p):
        v, h, lv = split(p)
        return lv[curve] + h[rung] * (x - v[curve]) ** 2 - y

    def jacobian(p):
        v, h, _ = split(p)
        d, rows = x - v[curve], np.arange(len(x))
        jac = np.zeros((len(x), len(p)))
        jac[rows, curve] = -2 * h[rung] * d
        jac[rows, n_curves + rung] = h[rung] * d ** 2
        jac[rows, n_curves + n_rungs + curve] = 1.0
        return jac

    fit = least_squares(residuals, start, jac=jacobian, method="lm", x_scale="jac")
    rss, dof = float(np.sum(fit.fun ** 2)), len(x) - len(start)
    jac = jacobian(fit.x)
    sigma2 = rss / dof if dof > 0 else 0.0
    cov = np.linalg.pinv(jac.T @ jac)[:n_curves, :n_curves] * sigma2
    return fit.x[:n_curves], cov, rss


def line(tops, cov, u, level) -> tuple[float, float, float, float, float]:
    """Stage 2: v_c = x₀ + s·u_c + δ_c, δ_c ~ N(0, τ²) the optimum's own scatter (seeds, and the law's curvature)
    beyond each vertex's fit error; τ² by DerSimonian & Laird's moments, s by generalised least squares with
    covariance C + τ²I, its interval Knapp & Hartung's (2003): the variance × max(1, Q/(k − 2)), t with k − 2
    degrees of freedom. (slope, low, high, x₀, τ); no interval with two curves, or one value's seeds alone."""
    k, design = len(tops), np.column_stack([np.ones(len(tops)), u])
    if k < 3 or np.ptp(u) == 0:
        s, x0 = np.polyfit(u, tops, 1) if np.ptp(u) > 0 else (math.nan, math.nan)
        return float(s), math.nan, math.nan, float(x0), math.nan
    w = 1 / np.maximum(np.diag(cov), 1e-12)
    beta = np.linalg.lstsq(design * np.sqrt(w)[:, None], tops * np.sqrt(w), rcond=None)[0]
    q = float(np.sum(w * (tops - design @ beta) ** 2))
    hat = design.T @ (design * w[:, None])
    trace = w.sum() - np.trace(np.linalg.solve(hat, design.T @ (design * (w ** 2)[:, None])))
    tau2 = max(0.0, (q - (k - 2)) / trace) if trace > 0 else 0.0
    inv = np.linalg.inv(cov + tau2 * np.eye(k) + 1e-18 * np.eye(k))
    var = np.linalg.inv(design.T @ inv @ design)
    beta = var @ design.T @ inv @ tops
    r = tops - design @ beta
    factor = max(1.0, float(r @ inv @ r) / (k - 2))
    half = float(student.ppf((1 + level) / 2, k - 2) * math.sqrt(factor * var[1, 1]))
    return float(beta[1]), float(beta[1] - half), float(beta[1] + half), float(beta[0]), math.sqrt(tau2)


def initial(x, y, rung, curve, n_rungs, n_curves) -> np.ndarray:
    """Starting values: each curve's own least-squares parabola's vertex, each value's mean curvature, the floors."""
    tops, curv = np.zeros(n_curves), np.zeros(n_rungs)
    for c in range(n_curves):
        xs, ys = x[curve == c], y[curve == c]
        a, b, _ = np.polyfit(xs, ys, 2) if len(xs) >= 3 else (0.0, 0.0, 0.0)
        tops[c] = np.clip(-b / (2 * a), xs.min() - 1, xs.max() + 1) if a > 1e-9 else xs[np.argmin(ys)]
        curv[rung[curve == c][0]] += max(a, 1e-3)
    curv /= np.maximum(np.bincount(rung[np.unique(curve, return_index=True)[1]], minlength=n_rungs), 1)
    floor = np.array([y[curve == c].min() for c in range(n_curves)])
    return np.concatenate([tops, np.log(curv), floor])
