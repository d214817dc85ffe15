"""From the verify grid's losses to the optimum per axis value, its seed spread, the drift, the law and the verdict.

Input: one row per (parametrization, axis value, value, seed) with `loss` (NaN when the run diverged) and
`loss_init` (the run's first training loss, ≈ the loss at initialization); the axis is a column named by it
(`width` by default). A run that ends above EXPLODED × its first loss diverged too, whether or not the trainer
stopped it (a short run can blow up between evaluations and end finite): as a neighbour of the best point its
loss would pull the vertex's value far below any run.
The optimum at an axis value is the vertex fitted to the mean over seeds; its spread is the standard
deviation of the vertices fitted to each seed alone; the seed noise of a parametrization is the
mean spread over its axis values. The drift is max − min of the optima across the axis (octaves).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from sweep.verify.fit import drift, sensitivity, vertex

EXPLODED = 2.0  # × the first training loss: past it a run diverged (cross-entropy at init is ≈ that of a guess)


@dataclass(frozen=True)
class Verdict:
    parametrization: str
    drift: float  # octaves
    noise: float  # mean over widths of the seed spread of the optimum (octaves)
    passed: bool | None  # None when not judged (SP is shown for contrast)


def seed_mean(group: pd.DataFrame) -> pd.Series:
    """Loss by x averaged over seeds; NaN where any seed diverged (past the stable edge)."""
    return group.groupby("x")["loss"].apply(lambda seeds: seeds.mean(skipna=False))


def optima(points: pd.DataFrame, axis: str = "width") -> pd.DataFrame:
    """One row per (parametrization, axis value): optimum x, its value 2^x, seed spread, loss there (the vertex's)
    and at the best point run (seed mean), the fit's residual and whether it is poor, sensitivity."""
    rows = []
    points = points.assign(loss=points["loss"].where(~(points["loss"] > EXPLODED * points["loss_init"])))
    for (param, at), group in points.groupby(["parametrization", axis], sort=True):
        mean = seed_mean(group)
        best = vertex(mean.index.to_numpy(), mean.to_numpy())
        per_seed = [vertex(g["x"].to_numpy(), g["loss"].to_numpy()) for _, g in group.groupby("seed")]
        seeds = [v.x for v in per_seed if v is not None]
        rows.append({"parametrization": param, axis: at.item() if hasattr(at, "item") else at,
                     "optimum_x": best.x if best else np.nan, "optimum": 2.0 ** best.x if best else np.nan,
                     "fitted": bool(best and best.fitted),
                     "seed_spread": float(np.std(seeds)) if len(seeds) > 1 else np.nan,  # one seed: unknown
                     "loss": best.loss if best else np.nan, "best_loss": float(mean.min()) if best else np.nan,
                     "residual": best.residual if best else np.nan, "poor_fit": bool(best is None or best.poor),
                     "sensitivity": sensitivity(mean.to_numpy(), float(group["loss_init"].median())),
                     "diverged": int(group["loss"].isna().sum())})
    return pd.DataFrame(rows)


def verdicts(table: pd.DataFrame, max_drift: float) -> list[Verdict]:
    """Drift and seed noise per parametrization; μP passes when its drift is at most `max_drift` octaves."""
    out = []
    for param, group in table.groupby("parametrization", sort=True):
        found = group["optimum_x"].dropna().tolist()
        d = drift(found) if len(found) == len(group) else float("nan")
        passed = bool(d <= max_drift) if param == "mup" else None  # NaN (a width all diverged) fails
        out.append(Verdict(param, d, float(group["seed_spread"].mean()), passed))
    return out
