"""Fitted rules: a setting carried along an axis by the law `sweep verify --across AXIS` measured on this model.

    θ' = θ·(v'/v)^s,   s ∈ [s_lo, s_hi]   ⇒   θ' ∈ θ·(v'/v)^[s_lo, s_hi]

with v the proxy's axis value (batch size, tokens, depth), v' the target's and s the slope of log₂ θ* against
log₂ v: the posterior over the law's published prior given the ladder's measurement (sweep/rules/prior.py), or
the measurement alone under `--prior none` (sweep/verify/law.py). Composed over axes: η' = η·(B'/B)^b·(D'/D)^d·(L'/L)^l.
A law is a straight line through the measured range; beyond it nothing was measured (the optimal LR bends past
the critical batch, Li et al. 2024), so a target more than `EXTRAPOLATION`× past the range is refused unless
the user asks for it, and then flagged.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from sweep.rules.prior import LEVEL, Prior, nan, posterior

EXTRAPOLATION = 2.0  # how far past the measured range (a factor of the axis value) a law is trusted


@dataclass(frozen=True)
class Law:
    param: str  # the RunConfig path it moves (optimizer.lr, optimizer.weight_decay, …)
    axis: str  # batch_size, tokens or depth (the target's unit: examples, tokens, layers)
    slope: float
    low: float
    high: float
    measured: tuple[float, float]  # the axis values the law was measured over, in the axis's unit
    source: str  # the verify folder it came from
    poor_at: tuple[float, ...] = ()  # axis values whose optimum the grid did not resolve (sweep verify's poor fit)
    trial: str | None = None  # the settings it was measured from (STUDY#TRIAL, or "spec")
    prior: dict | None = None  # the published prior it started from (Prior.record()), None under --prior none
    measurement: tuple[float, float, float] | None = None  # the ladder's (slope, low, high); NaN ends: no interval
    weight: float = 1.0  # the measurement's share of the posterior
    used: str = "posterior"  # Posterior.used: "held" where the update crossed zero against the published direction
    batch: int | None = None  # the batch a horizon law's ladder ran at (None: another axis, or not recorded)

    @classmethod
    def updated(cls, param: str, axis: str, law: dict, measured: tuple[float, float], source: str,
                prior: Prior | None, trial: str | None = None, batch: int | None = None) -> Law | None:
        """The law transfer applies: the posterior of `prior` given a summary's law {slope, low, high, level};
        None when neither a prior nor an interval is there (nothing to carry a setting with)."""
        post = posterior(prior, law["slope"], nan(law.get("low")), nan(law.get("high")), law.get("level", LEVEL))
        if not math.isfinite(post.low):
            return None
        return cls(param, axis, post.centre, post.low, post.high, measured, source, tuple(law.get("poor_at", ())),
                   trial, prior.record() if prior else None,
                   (law["slope"], nan(law.get("low")), nan(law.get("high"))), post.weight, post.used, batch)

    def scale(self, value: float, ratio: float) -> tuple[float, float, float]:
        """(θ', and the interval's ends) for θ at the proxy and v'/v = ratio."""
        ends = sorted((value * ratio ** self.low, value * ratio ** self.high))
        return value * ratio ** self.slope, ends[0], ends[1]

    def beyond(self, *values: float) -> float:
        """How many times past the measured range the farthest of `values` (the proxy's and the target's) lies (1
        inside it): a law carries a setting from one end to the other, and both must be where it was measured."""
        low, high = self.measured
        return max(max(low / v, v / high) for v in (*values, low))

    def past(self, values: tuple[float, ...], flag: str, what: str) -> str:
        """The refusal of a carry more than EXTRAPOLATION× past the measured range (`beyond`)."""
        times = self.beyond(*values)
        shown = f"{times:.3g}×" if f"{times:.3g}" != f"{EXTRAPOLATION:g}" else f"more than {EXTRAPOLATION:g}×"
        return (f"{flag} fitted: {what} {' → '.join(f'{v:g}' for v in values)} reaches {shown} past the range "
                f"{self.measured[0]:g}–{self.measured[1]:g} the law of {self.param} was measured over "
                f"(at most {EXTRAPOLATION:g}×); measure further or pass --extrapolate")

    def describe(self, before: float, after: float, axis: str) -> str:
        """×(after/before)^slope [low, high] and what the slope is: the posterior over a published prior, or the
        measurement alone (no prior), and the range it was measured over."""
        what = "measured" if self.prior is None else f"posterior (measurement weight {self.weight:.0%})"
        return (f"×({after:g}/{before:g})^{self.slope:.3f} [{self.low:.3f}, {self.high:.3f}], {what}, over {axis} "
                f"{self.measured[0]:g}–{self.measured[1]:g}")

    def record(self, before: float, after: float, interval: tuple[float, float], ratio: float,
               extrapolated: bool, textbook: dict[str, float]) -> dict:
        return {"param": self.param, "axis": self.axis, "slope": self.slope, "interval_slope": [self.low, self.high],
                "measured": list(self.measured), "ratio": ratio, "before": before, "after": after,
                "interval": list(interval), "extrapolated": extrapolated, "textbook": textbook, "source": self.source,
                "poor_at": list(self.poor_at), "trial": self.trial, "prior": self.prior,
                "measurement": None if self.measurement is None else
                dict(zip(("slope", "low", "high"), self.measurement, strict=True)),
                "posterior": {"centre": self.slope, "low": self.low, "high": self.high, "weight": self.weight,
                              "used": self.used}}
