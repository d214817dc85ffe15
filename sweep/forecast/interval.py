"""The interval a ladder is expected to buy on a law's slope, before any run: the planning arithmetic.

A law (sweep/verify/law.py) is the line log₂ optimum = c + s·u, u = log₂ (axis value), fitted by least squares to
the optimum measured at each rung. With R rungs u₁…u_R, each optimum the mean of S seeds' vertices whose noise is
σ_v (octaves, one seed), the slope's sampling standard error is the textbook one of a regression slope,

    se(s) = σ_v / √S / √Σ(u − ū)²

and with the law's published prior s ~ N(s₀, τ²) (sweep/rules/prior.py: `prior_for`, its sources) the posterior is
normal with sd_post = (τ⁻² + se⁻²)^−½ (the conjugate normal update, Gelman et al., "Bayesian Data Analysis", §2.5;
one formula, Prior.sd_after, for the planned width and the measured). Its 95 % half-width z·sd_post
(z = 1.96) carried to the target, u_t octaves from the proxy's rung, is the LR's uncertainty there in octaves:
z·sd_post·|u_t − u_p|. The plan is judged by that: a setting known to ±½ octave at the target is worth having,
one known to ±3 is not (an LR valley is about an octave wide at 1 % of loss).

σ_v's default is measured: the μP vertex of `sweep verify` moved ≈ 0.5 octave between seeds on short CPU runs of a
2-layer GPT on byte-level text (widths 32→256, 3 seeds; sweep/verify/command.py), i.e. 0.5·√3 per seed.
The grid stays at one octave per point: the three-point vertex (sweep/verify/fit.py) through points h octaves
apart, whose losses carry noise σ_L about a valley of curvature c, moves by σ_x ≈ σ_L / (√8 · c · h), which a
finer grid makes worse, not better; resolution is spent on seeds and on the grid's reach instead.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Protocol

import numpy as np

Z95 = 1.959963984540054
REACH = 3  # grid points either side of the optimum that must rise away from it (sweep/verify/fit.py's REACH)


class SlopePrior(Protocol):
    """What the planner reads of a law's prior. The prior itself, its sources and its update have one home,
    sweep/rules/prior.py (`Prior`, `prior_for`); the commands hand it in, so forecast stays below rules."""

    centre: float
    spread: float
    source: str

    def sd_after(self, se: float) -> float: ...

    def conjugate(self, slope: float, se: float) -> tuple[float, float]: ...


@dataclass(frozen=True)
class Noise:
    """The vertex noise one seed carries, in octaves of the setting, and where the figure comes from."""

    vertex_sd: float = 0.5 * math.sqrt(3)
    source: str = "μP vertex spread 0.5 octave over 3 seeds (2-layer GPT, byte-level text, widths 32→256)"


def spread(rungs: np.ndarray) -> float:
    """Σ(u − ū)² over the rungs' log₂ values: what the slope is measured against."""
    u = np.log2(np.asarray(rungs, float))
    return float(np.sum((u - u.mean()) ** 2))


def slope_se(rungs, seeds: int, noise: Noise = Noise()) -> float:
    """The least-squares slope's standard error for these rungs and seeds under the noise model (inf: one rung)."""
    s = spread(rungs)
    return noise.vertex_sd / math.sqrt(seeds) / math.sqrt(s) if s > 0 and seeds > 0 else math.inf


def expected_half_width(prior: SlopePrior, rungs, seeds: int, noise: Noise = Noise()) -> float:
    """The 95 % half-width of the slope's posterior that these rungs and seeds are expected to buy."""
    return Z95 * prior.sd_after(slope_se(rungs, seeds, noise))


def at_target(half_width: float, proxy: float, target: float) -> float:
    """A slope's half-width carried to the target: the setting's uncertainty there, in octaves."""
    return half_width * abs(math.log2(target / proxy))


def grid_points(prior: SlopePrior, rungs, proxy: float) -> int:
    """Points of a one-octave grid centred on the proxy's value (centre × 2^k, k = −K … K) that brackets every
    rung's optimum: K reaches the prior's predicted optimum at the farthest rung (|s₀·u|) and its 95 % spread
    there, plus REACH points beyond, so that every vertex is fitted inside the grid rather than found at its edge."""
    u = np.abs(np.log2(np.asarray(rungs, float) / proxy)).max()
    return 2 * (int(math.ceil((abs(prior.centre) + Z95 * prior.spread) * u)) + REACH) + 1
