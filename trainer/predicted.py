"""The predicted validation curve a run is held to, read at the run's progress: the columns logged beside val_loss.

`sweep transfer` (or a user) writes the curve into `provenance.prediction.curve` as parallel lists
{fraction, loss, low, high} over the fraction of the run's steps; at each evaluation the trainer logs the curve's
value and band there (linear interpolation; nothing before the curve's first fraction, where the ladder's
curves were not measured) as predicted_val_loss, predicted_low and predicted_high, in the Parquet
curve and every tracker, so the run can be held to its prediction while it trains.

`provenance.prediction.refine` {fraction, ratio, half} (sweep/forecast/live.py's `ratios`): the ratio r̂ of the loss
at each fraction of the run to its final loss, and its 95 % half-width h, from the ladder's runs on this schedule.
At an evaluation within it the trainer logs the final loss its own curve predicts, val_loss / r̂, within
[val_loss / (r̂ + h), val_loss / (r̂ − h)], as predicted_final, predicted_final_low and predicted_final_high.
"""
from __future__ import annotations

import numpy as np

COLUMNS = ("predicted_val_loss", "predicted_low", "predicted_high")
FINAL = ("predicted_final", "predicted_final_low", "predicted_final_high")
REFINE_FROM = 0.5  # the own-curve interval held 91–100 % from half the run on, 81–94 % before (sweep/forecast/live.py)
RATIO = (0.01, 100.0)  # L(f)/L(1) from half the run on is near 1; past these it predicts no loss a run reaches


def predicted_columns(prediction: dict, fraction: float) -> dict:
    """{predicted_val_loss, predicted_low, predicted_high} at `fraction` of the run; {} without a curve."""
    curve = (prediction or {}).get("curve")
    if not curve:
        return {}
    at = np.asarray(curve["fraction"], float)
    if not at.size or not at[0] <= fraction <= at[-1]:  # before the band starts: nothing predicted there
        return {}
    return {column: float(np.interp(fraction, at, np.asarray(curve[key], float)))
            for column, key in zip(COLUMNS, ("loss", "low", "high"), strict=True)}


def refined_columns(prediction: dict, fraction: float, val_loss: float) -> dict:
    """{predicted_final, predicted_final_low, predicted_final_high} from the evaluation `val_loss` at `fraction` of
    the run (module docstring); {} without `refine` or outside its fractions."""
    refine = (prediction or {}).get("refine")
    if not refine:
        return {}
    at = np.asarray(refine["fraction"], float)
    if not at.size or not max(at[0], REFINE_FROM) <= fraction <= at[-1]:
        return {}
    ratio, half = (float(np.interp(fraction, at, np.asarray(refine[key], float))) for key in ("ratio", "half"))
    return dict(zip(FINAL, (val_loss / ratio, val_loss / (ratio + half), val_loss / (ratio - half)), strict=True))
