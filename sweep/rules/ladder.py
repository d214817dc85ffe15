"""What `sweep transfer` reads from the verify ladder (ROOT/NAME-verify-*/summary.json): the measured laws, the
predicted final loss (sweep/rules/scaling.py), and the compute the tuning spent.

Compute: C ≈ 6·N·D per run (Kaplan et al. 2020, "Scaling Laws for Neural Language Models", §2.1: forward and
backward passes over D tokens of a model of N parameters), summed over the trials of every study of the sweep
at its own width (a finished trial's seeds × its tokens; a pruned one up to its last report) and every verify
run (grid × seeds × parametrizations × each axis value's tokens, and the points refinement added; less the runs
another study trained and those whose trial failed with a tool error, which trained nothing), as a share of the
full run's.
"""
from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import optuna
import pandas as pd
from optuna.trial import TrialState

from sweep.errors import InputError
from sweep.rules.axis import label
from sweep.rules.fitted import Law
from sweep.rules.prior import prior_for
from sweep.rules.scaling import held_out, predict
from sweep.rules.summary import axis_folder, ladder_widths, load_summary, read_summary, schedule_folders, shape_batches
from trainer.config import RunConfig

FITTED_PARAMS = ("optimizer.lr", "optimizer.weight_decay", "optimizer.beta2")


def measured_laws(root: str, name: str, prior: str = "published", batch: int | None = None) -> tuple[Law, ...]:
    """The μP laws `sweep verify --across` measured for this sweep (LR, weight decay, β2 × batch, tokens or steps,
    depth), one per setting and axis; a steps law is measured in tokens (its runs' token counts), the unit a target's
    budget is in, so where both a tokens and a steps ladder exist (the same horizon, the batch held) the tokens one
    is the law, never both: the horizon would move the setting twice. Each names the trial it was measured from, and
    is the posterior over its published prior (`prior` "published") or the measurement alone ("none"): a ladder
    without an interval leaves the prior, and with neither there is no law. A horizon ladder run at the target's
    `batch` (`verify --ladder-batch`) is the horizon law where there is one: measured where it is applied."""
    laws = {}
    horizon = ([("tokens", batch), ("steps", batch)] if batch else []) + [("tokens", None), ("steps", None)]
    for param in FITTED_PARAMS:
        for axis, at_batch in [("batch_size", None), *horizon, ("depth", None)]:
            unit = "tokens" if axis == "steps" else axis
            summary = read_summary(root, name, param, axis, batch=at_batch)
            law = (summary or {}).get("laws", {}).get("mup")
            if (param, unit) in laws or law is None:  # measured already, or not measured
                continue
            at = horizon_tokens(summary, axis) if axis in ("tokens", "steps") else law["at"]
            published = prior_for(param, unit, "mup", summary.get("optimizer", "adamw"),
                                  summary.get("depth_rule", True)) if prior == "published" else None
            batches = shape_batches(summary)
            ladder_batch = batches.pop() if unit == "tokens" and len(batches) == 1 else None
            found = Law.updated(param, unit, law, (min(at), max(at)), axis_folder(name, param, axis, batch=at_batch),
                                published, summary.get("source"), ladder_batch)
            if found is not None:
                laws[param, unit] = found
    return tuple(laws.values())


def horizon_tokens(summary: dict, axis: str) -> list[float]:
    """The token count of each value of a tokens or steps ladder (its shapes), the unit a horizon law is in."""
    tokens = [s.get("tokens") for s in summary.get("shapes", [])]
    if len(tokens) < 2 or None in tokens:
        raise InputError(f"verify summary across {axis}: field shapes: each value's tokens are needed for the horizon "
                         "law; rerun the `sweep verify` that wrote it")
    return tokens


def measured_anchors(root: str, name: str, source: str, point: dict) -> dict[str, dict]:
    """{setting: {value, optima, sources}}: per setting of FITTED_PARAMS, the μP optima `sweep verify` (along any
    axis) measured at the proxy's `point` ({width, depth, batch_size, tokens}) from the settings of `source`
    (STUDY#TRIAL, the trial being transferred), and their geometric mean. Only fitted vertices count: an optimum
    at the grid's edge, or a poor fit, is a bound, not a measurement. The point is in every ladder through it (the
    width, batch and steps ladders all train the proxy's own shape): a value two ladders share is one run, once."""
    anchors = {}
    for param in FITTED_PARAMS:
        optima, sources = [], []
        for axis in ("width", "batch_size", "tokens", "steps", "depth"):
            summary = read_summary(root, name, param, axis)
            if not summary or summary.get("source") != source:
                continue
            at = {s["at"] for s in summary.get("shapes", []) if all(s.get(k) == v for k, v in point.items())}
            grid = (summary.get("grid") or [0.0]) + [2.0 ** v for r in summary.get("refined", []) for v in r["added"]]
            rows = [r for r in summary.get("optima", []) if r["parametrization"] == "mup" and r.get(axis) in at
                    and r.get("fitted") and not r.get("poor_fit") and r.get("optimum")
                    and min(grid) <= r["optimum"] <= max(grid)]
            optima += [r["optimum"] for r in rows if r["optimum"] not in optima]  # one run in two ladders: once
            sources += [axis_folder(name, param, axis)] * bool(rows)
        if optima:
            anchors[param] = {"value": float(np.exp(np.mean(np.log(optima)))), "optima": optima, "sources": sources}
    return anchors


def ladder_points(root: str, name: str) -> tuple[list[float], list[float], list[float]]:
    """(N, D, loss) of every μP axis value verify measured the LR across width, tokens or steps (at the proxy's width
    and at any other `--ladder-width`); the loss is the best grid point's (a run, not the vertex's value, which a
    coarse grid's parabola can put below any run)."""
    points = {}  # one loss per (N, D): a tokens and a steps ladder at one batch train the same runs
    ladders = [(axis, None) for axis in ("width", "tokens", "steps")]
    ladders += [(axis, w) for axis in ("tokens", "steps") for w in ladder_widths(root, name, "optimizer.lr", axis)]
    for axis, width in ladders:
        summary = read_summary(root, name, "optimizer.lr", axis, width)
        if not summary or "shapes" not in summary:
            continue
        shapes = {s["at"]: s for s in summary["shapes"]}
        for row in summary["optima"]:
            at = row[axis]
            if row["parametrization"] == "mup" and row.get("best_loss") is not None and at in shapes:
                points.setdefault((shapes[at]["params"], shapes[at]["tokens"]), row["best_loss"])
    return [n for n, _ in points], [d for _, d in points], list(points.values())


def predicted_loss(root: str, name: str, params: float, tokens: float) -> tuple[dict, str]:
    """(the scaling law's prediction for the full run, why there is none): none with fewer than 4 ladder points
    (3 fit the reduced form's 3 unknowns exactly, leaving no residual to price the noise: an interval of width 0),
    when the target's N (or D) differs from the ladder's and the ladder has one N (or D) only (a term never measured
    would be priced at 0), when a ladder loss is not positive (no loss law holds it), or when the law gives the
    target a loss that is not positive; an interval reaching below 0 is cut at 0 (a loss is never negative). The
    prediction records how far the target lies past the largest measured N and D (`beyond`), the cut, and the law
    fitted without its largest rung predicting it (`held_out`, sweep/rules/scaling.py)."""
    n, d, loss = ladder_points(root, name)
    if (len(set(n)) < 2 and params not in n) or (len(set(d)) < 2 and tokens not in d):
        return {}, "it needs `sweep verify` across width and tokens (or steps)"
    if len(loss) < 4:
        return {}, (f"{len(loss)} ladder points leave none to measure the law's error (it has 3 unknowns), so no "
                    "interval could hold the run to it; one more rung of `sweep verify --across …` gives one")
    if min(loss) <= 0:
        return {}, f"a ladder point's loss is {min(loss):.4g}: a loss law needs positive losses"
    with np.errstate(all="ignore"):
        p = predict(np.array(n), np.array(d), np.array(loss), params, tokens)
    if not all(np.isfinite(p[k]) for k in ("loss", "low", "high")) or p["loss"] <= 0:
        return {}, (f"the law ({p['form']}) gives the target a loss of {p['loss']:.4g}, which no run can reach; "
                    "measure a ladder nearer the target (`sweep verify --across steps=… --ladder-width W`)")
    beyond = {"params": params / max(n), "tokens": tokens / max(d)}  # how far past the largest measured
    check = held_out(np.array(n), np.array(d), np.array(loss))  # the law on the rung nearest the target
    return {**p, "low": max(0.0, p["low"]), "cut_at_zero": bool(p["low"] < 0), "beyond": beyond,
            "held_out": check}, ""


def tuning_compute(root: str, studies: list[optuna.Study], params_of: Callable[[RunConfig], float],
                   tokens_per_example: int, full_flops: float, name: str) -> dict:
    """{proxy, verify, full (FLOPs), share}: the tuning's compute against the full run's (module docstring).
    `studies`: every study of the sweep (each width and parametrization: a narrower rung a warm start came from is
    tuning too); `params_of`: a trial config's parameter count."""
    proxy = 0.0
    for study in studies:
        for t in study.get_trials(deepcopy=False, states=(TrialState.COMPLETE, TrialState.PRUNED)):
            cfg = RunConfig.from_yaml(t.user_attrs["config"]) if "config" in t.user_attrs else None
            if cfg is None:
                continue
            steps = cfg.total_steps(tokens_per_example) if t.state == TrialState.COMPLETE else \
                max(t.intermediate_values, default=0)
            seeds = len(t.user_attrs.get("seed_values") or [1])
            proxy += 6 * params_of(cfg) * steps * cfg.batch_size * tokens_per_example * seeds
    verify = 0.0
    for path in sorted(Path(root).glob(f"{name}-verify-*/summary.json")):
        summary = load_summary(path, Path(root))
        runs = len(summary["grid"]) * summary["seeds"] * len(summary["parametrizations"])
        verify += sum(6 * s["params"] * s["tokens"] * runs for s in summary.get("shapes", []))
        shapes = {s["at"]: s for s in summary.get("shapes", [])}
        verify += sum(6 * shapes[r["at"]]["params"] * shapes[r["at"]]["tokens"] * summary["seeds"] * len(r["added"])
                      for r in summary.get("refined", []) if r["at"] in shapes)  # the points refinement added
        verify -= sum(6 * shapes[r["at"]]["params"] * shapes[r["at"]]["tokens"] * r["runs"]
                      for r in summary.get("reused", []) if r["at"] in shapes)  # trained by another study (twin.py)
        axis = summary.get("axis", "width")
        verify -= sum(6 * shapes[r[axis]]["params"] * shapes[r[axis]]["tokens"] * r.get("failed", 0)
                      for r in summary.get("optima", []) if r.get(axis) in shapes)  # tool errors trained nothing
    return {"proxy_flops": proxy, "verify_flops": verify, "full_flops": full_flops,
            "share": (proxy + verify) / full_flops}


def ladder_runs(root: str, name: str, every_seed: bool = False) -> list[pd.DataFrame]:
    """The evaluations (step, tokens, val_loss, width, depth, batch_size, …) of the best μP run (its first seed, or
    `every_seed`) at every value of the LR ladders across width, tokens and steps (at the proxy's width and at any
    other `--ladder-width`, as `ladder_points` reads them), and at every width of the ladders on a full run's
    schedule (`sweep plan`'s own-curve runs, summary.py's `schedule_folder`): the shapes the full run's predicted
    curve is collapsed from, its ceiling, and its loss ratios (sweep/forecast/live.py)."""
    from trainer.curves import read_run

    curves, lr = [], "optimizer.lr"
    ladders = [(axis, axis_folder(name, lr, axis)) for axis in ("width", "tokens", "steps")]
    ladders += [(axis, axis_folder(name, lr, axis, w)) for axis in ("tokens", "steps")
                for w in ladder_widths(root, name, lr, axis)]
    ladders += [("width", folder) for folder in schedule_folders(root, name, lr)]  # sweep plan's own-curve runs
    for axis, folder in ladders:
        points_path = Path(root) / folder / "points.parquet"
        if not points_path.is_file():
            continue
        points = pd.read_parquet(points_path)
        points = points[points["parametrization"] == "mup"]
        for at, group in points.groupby(axis):
            best = group.groupby("trial")["loss"].mean().idxmin() if group["loss"].notna().any() else None
            if best is None:
                continue
            width = int(group["width"].iloc[0])
            study = folder if axis == "width" else f"{folder}-{label(at)}"
            folder_of_runs = Path(root) / study / "curves" / f"study={study}" / "kind=proxy"
            seeds = sorted(folder_of_runs.glob(f"run=w{width}-mup-t{int(best):05d}-s*")) if every_seed else \
                [folder_of_runs / f"run=w{width}-mup-t{int(best):05d}-s0"]
            for path in seeds:
                rows = read_run(path)
                evals = rows.dropna(subset=["val_loss"]) if rows is not None else None
                if evals is not None and len(evals) >= 2:
                    curves.append(evals.reset_index(drop=True))
    return curves
