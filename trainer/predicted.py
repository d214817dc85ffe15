"""The predicted validation curve a run is held to, read at the run's progress: the columns logged beside val_loss.

`sweep transfer` (or a user) writes the curve into `provenance.prediction.curve` as parallel lists
{fraction, loss, low, high} over the fraction of the run's steps; at each evaluation the trainer logs the curve's
value and band there (linear interpolation; nothing before the curve's first fraction, where the ladder's
curves were not measured) as predicted_val_loss, predicted_low and predicted_high, in the Parquet
curve and every tracker, so the run can be held to its prediction while it trains.
"""
from __future__ import annotations

import numpy as np

COLUMNS = ("predicted_val_loss", "predicted_low", "predicted_high")


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
