"""What the literature says a law's slope is before this model is measured, and the measurement's update of it.

A law is log₂ θ* = c + s·log₂ v (sweep/verify/law.py). Its prior is s ~ N(centre, spread²), written here with its
source; the ladder measures s with a 95% interval, read as N(ŝ, se²) with se = half the interval / z₀.₉₇₅. The
posterior is the conjugate normal update (precision-weighted mean):

    1/σ² = 1/spread² + 1/se²,    s̄ = σ²·(centre/spread² + ŝ/se²)

so a ladder whose interval is wide next to the spread leaves the textbook rule (s̄ → centre), and a sharp one
overrides it (s̄ → ŝ). A posterior whose interval spans zero never reverses the published direction: where its
centre lands on the other side of zero, the slope applied is 0 (the setting held, `used` "held"), since the
reversal is not measured; a posterior wholly on the other side does reverse it.
`weight` = σ²/se² is the measurement's share. With `--prior none` the measurement alone.

Spreads are chosen so that ±2 spreads hold the range of published exponents, no narrower:
- LR × batch at a fixed token budget, Adam: ½, the square-root rule (Malladi et al. 2022, "On the SDEs and Scaling
  Rules for Adaptive Gradient Algorithms", §4); spread 0.25: from 0 (past the critical batch the optimum flattens
  and can fall, Li et al. 2024, "Surge Phenomenon…") to 1 (the linear rule some Adam runs follow at small batch).
  SGD: 1, the linear rule (Goyal et al. 2017), same spread.
- LR × tokens (or steps) at a fixed batch: −0.3 (Bjorck et al. 2025, "Scaling Optimal LR Across Token Horizons":
  LR* ∝ D^−β; Marin's sweeps T^−0.3; HyperP −0.32); spread 0.15: the published β run from ≈ 0.1 to ≈ 0.5.
- LR × width under μP: 0 (Tensor Programs V); spread 0.1 per octave: Everett et al. 2024 ("Scaling Exponents
  Across Parameterizations and Optimizers") see μP optima move by ≲ ½ octave over 8× width. A per-role multiplier:
  0 (μP's table sets its exponent), spread 0.25 (their per-layer exponents differ from μP's by up to ≈ ½).
- LR × depth under a depth rule (`depth_alpha`): 0 (CompleteP, Dey et al. 2025; depth-μP, Yang et al. 2023);
  spread 0.25. No prior without a depth rule: none is published for it.
- Weight decay (AdamW timescale 1/(η·λ) steps held as a fraction of the run: Wang & Aitchison 2024, "How to set
  AdamW's weight decay as you scale model and dataset size"): ηλ ∝ B/D, so with the LR priors above λ* ∝ B^½ across
  batch (tokens held) and λ* ∝ D^(−1+0.3) = D^−0.7 across tokens; spread 0.3 (the LR prior's and the timescale's
  own, Bergsma et al. 2025 "Power Lines" see τ/D drift with tokens per parameter).
- β₂, and anything else: no published power law: no prior (the measurement alone, said so).
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass

from scipy.stats import norm

from sweep.errors import InputError
from sweep.rules.target import PRIOR_CHOICES

LEVEL = 0.95
ROUNDING = 1e-9  # a slope this far outside its interval is the fit's floating-point noise
ADAM = ("adamw", "adam_atan2", "schedulefree_adamw", "muon")


@dataclass(frozen=True)
class Prior:
    centre: float  # the slope s the literature gives
    spread: float  # its standard deviation
    source: str  # who says so

    def interval(self, level: float = LEVEL) -> tuple[float, float]:
        z = float(norm.ppf((1 + level) / 2))  # a plain float: a record is written as YAML too (a plan file)
        return self.centre - z * self.spread, self.centre + z * self.spread

    def record(self) -> dict:
        low, high = self.interval()
        return {**asdict(self), "low": low, "high": high}

    def sd_after(self, se: float) -> float:
        """σ = (1/spread² + 1/se²)^−½: the prior's and a measurement's precisions added (se = inf: none measured).
        The one precision formula: `posterior` here, and the planner's expected widths (sweep/forecast/)."""
        return (self.spread ** -2 + (se ** -2 if math.isfinite(se) else 0.0)) ** -0.5

    def conjugate(self, slope: float, se: float) -> tuple[float, float]:
        """(s̄, σ) of the slope after a measurement ŝ = `slope` with standard error `se` (module docstring; se = inf:
        the prior itself)."""
        sd = self.sd_after(se)
        if not math.isfinite(se):
            return self.centre, sd
        return sd ** 2 * (self.centre / self.spread ** 2 + slope / se ** 2), sd


@dataclass(frozen=True)
class Posterior:
    centre: float
    low: float
    high: float
    weight: float  # the measurement's share of the posterior precision: 0 the prior alone, 1 the measurement alone
    used: str  # "posterior", "prior" (no interval measured), "measured" (no prior) or "held" (direction unmeasured)

    def record(self) -> dict:
        return asdict(self)


BATCH_ADAM = Prior(0.5, 0.25, "Malladi et al. 2022 (square-root rule for Adam below the critical batch)")
BATCH_SGD = Prior(1.0, 0.25, "Goyal et al. 2017 (linear rule for SGD)")
HORIZON = Prior(-0.3, 0.15, "Bjorck et al. 2025 (LR* ∝ D^−β, β ≈ 0.3); Marin T^−0.3; HyperP −0.32")
WIDTH_MUP = Prior(0.0, 0.1, "Tensor Programs V (μP: the optimum holds across width)")
ROLE_MUP = Prior(0.0, 0.25, "μP's per-role table (Tensor Programs V); Everett et al. 2024 per-layer exponents")
DEPTH = Prior(0.0, 0.25, "CompleteP (Dey et al. 2025) / depth-μP (Yang et al. 2023) under a depth rule")
WD_BATCH = Prior(0.5, 0.3, "Wang & Aitchison 2024 (AdamW timescale a fixed fraction of the run) with LR ∝ B^½")
WD_TOKENS = Prior(-0.7, 0.3, "Wang & Aitchison 2024 (AdamW timescale a fixed fraction of the run) with LR ∝ D^−0.3")


def prior_for(param: str, axis: str, parametrization: str = "mup", optimizer: str = "adamw",
              depth_rule: bool = True) -> Prior | None:
    """The published prior on the slope of `param` across `axis` (module docstring), None where none is published."""
    axis = "tokens" if axis == "steps" else axis
    if axis == "width":
        if parametrization != "mup":
            return None  # SP's optimum moves with width by an amount no rule fixes (Tensor Programs V, Fig. 1)
        return WIDTH_MUP if param == "optimizer.lr" else ROLE_MUP if param.startswith("optimizer.roles.") else None
    if param == "optimizer.lr":
        if axis == "batch_size":
            return BATCH_ADAM if optimizer in ADAM else BATCH_SGD if optimizer == "sgd" else None
        return HORIZON if axis == "tokens" else DEPTH if axis == "depth" and depth_rule else None
    if param == "optimizer.weight_decay" and optimizer in ADAM:
        return {"batch_size": WD_BATCH, "tokens": WD_TOKENS}.get(axis)
    return None


def posterior(prior: Prior | None, slope: float, low: float, high: float, level: float = LEVEL) -> Posterior:
    """The conjugate normal update of `prior` by a measured slope with its `level` interval [low, high] (module
    docstring). No interval measured (NaN ends): the prior; no prior: the measurement as it is."""
    if not 0 < level < 1:
        raise ValueError(f"an interval's level lies strictly between 0 and 1, got {level}")
    measured = all(math.isfinite(v) for v in (slope, low, high))
    if measured and not low - ROUNDING <= slope <= high + ROUNDING:
        raise ValueError(f"a measured slope {slope} outside its interval [{low}, {high}] has no posterior")
    if prior is None:
        return Posterior(slope, low, high, 1.0 if measured else math.nan, "measured")
    if not measured:
        p_low, p_high = prior.interval(level)
        return Posterior(prior.centre, p_low, p_high, 0.0, "prior")
    z = norm.ppf((1 + level) / 2)
    se = max(high - slope, slope - low) / z  # a skewed interval: its wider side, never a false precision
    if se == 0:
        return Posterior(slope, slope, slope, 1.0, "posterior")
    centre, sd = prior.conjugate(slope, se)
    low, high, weight = centre - z * sd, centre + z * sd, (sd / se) ** 2
    if centre * prior.centre < 0 and low <= 0 <= high:
        # the update crossed zero but its interval still holds the published direction: the reversal is not
        # measured, so the setting is held (slope 0) rather than moved against the literature
        return Posterior(0.0, low, high, weight, "held")
    return Posterior(centre, low, high, weight, "posterior")


def check_prior_choice(choice: str) -> str:
    if choice not in PRIOR_CHOICES:
        raise InputError(f"--prior: {choice!r} is not one of {', '.join(PRIOR_CHOICES)} (published: each law starts "
                         "from its published slope; none: the measurement alone)")
    return choice


def update(law: dict, prior: Prior | None, choice: str = "published") -> dict:
    """{prior, posterior} for a law {slope, low, high, level}: what a summary and a provenance record."""
    prior = prior if choice == "published" else None
    post = posterior(prior, law["slope"], nan(law.get("low")), nan(law.get("high")), law.get("level", LEVEL))
    return {"prior": prior.record() if prior else None, "posterior": post.record()}


def nan(value) -> float:
    return math.nan if value is None else float(value)


def chain_text(law: dict, digits: int = 2) -> str:
    """prior → measured → posterior, as printed by verify, transfer and the report."""
    prior, post = law.get("prior"), law.get("posterior") or {}
    f = f"{{:.{digits}f}}"

    def span(centre, low, high) -> str:
        if low is None or high is None or not (math.isfinite(low) and math.isfinite(high)):
            return f"{f.format(centre)} (no interval)"
        return f"{f.format(centre)} [{f.format(low)}, {f.format(high)}]"
    shown = "prior none" if prior is None else f"prior {span(prior['centre'], prior['low'], prior['high'])}"
    shown += f" → measured {span(law['slope'], law.get('low'), law.get('high'))}"
    if post:
        weight = post.get("weight")
        share = f", measurement weight {weight:.0%}" if weight is not None and math.isfinite(weight) else ""
        shown += f" → posterior {span(post['centre'], post['low'], post['high'])}{share}"
    return shown


def slope_chain(law: dict) -> str:
    """A provenance law's prior → measured → posterior, and which one transfer used and why."""
    measured = law.get("measurement") or {"slope": law["slope"], "low": law["interval_slope"][0],
                                       "high": law["interval_slope"][1]}
    posterior = law.get("posterior")
    shown = chain_text({**measured, "prior": law.get("prior"), "posterior": posterior})
    weight = (posterior or {}).get("weight", 1.0)
    if (posterior or {}).get("used") == "held":
        why = ("held the setting (slope 0): the posterior's centre crossed zero against the published direction, "
               "but its interval still holds that direction")
    elif law.get("prior") is None:
        why = "used the measurement (no prior: --prior none, or none published)"
    elif not math.isfinite(weight) or weight < 0.2:
        why = "used the posterior ≈ the published prior: the ladder's interval is wide beside the prior's spread"
    elif weight > 0.8:
        why = "used the posterior ≈ the measurement: the ladder is sharp beside the prior's spread"
    else:
        why = "used the posterior: prior and measurement weigh alike"
    return f"{shown}; {why}"
