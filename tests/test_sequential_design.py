"""The sequential design narrows a synthetic law's interval at the target faster than a fixed ladder of equal cost,
its interval still holds the truth, and it stops at the goal and says so."""
from __future__ import annotations

import math

import numpy as np

from sweep.forecast.design import Ladder, sequential
from sweep.forecast.interval import Z95, at_target
from sweep.rules.prior import HORIZON

PRIOR = HORIZON  # −0.3 ± 0.15, Bjorck et al. 2025
PROXY, TARGET = 2.0 ** 20, 2.0 ** 30  # tokens: ten octaves of horizon to cross
TRUE_NOISE = 0.6  # octaves per seed; the design starts from Noise()'s 0.87 and learns this one


def ladder() -> Ladder:
    return Ladder("lr × tokens", "optimizer.lr", "tokens", PRIOR, PROXY, TARGET, PROXY / 8, TARGET / 4,
                  cost=lambda d: d)


def measure_with(rng, truth):
    return lambda rung, seeds: truth * math.log2(rung) + 1.0 + rng.normal(0, TRUE_NOISE, seeds)


def fixed(rng, truth, budget) -> tuple[float, bool]:
    """The ladder a user types: the proxy and three doublings of its tokens, as many seeds as the budget buys."""
    rungs = [PROXY * 2 ** k for k in range(4)]
    plan = Ladder("lr × tokens", "optimizer.lr", "tokens", PRIOR, PROXY, TARGET, PROXY / 8, TARGET / 4,
                  cost=lambda d: d, rungs=rungs, seeds=1)
    seeds = max(2, int(budget // plan.flops()))
    u = np.log2(rungs)
    y = np.array([np.mean(measure_with(rng, truth)(r, seeds)) for r in rungs])
    slope = np.polyfit(u, y, 1)[0]
    se = TRUE_NOISE / math.sqrt(seeds) / math.sqrt(np.sum((u - u.mean()) ** 2))
    mean, sd = PRIOR.conjugate(slope, se)
    return at_target(Z95 * sd, PROXY, TARGET), abs(mean - truth) <= Z95 * sd


def test_sequential_design_narrows_faster_than_a_fixed_ladder_of_equal_cost():
    rng = np.random.default_rng(0)
    budget = 4000 * PROXY  # 4000 proxy-length runs
    seq, fix, held = [], [], []
    for _ in range(40):
        truth = rng.normal(PRIOR.centre, PRIOR.spread)
        out = sequential(ladder(), budget, goal=1e-3, measure=measure_with(rng, truth))
        assert out["flops"] <= budget and out["stopped"] == "budget"
        seq.append(out["at_target"])
        held.append(abs(out["slope"] - truth) <= out["at_target"] / math.log2(TARGET / PROXY))
        width, _ = fixed(rng, truth, budget)
        fix.append(width)
    assert np.mean(seq) < 0.8 * np.mean(fix), (np.mean(seq), np.mean(fix))
    assert np.mean(held) >= 0.88


def test_sequential_design_stops_at_the_goal_and_says_so():
    rng = np.random.default_rng(1)
    out = sequential(ladder(), 1e6 * PROXY, goal=1.0, measure=measure_with(rng, -0.3))
    assert out["stopped"] == "goal" and out["at_target"] <= 1.0 and out["flops"] < 1e6 * PROXY
