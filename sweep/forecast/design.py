"""Which rungs and seeds a budget buys: the ladder of each law, grown greedily by interval narrowed per FLOP.

A law's ladder (sweep/forecast/interval.py) is its rungs (axis values, one octave apart, starting at the proxy's
own value) × seeds × a grid. Two moves grow it: a rung one octave past either end (within the axis's bounds), or
one more seed at every rung. Each move costs its runs' FLOPs and narrows the law's expected interval at the target;
the plan takes, again and again, the affordable move with the largest gain per FLOP, where the gain is the drop in

    J = Σ_laws log max(half-width at the target, goal)

(a law already at its goal gains nothing; a log, so that halving a wide interval is worth halving a narrow one).
It stops when every law reaches its goal or no affordable move narrows any. Greedy, not optimal: one octave at a
time is the resolution `sweep verify` runs at, and its cost is a few hundred evaluations of the arithmetic.

The sequential design (`sequential`) is the same rule run one move at a time against measurements: after each
move the seeds' spread re-estimates the vertex noise (pooled over rungs), so that the next move is priced by the
noise the ladder shows rather than the prior's figure, and the ladder stops once the measured interval reaches the
goal or the budget ends, and says which.
"""
from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field, replace

import numpy as np

from sweep.forecast.interval import Z95, Noise, SlopePrior, at_target, expected_half_width, grid_points

MIN_SEEDS = 2  # the seeds' spread is the noise the interval is measured from: one seed measures none
MAX_SEEDS = 64


@dataclass
class Ladder:
    """One law's ladder: a setting's optimum across an axis, from the proxy's value toward the target's."""

    name: str  # e.g. "lr × batch"
    param: str  # the RunConfig path on the grid
    axis: str  # width, batch_size, tokens or depth (sweep verify's --across)
    prior: SlopePrior  # sweep/rules/prior.py's Prior
    proxy: float  # the proxy's axis value
    target: float  # the full run's
    low: float  # the smallest rung allowed
    high: float  # the largest
    cost: Callable[[float], float]  # FLOPs of one run at an axis value
    rungs: list[float] = field(default_factory=list)
    seeds: int = MIN_SEEDS
    quantum: float = 1.0  # rungs are whole multiples of this (a tokens rung: whole steps)

    def __post_init__(self):
        if not self.rungs:
            self.rungs = [self.proxy] + [r for r in (self.next_rung(+1) or self.next_rung(-1),) if r]

    def next_rung(self, side: int) -> float | None:
        """One octave past the end on `side` (+1 up, −1 down), or None past the bounds."""
        end = max(self.rungs or [self.proxy]) if side > 0 else min(self.rungs or [self.proxy])
        octave = round(math.log2(end / self.proxy)) + side  # from the proxy's value, so that rounding never drifts
        rung = float(round(self.proxy * 2.0 ** octave / self.quantum) * self.quantum)
        return rung if self.low <= rung <= self.high and rung not in self.rungs else None

    @property
    def grid(self) -> int:
        return grid_points(self.prior, self.rungs, self.proxy)

    def flops(self) -> float:
        return self.grid * self.seeds * sum(self.cost(r) for r in self.rungs)

    def runs(self) -> int:
        return self.grid * self.seeds * len(self.rungs)

    def half_width(self, noise: Noise) -> float:
        """The slope's expected 95 % half-width."""
        return expected_half_width(self.prior, self.rungs, self.seeds, noise)

    def at_target(self, noise: Noise) -> float:
        """The setting's expected 95 % half-width at the target, octaves."""
        return at_target(self.half_width(noise), self.proxy, self.target)

    def prior_at_target(self) -> float:
        return at_target(Z95 * self.prior.spread, self.proxy, self.target)

    def moves(self) -> list[Ladder]:
        """The ladders one move away: a rung past either end, one more seed."""
        grown = [replace(self, rungs=sorted([*self.rungs, r])) for r in (self.next_rung(+1), self.next_rung(-1)) if r]
        return grown + ([replace(self, seeds=self.seeds + 1)] if self.seeds < MAX_SEEDS else [])


def objective(ladders: list[Ladder], goal: float, noise: Noise) -> float:
    return sum(math.log(max(ladder.at_target(noise), goal)) for ladder in ladders)


def total(ladders: list[Ladder]) -> float:
    """The ladders' FLOPs, their shared runs once (`shared_runs`)."""
    if not ladders:
        return 0.0
    return sum(ld.flops() for ld in ladders) - shared_runs(ladders) * ladders[0].cost(ladders[0].proxy)


def shared_runs(ladders: list[Ladder]) -> int:
    """The runs of the proxy's own rung one ladder trains and the others of its setting take (sweep/study/twin.py):
    each ladder runs it at centre × 2^k, k = −K … K, seeds 0 … S − 1, so a grid point is trained once for the most
    seeds any ladder reaching it runs, Σ_k max{S : K ≥ |k|}, and every other run of that rung is shared."""
    shared = 0
    for param in {ld.param for ld in ladders}:
        same = [(ld.grid // 2, ld.seeds) for ld in ladders if ld.param == param]
        trained = sum(max(seeds for reach, seeds in same if reach >= abs(k))
                      for k in range(-max(r for r, _ in same), max(r for r, _ in same) + 1))
        shared += sum((2 * reach + 1) * seeds for reach, seeds in same) - trained
    return shared


def grow(ladders: list[Ladder], budget: float, goal: float, noise: Noise = Noise()) -> list[Ladder]:
    """The ladders grown by the greedy rule (module docstring) within `budget` FLOPs (inf: until every goal). A move
    is ranked by its own runs' FLOPs and afforded by the `total`, the shared rung once: ranked by the total, a seed
    whose proxy-rung runs another ladder trains looked nearly free, and the 125M plan piled 64 seeds on two width
    rungs, then could afford no third (±0.79 octave for 3.6 %; ranked by its own runs, ±0.69 for 4.9 %)."""
    ladders = list(ladders)
    while True:
        now, best, best_gain = objective(ladders, goal, noise), None, 0.0
        for i, ladder in enumerate(ladders):
            for moved in ladder.moves():
                extra, grown = moved.flops() - ladder.flops(), [*ladders[:i], moved, *ladders[i + 1:]]
                if extra <= 0 or total(grown) > budget:
                    continue
                gain = (now - objective(grown, goal, noise)) / extra
                if gain > best_gain:
                    best, best_gain = (i, moved), gain
        if best is None:
            return ladders
        ladders[best[0]] = best[1]


def pooled_noise(measured: dict[float, np.ndarray], prior: Noise) -> Noise:
    """The vertex noise per seed, pooled over the rungs' seeds (the prior's figure until two seeds anywhere)."""
    residuals = [v - v.mean() for v in measured.values() if len(v) > 1]
    dof = sum(len(r) - 1 for r in residuals)
    if dof < 1:
        return prior
    return Noise(float(np.sqrt(sum(np.sum(r ** 2) for r in residuals) / dof)), "the ladder's own seeds, pooled")


def measured_slope(measured: dict[float, np.ndarray], noise: Noise) -> tuple[float, float]:
    """(slope, its standard error) of log₂ optimum on log₂ rung, each rung the mean of its seeds' vertices."""
    u = np.log2(np.array(sorted(measured), float))
    y = np.array([measured[r].mean() for r in sorted(measured)])
    weights = np.array([len(measured[r]) for r in sorted(measured)], float)
    ubar = np.sum(weights * u) / weights.sum()
    sxx = float(np.sum(weights * (u - ubar) ** 2))
    if sxx <= 0:
        return math.nan, math.inf
    slope = float(np.sum(weights * (u - ubar) * y) / sxx)
    return slope, noise.vertex_sd / math.sqrt(sxx)


def sequential(ladder: Ladder, budget: float, goal: float, measure: Callable[[float, int], np.ndarray],
               noise: Noise = Noise()) -> dict:
    """Run the ladder one move at a time (module docstring). `measure(rung, seeds)` returns that many seeds'
    vertices (log₂ optimum) at a rung. {slope, sd, at_target, flops, rungs, seeds, stopped: goal|budget}."""
    measured: dict[float, np.ndarray] = {}
    spent = 0.0

    def run(current: Ladder) -> None:
        nonlocal spent
        for rung in current.rungs:
            have = len(measured.get(rung, ()))
            if have < current.seeds:
                extra = measure(rung, current.seeds - have)
                measured[rung] = np.concatenate([measured.get(rung, np.array([])), extra])
                spent += current.grid * (current.seeds - have) * current.cost(rung)

    run(ladder)
    while True:
        noise_now = pooled_noise(measured, noise)
        slope, se = measured_slope(measured, noise_now)
        mean, sd = ladder.prior.conjugate(slope, se)
        reached = at_target(Z95 * sd, ladder.proxy, ladder.target) <= goal
        if reached:
            stopped = "goal"
            break
        grown = grow([ladder], budget - spent + ladder.flops(), goal, noise_now)[0]
        if grown == ladder:
            stopped = "budget"
            break
        ladder = next(m for m in ladder.moves() if _toward(m, grown))
        run(ladder)
    return {"slope": mean, "sd": sd, "at_target": at_target(Z95 * sd, ladder.proxy, ladder.target), "flops": spent,
            "rungs": sorted(measured), "seeds": ladder.seeds, "stopped": stopped}


def _toward(moved: Ladder, grown: Ladder) -> bool:
    """Whether one move is a first step of the grown ladder."""
    return set(moved.rungs) <= set(grown.rungs) and moved.seeds <= grown.seeds
