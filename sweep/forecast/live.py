"""A full run held to its predicted curve while it trains: the band, and the first evaluation that leaves it.

The band (sweep/forecast/varpro.py's `collapse`): the ladder runs' validation curves collapsed onto one shape
(reducible loss over its final value, against the fraction of the run), scaled to the predicted final loss and its
interval. A run is off when an evaluation lies outside the band at its fraction: above it, the run learns slower
than its ladder did (too high or too low an LR carried over, a data or config change); below it, faster than the
law allows at its size (a leak between train and validation, or the prediction is wrong). Found at the first such
evaluation, with what to do, while the budget is still unspent.

The ceiling: under μP, wider is no worse at the same settings and schedule (Yang et al. 2022, "Tensor Programs V",
Figure 1: "wider is always better", at every learning rate), and measured here along the curve past its first tenth
(below). So a ladder run narrower than the full run, of its depth, on its very schedule (the same batch and tokens,
hence the same steps, warmup and decay), bounds its curve from above, whatever the law predicts: the band's upper
end is capped at that run's curve (the widest such run's) × (1 + TOLERANCE), from CEILING_FROM of the run on, and so
is the final interval (`capped`). Measured on the benchmark's ladders (benchmarks/plan_prediction.py, widths 16–256,
2 seeds): past the first tenth an honest run 2× wider than the rung rose at most 0.05 % above it (0.3–8 % below it
at most evaluations), while a seed of a rung moved its curve by up to 2.1 %; in the first tenth (warmup, the
steepest descent) an honest run rose up to 4.4 % above it. A run forced off (LR × 4) rose 3–7 % above it at its
first evaluation (10 %) and 6–14 % at its second. All of that was at one LR: the ceiling run bounds the full run
only where it ran at the full run's LR (its peak within LR_MATCH, where the target names one). Found by an outside
tester: a full run at the LR transfer carried from the proxy by a fitted horizon law, past the ladder, sat 2.6 %
above the ladder's run at its own grid's best LR at 37 % of the run, and was flagged although it ended inside its
final interval; an LR × 4 run was flagged at the same step, so the flag told nothing there.

The final loss from the run's own curve (`ratios`): on one schedule, a run's loss at a fraction f of its steps over
its final loss, r(f) = L(f)/L(1), moves little and smoothly with width (the curves collapse, "Scaling with
Collapse", 2025), so the ladder's runs on the full run's schedule give r at each evaluation as a line in ln width,
fitted by least squares over every run and seed and carried to the full run's width, with least squares'
prediction interval r̂ ± t(0.975, n − 2)·s·√(1 + x₀ᵀ(XᵀX)⁻¹x₀). At its evaluation at f the full run's final loss is
then L(f)/r̂, within [L(f)/(r̂ + h), L(f)/(r̂ − h)] (trainer/predicted.py logs it). It prices the run's own
progress, not a law carried 2× past its widest rung. Measured on ten ladders of benchmarks/plan_prediction.py
(widths 16–64 → 128 and 32–128 → 256, 200–1600 steps, two corpora, 2–6 seeds: 32 honest runs), the interval held
91–100 % of them at each tenth from half the run on (96 % pooled over 50–90 %, nominal 95 %), but only 81–94 %
before, where the line in ln width misses a drift of the early curve with width; so it is given from REFINE_FROM on.
There its error was at most 1.8 % at half the run and 1.0 % at 70 % (median half-width ±1.6 %), where the law's
final loss, before the run, missed by −7.0 % to +2.1 %.

A band is kept only where it can flag something: from the first fraction after which its half-width stays within
INFORMATIVE of the predicted loss and its low end above 0 (early in a small ladder the curves' spread, scaled to
the final interval, can reach [0, 19]: a run could not leave it), or where the ceiling caps it (a measured curve
can always be left). None when not even the final interval is.
"""
from __future__ import annotations

import numpy as np
import pandas as pd
from scipy.stats import t as student_t

from sweep.forecast.varpro import collapse
from trainer.predicted import RATIO, REFINE_FROM  # the own-curve interval's start and bounds (module docstring)

FRACTIONS = np.linspace(0.02, 1.0, 50)
INFORMATIVE = 0.25  # the widest band kept, as a half-width relative to the predicted loss
TOLERANCE = 0.02  # above the ceiling run's curve: a seed moved a rung's curve by up to 2.1 % (module docstring)
CEILING_FROM = 0.1  # the ceiling holds past the warmup and the steepest descent (module docstring)
LR_MATCH = 2 ** 0.25  # the ceiling run's peak LR within a quarter octave of the full run's (module docstring)
RATIO_RUNS = 3  # a line in ln width through 3 runs leaves one residual to price its interval with
SCHEDULE = {"width", "depth", "batch_size", "step", "tokens"}  # what a run's last evaluation must name to bound


def shape(rows: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """(fraction of the run, val loss) of a run's evaluations, ending at its last."""
    steps = rows["step"].to_numpy(float)
    return steps / steps[-1], rows["val_loss"].to_numpy(float)


def on_schedule(runs: list[pd.DataFrame], target: dict) -> list[pd.DataFrame]:
    """The ladder's runs (each its evaluation rows) narrower than the full run and on its schedule (`target`: its
    width, depth, batch_size, step and tokens at its end; the tokens within 1 %)."""
    def same_schedule(rows: pd.DataFrame) -> bool:
        last = rows.iloc[-1]
        if not SCHEDULE <= set(rows.columns) or last[list(SCHEDULE)].isna().any():
            return False
        return (int(last["width"]) < target["width"] and abs(float(last["tokens"]) / target["tokens"] - 1) <= 0.01
                and all(int(last[key]) == int(target[key]) for key in ("depth", "batch_size", "step")))
    return [rows for rows in runs if len(rows) >= 2 and same_schedule(rows)]


def ceiling(runs: list[pd.DataFrame], target: dict) -> tuple[np.ndarray, np.ndarray] | None:
    """(fractions, losses) bounding the full run's curve from above (module docstring): the widest of the ladder's
    μP runs (each its evaluation rows) narrower than the full run and on its schedule (`target`: its width, depth,
    batch_size, step and tokens at its end; the tokens within 1 %), and at its LR where `target` names one ("lr",
    its peak), × (1 + TOLERANCE), from CEILING_FROM on; None when no run is."""
    same = [rows for rows in on_schedule(runs, target) if at_lr(rows, target.get("lr"))]
    if not same:
        return None
    fraction, loss = shape(max(same, key=lambda rows: int(rows["width"].iloc[-1])))
    kept = fraction >= CEILING_FROM
    return fraction[kept], loss[kept] * (1 + TOLERANCE)


def at_lr(rows: pd.DataFrame, lr: float | None) -> bool:
    """Whether a run's peak logged LR is within LR_MATCH of `lr` (None: any LR; a run that logged none: not)."""
    if lr is None:
        return True
    peak = float(rows["lr"].max()) if "lr" in rows.columns else float("nan")
    return bool(np.isfinite(peak) and peak > 0 and 1 / LR_MATCH <= peak / lr <= LR_MATCH)


def capped(final: dict, cap: tuple[np.ndarray, np.ndarray] | None) -> dict:
    """The final prediction {loss, low, high, …} under the ceiling's end (module docstring): the narrower run on the
    full run's schedule bounds its final loss as it bounds its curve, so the interval's upper end is the lower of
    the law's and the ceiling's, the point and the lower end no higher than it."""
    if cap is None or not len(cap[0]) or cap[0][-1] < 1.0:
        return final
    high = min(final["high"], float(cap[1][-1]))
    return {**final, "high": high, "low": min(final["low"], high), "loss": min(final["loss"], high)}


def ratios(runs: list[pd.DataFrame], target: dict) -> dict | None:
    """provenance.prediction.refine {fraction, ratio, half, runs, widths}: at each evaluation before the end, the
    full run's L(f)/L(1) and its 95 % half-width from the ladder's runs on its schedule (module docstring); only
    where r̂ − h > 0 (an interval with an upper end) and r̂ within RATIO; None under RATIO_RUNS runs or one width,
    or where no fraction is left."""
    same = on_schedule(runs, target)
    widths = np.array([float(rows["width"].iloc[-1]) for rows in same])
    if len(same) < RATIO_RUNS or len(set(widths)) < 2:
        return None
    curves = [shape(rows) for rows in same]
    at = curves[0][0][:-1]
    at = at[(at >= max(fraction[0] for fraction, _ in curves)) & (at >= REFINE_FROM)]
    table = np.array([np.interp(at, fraction, loss) / loss[-1] for fraction, loss in curves])
    x = np.stack([np.ones(len(same)), np.log(widths)], axis=1)
    coef, *_ = np.linalg.lstsq(x, table, rcond=None)
    spare = len(same) - 2
    s = np.sqrt(np.sum((table - x @ coef) ** 2, axis=0) / spare)
    x0 = np.array([1.0, np.log(target["width"])])
    ratio = x0 @ coef
    half = student_t.ppf(0.975, spare) * s * np.sqrt(1 + x0 @ np.linalg.inv(x.T @ x) @ x0)
    keep = (ratio - half > 0) & (ratio >= RATIO[0]) & (ratio <= RATIO[1])
    if not keep.any():
        return None
    return {"fraction": at[keep].tolist(), "ratio": ratio[keep].tolist(), "half": half[keep].tolist(),
            "runs": len(same), "widths": sorted({int(w) for w in widths})}


def without_ratios(runs: list[pd.DataFrame], target: dict) -> str:
    """Why the ladder gives the full run no loss ratios (`ratios` returned None): what it ran on its schedule."""
    same = on_schedule(runs, target)
    widths = sorted({int(rows["width"].iloc[-1]) for rows in same})
    if len(same) >= RATIO_RUNS and len(widths) >= 2:
        return (f"the ladder's {len(same)} runs on its schedule give no ratio with an interval from "
                f"{REFINE_FROM:.0%} of the run on (too few evaluations there, or too far apart)")
    widths = ", ".join(map(str, widths)) or "none"
    return (f"the ladder ran {len(same)} run(s) on its schedule (depth {target['depth']}, batch "
            f"{target['batch_size']}, {target['step']} steps) narrower than width {target['width']} (widths: "
            f"{widths}); {RATIO_RUNS} or more at two widths or more are needed, e.g. `sweep verify SPEC --across "
            f"steps={target['step']} --ladder-width W` at two widths W")


def band(ladder: list[tuple[np.ndarray, np.ndarray]], final: dict, floor: float = 0.0,
         cap: tuple[np.ndarray, np.ndarray] | None = None) -> dict | None:
    """provenance.prediction.curve: {fraction, loss, low, high} lists from the ladder's curves (each (fractions,
    val losses), ending at its run's end), the final prediction {loss, low, high}, the law's floor E (0, the
    plain ratio to the final loss, where E is within 10 % of a ladder run's final loss) and `cap`, the `ceiling`
    if there is one, capping its upper end; only its informative tail (module docstring), None when nothing of it is."""
    if floor >= 0.9 * min(float(y[-1]) for _, y in ladder):  # a floor at the losses: no reducible loss to scale
        floor = 0.0
    out = collapse(ladder, floor, final["loss"], (final["low"], final["high"]), FRACTIONS)
    capped = np.zeros(len(out["fraction"]), bool)
    if cap is not None:
        bound = np.interp(out["fraction"], *cap, left=np.inf)
        capped = bound < out["high"]
        out["high"] = np.minimum(out["high"], bound)
    out["low"], out["loss"] = np.minimum(out["low"], out["high"]), np.minimum(out["loss"], out["high"])  # in order
    wide = ((out["low"] <= 0) | (out["high"] - out["low"] > 2 * INFORMATIVE * out["loss"])) & ~capped
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


def latest_final(rows: pd.DataFrame | None, until: float = float("inf")) -> dict | None:
    """{step, loss, low, high}: the final loss the run's latest evaluation (up to step `until`) predicts from its own
    curve (the predicted_final columns trainer/predicted.py logs; module docstring); None where it logged none."""
    if rows is None or "predicted_final" not in rows.columns:
        return None
    logged = rows[rows["step"] <= until].dropna(subset=["predicted_final"]).sort_values("step")
    if logged.empty:
        return None
    last = logged.iloc[-1]
    return {"step": int(last["step"]), "loss": float(last["predicted_final"]),
            "low": float(last["predicted_final_low"]), "high": float(last["predicted_final_high"])}


def apart(own: dict, final: dict) -> str | None:
    """"above" or "below" where the final loss the run's own curve predicts lies, interval and all, outside the
    interval the run is held to (`final`: provenance.prediction): both 95 %, so one of them has missed, and the run,
    still inside its band, will end outside its prediction. None where they overlap."""
    if own["low"] > final["high"]:
        return "above"
    return "below" if own["high"] < final["low"] else None


ADVICE = {
    "above": "learning slower than its ladder: check the LR and schedule carried over (`sweep transfer`'s changes), "
             "the data and the batch; stop it before the budget is spent, fix, relaunch",
    "below": "learning faster than the law allows at its size: check that validation data is not in training, or "
             "the prediction (`sweep verify` ladders) before trusting either",
}
