"""The loss law by variable projection: it recovers known exponents from synthetic isoFLOP losses where Chinchilla's
Approach 2 (a parabola per isoFLOP profile, then a line through the vertices) is biased; the leave-one-out error on
the largest rung; the whole curve predicted from collapsed ladder curves."""
from __future__ import annotations

import numpy as np
import pytest

from sweep.forecast.varpro import curve, fit, leave_one_out, value

E, A, B, ALPHA, BETA = 1.69, 406.4, 410.7, 0.34, 0.28  # Hoffmann et al. 2022's fit, the law the data come from
BUDGETS = np.geomspace(1e18, 1e21, 5)
MODELS = np.geomspace(3e7, 3e9, 9)  # one grid of model sizes for every budget, as isoFLOP sweeps are often run


def isoflop(noise: float, seed: int = 0):
    n = np.repeat(MODELS[None], len(BUDGETS), 0).ravel()
    d = (BUDGETS[:, None] / (6 * MODELS[None])).ravel()
    loss = E + A * n ** -ALPHA + B * d ** -BETA
    return n, d, loss * (1 + np.random.default_rng(seed).normal(0, noise, len(loss)))


def approach2(n, d, loss) -> float:
    """a in N_opt ∝ C^a: the vertex of a parabola in ln N per budget, then the slope of ln N_opt on ln C."""
    budgets = np.unique(np.round(6 * n * d, -10))
    optima = []
    for c in budgets:
        at = np.isclose(6 * n * d, c, rtol=1e-6)
        p = np.polyfit(np.log(n[at]), loss[at], 2)
        optima.append(-p[1] / (2 * p[0]))
    return float(np.polyfit(np.log(budgets), optima, 1)[0])


def test_variable_projection_recovers_the_exponents_where_approach_2_is_biased():
    n, d, loss = isoflop(noise=0.002)
    law = fit(n, d, loss)
    a_true = BETA / (ALPHA + BETA)  # N_opt ∝ C^(β/(α+β))
    assert law["alpha"] == pytest.approx(ALPHA, abs=0.02) and law["beta"] == pytest.approx(BETA, abs=0.02)
    assert law["beta"] / (law["alpha"] + law["beta"]) == pytest.approx(a_true, abs=0.01)
    assert abs(approach2(n, d, loss) - a_true) > 0.015  # the same points, Approach 2: off by more than VP's bound
    exact = fit(*isoflop(noise=0.0))
    assert exact["alpha"] == pytest.approx(ALPHA, abs=1e-3) and exact["E"] == pytest.approx(E, abs=1e-3)


def test_leave_one_out_predicts_the_largest_rung_of_a_ladder():
    widths = np.array([1e6, 2e6, 4e6, 8e6, 16e6])
    tokens = np.array([1e8, 2e8, 4e8])
    n, d = (g.ravel() for g in np.meshgrid(widths, tokens))
    loss = (E + A * n ** -ALPHA + B * d ** -BETA) * (1 + np.random.default_rng(1).normal(0, 0.001, len(n)))
    out = leave_one_out(n, d, loss)
    assert out["measured"] == loss[np.lexsort((d, n))[-1]]
    assert abs(out["error"]) < 0.005


def test_the_whole_curve_is_predicted_from_the_ladders_collapsed_curves():
    """Curves of one schedule whose reducible loss decays the same way in the fraction of the run: the target's
    curve, built from three ladder runs' shapes and the law's end point, lies within 1 % of the true one."""
    law = {"E": E, "A": A, "B": B, "alpha": ALPHA, "beta": BETA}
    shape = lambda f: (1 + 4 * np.exp(-6 * f)) / (1 + 4 * np.exp(-6.0))  # noqa: E731 - one shape for all
    runs = []
    for n, d, wobble in ((1e6, 1e8, 0.99), (2e6, 1e8, 1.0), (4e6, 2e8, 1.01)):
        f = np.linspace(0.02, 1, 50)
        end = float(value(law, n, d))
        runs.append((f, E + (end - E) * shape(f) ** wobble))
    fractions = np.linspace(0.05, 1, 20)
    target_end = float(value(law, 6.4e7, 8e8))
    predicted = curve(law, 6.4e7, 8e8, runs, (target_end * 0.99, target_end * 1.01), fractions)
    truth = E + (target_end - E) * shape(fractions)
    assert np.max(np.abs(predicted["loss"] / truth - 1)) < 0.01
    assert np.all(predicted["low"] <= truth) and np.all(truth <= predicted["high"])
