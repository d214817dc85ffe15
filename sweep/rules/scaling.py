"""The predicted final loss of the full run, from the loss at the optimum of the verify ladder's proxies.

Form (Hoffmann et al. 2022, "Training Compute-Optimal Large Language Models", eq. 2, Approach 3):

    L(N, D) = E + A·N^−α + B·D^−β

N the model's parameters (all of them), D the training tokens, each point a verify axis value's loss at its
fitted optimum (across width: N moves; across tokens or steps: D moves). The full form has five unknowns;
with fewer than `FULL_FORM_POINTS` points it is not identifiable, so the reduced form fixes the exponents at
Hoffmann et al.'s fit (α = 0.34, β = 0.28) and fits E, A, B ≥ 0 by non-negative least squares (scipy's nnls).
With enough points all five are fitted (scipy's least_squares, A and B in log space, exponents in [0, 2]).

The interval is a residual bootstrap: each resample refits the law to the fitted values plus residuals drawn
with replacement (scaled by √(n/(n−k)) for the k fitted unknowns), and predicts the target plus one more drawn
residual; the 2.5 and 97.5 percentiles bound it. It prices the noise of the points, not a wrong form.
"""
from __future__ import annotations

import numpy as np
from scipy.optimize import least_squares, nnls

HOFFMANN_ALPHA, HOFFMANN_BETA = 0.34, 0.28
FULL_FORM_POINTS = 8
LEVEL = 0.95
SOURCE = "Hoffmann et al. 2022, L = E + A·N^−α + B·D^−β"


def fit(n: np.ndarray, d: np.ndarray, loss: np.ndarray) -> dict:
    """{E, A, B, alpha, beta, form} fitted to the points (module docstring)."""
    n, d, loss = (np.asarray(v, float) for v in (n, d, loss))
    if len(loss) < FULL_FORM_POINTS or len(set(n)) < 3 or len(set(d)) < 3:
        columns = np.stack([np.ones_like(n), n ** -HOFFMANN_ALPHA, d ** -HOFFMANN_BETA], axis=1)
        (e, a, b), _ = nnls(columns, loss)
        return {"E": e, "A": a, "B": b, "alpha": HOFFMANN_ALPHA, "beta": HOFFMANN_BETA,
                "form": f"reduced: α = {HOFFMANN_ALPHA}, β = {HOFFMANN_BETA} fixed (Hoffmann et al.), E, A, B fitted"}

    def residuals(p):
        e, log_a, log_b, alpha, beta = p
        return e + np.exp(log_a) * n ** -alpha + np.exp(log_b) * d ** -beta - loss

    start = [0.5 * loss.min(), 0.0, 0.0, HOFFMANN_ALPHA, HOFFMANN_BETA]
    p = least_squares(residuals, start, bounds=([0, -30, -30, 0, 0], [loss.min(), 30, 30, 2, 2])).x
    return {"E": p[0], "A": float(np.exp(p[1])), "B": float(np.exp(p[2])), "alpha": p[3], "beta": p[4],
            "form": "full: E, A, B, α, β fitted"}


def value(law: dict, n, d):
    return law["E"] + law["A"] * np.asarray(n, float) ** -law["alpha"] + law["B"] * np.asarray(d, float) ** -law["beta"]


def predict(n: np.ndarray, d: np.ndarray, loss: np.ndarray, target_n: float, target_d: float,
            resamples: int = 500, seed: int = 0) -> dict:
    """{loss, low, high, level, form, source, E, A, B, alpha, beta, points, rms}: the target's predicted loss."""
    n, d, loss = (np.asarray(v, float) for v in (n, d, loss))
    law = fit(n, d, loss)
    fitted = value(law, n, d)
    unknowns = 3 if law["form"].startswith("reduced") else 5
    residuals = (loss - fitted) * np.sqrt(len(loss) / max(1, len(loss) - unknowns))
    rng, draws = np.random.default_rng(seed), []
    for _ in range(resamples):
        again = fit(n, d, fitted + rng.choice(residuals, len(loss)))
        draws.append(float(value(again, target_n, target_d)) + float(rng.choice(residuals)))
    low, high = np.quantile(draws, [(1 - LEVEL) / 2, (1 + LEVEL) / 2])
    return {"loss": float(value(law, target_n, target_d)), "low": float(low), "high": float(high), "level": LEVEL,
            "source": SOURCE, **{k: (float(v) if k != "form" else v) for k, v in law.items()},
            "rms": float(np.sqrt(np.mean((loss - fitted) ** 2))), "points": len(loss),
            "target": {"params": float(target_n), "tokens": float(target_d)}}
