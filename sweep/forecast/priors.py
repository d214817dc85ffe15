"""The textbook prior of each LR law a ladder measures: the slope of log₂ LR* on log₂ (axis value), its spread (one
standard deviation of a normal prior) and where both come from. `sweep plan` prices ladders against them; the
report shows each law as prior → measured → posterior (sweep/forecast/interval.py's conjugate update)."""
from __future__ import annotations

from sweep.forecast.interval import Prior

PRIORS = {
    "width": Prior(0.0, 0.15, "μP (Tensor Programs V): the optimum is width-free; sweep verify's 1-octave drift bound "
                              "over 8× width is s = 0.33 ≈ 2 sd"),
    "batch_size": Prior(0.5, 0.25, "square-root rule for Adam (Malladi et al. 2022); the linear rule (Goyal et al. "
                                   "2017) 2 sd away"),
    "tokens": Prior(-0.3, 0.15, "LR* ∝ D^−β, β ≈ 0.3 (Bjorck et al. 2025; Filatov et al. 2025: 0.28)"),
    "depth": Prior(0.0, 0.15, "depth-μP / CompleteP (Dey et al. 2025): the optimum depth-free under its rule"),
}
