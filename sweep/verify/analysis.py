"""From the verify grid's losses to the optimum per axis value, its seed spread, the drift, the law and the verdict.

Input: one row per (parametrization, axis value, value, seed) with `loss` (NaN when the run diverged),
`loss_init` (the run's first training loss, ≈ the loss at initialization) and, where any run failed, `error` (the
tool error of a run that raised, None for one that trained); the axis is a column named by it (`width` by default).
A run that ends above EXPLODED × its first loss diverged too, whether or not the trainer
stopped it (a short run can blow up between evaluations and end finite): as a neighbour of the best point its
loss would pull the vertex's value far below any run.
A failed run did not train: it tells nothing of the loss or of divergence, so it is counted apart and left out of
every fit (counted as diverged, it moved the stable edge and the vertex). An axis value none of whose runs trained
is not measured: its parametrization's verdict is undecided unless the drift over the other values fails already.
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
UNMEASURED = {**dict.fromkeys(("optimum_x", "optimum", "seed_spread", "loss", "best_loss", "residual", "sensitivity"),
                              np.nan), "fitted": False, "poor_fit": False, "diverged": 0}  # `fit_row` of no runs


@dataclass(frozen=True)
class Verdict:
    parametrization: str
    drift: float  # octaves, over the axis values measured
    noise: float  # mean over widths of the seed spread of the optimum (octaves)
    passed: bool | None  # None when not judged (SP is shown for contrast) or an axis value was not measured
    unmeasured: int = 0  # axis values none of whose runs trained (every one failed)


def trained(points: pd.DataFrame) -> pd.DataFrame:
    """The runs that trained, diverged ones included: a failed run (a tool error) ran no training to read."""
    return points[points["error"].isna()] if "error" in points else points


def seed_mean(group: pd.DataFrame) -> pd.Series:
    """Loss by x averaged over seeds; NaN where any seed diverged (past the stable edge)."""
    return group.groupby("x")["loss"].apply(lambda seeds: seeds.mean(skipna=False))


def optima(points: pd.DataFrame, axis: str = "width") -> pd.DataFrame:
    """One row per (parametrization, axis value): the fit of its runs that trained (`fit_row`), how many failed,
    and whether any trained (`measured`: a value whose every run failed has no optimum, and no poor fit)."""
    rows = []
    points = points.assign(loss=points["loss"].where(~(points["loss"] > EXPLODED * points["loss_init"])))
    for (param, at), group in points.groupby(["parametrization", axis], sort=True):
        ran = trained(group)
        rows.append({"parametrization": param, axis: at.item() if hasattr(at, "item") else at,
                     **(fit_row(ran) if len(ran) else UNMEASURED),
                     "failed": len(group) - len(ran), "measured": bool(len(ran))})
    return pd.DataFrame(rows)


def fit_row(group: pd.DataFrame) -> dict:
    """The runs' optimum x, its value 2^x, seed spread, loss there (the vertex's) and at the best point run (seed
    mean), the fit's residual and whether it is poor, sensitivity, and how many runs diverged."""
    mean = seed_mean(group)
    best = vertex(mean.index.to_numpy(), mean.to_numpy())
    per_seed = [vertex(g["x"].to_numpy(), g["loss"].to_numpy()) for _, g in group.groupby("seed")]
    seeds = [v.x for v in per_seed if v is not None]
    return {"optimum_x": best.x if best else np.nan, "optimum": 2.0 ** best.x if best else np.nan,
            "fitted": bool(best and best.fitted),
            "seed_spread": float(np.std(seeds)) if len(seeds) > 1 else np.nan,  # one seed: unknown
            "loss": best.loss if best else np.nan, "best_loss": float(mean.min()) if best else np.nan,
            "residual": best.residual if best else np.nan, "poor_fit": bool(best is None or best.poor),
            "sensitivity": sensitivity(mean.to_numpy(), float(group["loss_init"].median())),
            "diverged": int(group["loss"].isna().sum())}


def verdicts(table: pd.DataFrame, max_drift: float) -> list[Verdict]:
    """Drift and seed noise per parametrization over its measured axis values; μP passes when its drift is at most
    `max_drift` octaves. With a value not measured it is undecided (None) unless it fails already: that value's
    optimum can only widen the drift."""
    out = []
    for param, group in table.groupby("parametrization", sort=True):
        measured = group[group["measured"]]
        found = measured["optimum_x"].dropna().tolist()
        d = drift(found) if len(found) == len(measured) else float("nan")
        beyond = len(found) < len(measured) or d > max_drift  # a width all diverged, or the drift past the bound
        unmeasured = len(group) - len(measured)
        passed = None if param != "mup" or (unmeasured and not beyond) else not beyond
        out.append(Verdict(param, d, float(measured["seed_spread"].mean()), passed, unmeasured))
    return out
