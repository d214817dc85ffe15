"""A full run held to its predicted curve while it trains: the band, and the first evaluation that leaves it.

The band (sweep/forecast/varpro.py's `collapse`): the ladder runs' validation curves collapsed onto one shape
(reducible loss over its final value, against the fraction of the run), scaled to the predicted final loss and its
interval. A run is off when an evaluation lies outside the band at its fraction: above it, the run learns slower
than its ladder did (too high or too low an LR carried over, a data or config change); below it, faster than the
law allows at its size (a leak between train and validation, or the prediction is wrong). Found at the first such
evaluation, with what to do, while the budget is still unspent.

A band is kept only where it can flag something: from the first fraction after which its half-width stays within
INFORMATIVE of the predicted loss and its low end above 0 (early in a small ladder the curves' spread, scaled to
the final interval, can reach [0, 19]: a run could not leave it). None when not even the final interval is.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from sweep.forecast.varpro import collapse

FRACTIONS = np.linspace(0.02, 1.0, 50)
INFORMATIVE = 0.25  # the widest band kept, as a half-width relative to the predicted loss


def band(ladder: list[tuple[np.ndarray, np.ndarray]], final: dict, floor: float = 0.0) -> dict | None:
    """provenance.prediction.curve: {fraction, loss, low, high} lists from the ladder's curves (each (fractions,
    val losses), ending at its run's end), the final prediction {loss, low, high}, and the law's floor E (0, the
    plain ratio to the final loss, where E is within 10 % of a ladder run's final loss); only its informative
    tail (module docstring), None when nothing of it is."""
    if floor >= 0.9 * min(float(y[-1]) for _, y in ladder):  # a floor at the losses: no reducible loss to scale
        floor = 0.0
    out = collapse(ladder, floor, final["loss"], (final["low"], final["high"]), FRACTIONS)
    wide = (out["low"] <= 0) | (out["high"] - out["low"] > 2 * INFORMATIVE * out["loss"])
    start = int(np.flatnonzero(wide)[-1]) + 1 if wide.any() else 0
    if start == len(wide):
        return None
    return {key: out[key][start:].tolist() for key in ("fraction", "loss", "low", "high")}


def departure(rows: pd.DataFrame | None, total_steps: int | None = None) -> dict | None:
    """{step, fraction, val_loss, low, high, side, advice} at the run's first evaluation outside the band the trainer
    logged beside it (predicted_low, predicted_high: trainer/predicted.py); None while it stays inside, or when it
    logged no band. `fraction`: of `total_steps`, None when not given (a run still going)."""
    if rows is None or not {"val_loss", "predicted_low", "predicted_high"} <= set(rows.columns):
        return None
    evals = rows.dropna(subset=["val_loss", "predicted_low", "predicted_high"]).sort_values("step")
    for step, val, low, high in zip(evals["step"], evals["val_loss"], evals["predicted_low"], evals["predicted_high"],
                                    strict=True):
        if not low <= val <= high:
            side = "above" if val > high else "below"
            return {"step": int(step), "fraction": step / total_steps if total_steps else None, "val_loss": float(val),
                    "low": float(low), "high": float(high), "side": side, "advice": ADVICE[side]}
    return None


ADVICE = {
    "above": "learning slower than its ladder: check the LR and schedule carried over (`sweep transfer`'s changes), "
             "the data and the batch; stop it before the budget is spent, fix, relaunch",
    "below": "learning faster than the law allows at its size: check that validation data is not in training, or "
             "the prediction (`sweep verify` ladders) before trusting either",
}
