"""Verdicts as equivalence tests: is a slope within ±band of a reference value?

Two one-sided tests (Schuirmann 1987, TOST) at the law's interval: the slope is equivalent to the reference when
its whole interval lies inside [ref − band, ref + band] ("pass"), different when the interval lies wholly outside
("fail"), and "undecided" when it straddles a bound. (Asking the interval to contain the reference instead punishes
precise measurement: the more seeds, the narrower the interval, the surer a tiny real slope fails.) With the law's
95% interval each one-sided test is at 2.5%, stricter than TOST's usual 5%.

An undecided verdict names what would decide: an interval's half-width falls as 1/√n with n the runs, so
shrinking it from h to h' needs (h/h')² times the runs (seeds, or grid points in the valley).
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass

ROUNDING = 1e-9  # equal optima fit a slope of ±1e-17: that is 0, not a drift
AFFORDABLE = 100  # × the runs past which "measure more" is no advice: the centre is about the band's edge


@dataclass(frozen=True)
class Equivalence:
    verdict: str  # pass, fail, undecided, or unmeasured (no interval)
    reference: float
    band: float
    more_runs: float  # × the runs that would decide an undecided verdict (inf: the centre sits on a bound)

    def record(self) -> dict:
        return asdict(self)

    def text(self, what: str) -> str:
        bound = f"{what} {self.reference:g} ± {self.band:.2f}"
        if self.verdict == "unmeasured":
            return f"{bound}: no interval, so no verdict (add seeds or grid points)"
        if self.verdict == "pass":
            return f"interval inside {bound} — pass"
        if self.verdict == "fail":
            return f"interval outside {bound} — FAIL"
        if math.isinf(self.more_runs):
            need = "its centre sits on the band's edge: more runs narrow it but may never decide"
        elif self.more_runs > AFFORDABLE:
            need = (f"its centre sits so near the band's edge that ≈ {self.more_runs:.0f}× the runs would be needed: "
                    "the slope is about the band's edge, and more runs are unlikely to decide it")
        else:
            need = f"≈ {self.more_runs:.1f}× the runs (seeds, or grid points in the valley) would decide it"
        return f"interval straddles {bound} — undecided, measure more: {need}"


def equivalence(low: float, high: float, reference: float, band: float) -> Equivalence:
    """The verdict of the interval [low, high] against reference ± band (module docstring)."""
    if not (math.isfinite(reference) and math.isfinite(band) and band >= 0):
        raise ValueError(f"an equivalence band is a finite reference ± a finite band ≥ 0, got {reference} ± {band}")
    if not (math.isfinite(low) and math.isfinite(high)):
        return Equivalence("unmeasured", reference, band, math.nan)
    if low > high + ROUNDING:
        raise ValueError(f"an interval [{low}, {high}] with its low end above its high end has no verdict")
    lo, hi = reference - band, reference + band
    if lo - ROUNDING <= low and high <= hi + ROUNDING:
        return Equivalence("pass", reference, band, math.nan)
    if high < lo or low > hi:
        return Equivalence("fail", reference, band, math.nan)
    centre, half = (low + high) / 2, (high - low) / 2
    needed = min(centre - lo, hi - centre) if lo < centre < hi else min(abs(centre - lo), abs(centre - hi))
    return Equivalence("undecided", reference, band, (half / needed) ** 2 if needed > ROUNDING else math.inf)
