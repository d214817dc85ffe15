"""`sweep verify`: run the grid of a setting × width per parametrization as its own resumable studies,
fit each width's optimum, print the drift and write the Figure-1 plot.

Results land in ROOT/NAME-verify-SETTING/ (its Optuna storage unless the spec names one, runs and
curves, and): `points.parquet` (a row per run), `optima.parquet` (a row per width), `figure1.png`,
`summary.json` (read by `sweep transfer` into the full run's provenance). Exit 1 when the μP drift
exceeds `--max-drift` octaves.

The default bound, 1 octave: under SP the optimal LR moves about an octave per doubling of width
(Tensor Programs V, Fig. 1), 3 over the default 8×; the μP vertex's seed noise on short CPU runs is
≈ 0.5 octave (a 2-layer GPT on byte-level text, widths 32→256, 3 seeds), so a correct μP model sits
under 1 with margin and an SP one (or a μP bug that lets the optimum follow width) lands well above it.
"""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import optuna
import pandas as pd
from optuna.trial import TrialState
from rich.console import Console
from rich.table import Table

from sweep.backends import get_backend
from sweep.errors import InputError
from sweep.study.lookup import locate, pick_trial, read_curve
from sweep.study.preflight import prepare
from sweep.study.spec import check_builder_named, load_spec, model_name
from sweep.study.storage import open_storage
from sweep.study.study import SweepJob, open_study, progress
from sweep.sweeps.command import run_workers
from sweep.verify.analysis import optima, verdicts
from sweep.verify.grid import base_values, grid_values, verify_spec
from sweep.verify.plot import NAMES, figure_one
from sweep.verify.request import VerifyRequest
from sweep.verify.summary import verify_name, write_summary
from trainer.atomic import atomic_path

DEFAULT_MAX_DRIFT = 1.0


def parse_list(text: str, flag: str, cast=str) -> list:
    try:
        items = [cast(part.strip()) for part in text.split(",") if part.strip()]
    except ValueError:
        raise InputError(f"{flag}: {text!r} is not a comma-separated list") from None
    if not items:
        raise InputError(f"{flag}: empty")
    return items


def run_verify(request: VerifyRequest, console: Console) -> int:
    r = request
    spec = load_spec(r.spec)
    width_list = sorted(set(parse_list(r.widths, "--widths", int)))
    if width_list[0] < 1 or len(width_list) < 2:
        raise InputError(f"--widths: at least two positive widths, got {r.widths!r}")
    params = parse_list(r.parametrizations, "--parametrizations")
    if any(p not in NAMES for p in params):
        raise InputError(f"--parametrizations: {r.parametrizations!r}: each one of mup, sp")
    if r.seeds < 1:
        raise InputError(f"--seeds: at least 1, got {r.seeds}")
    if not r.max_drift > 0:
        raise InputError(f"--max-drift: a positive number of octaves, got {r.max_drift}")
    if r.trials_from == "best":
        name, url = locate(str(r.spec), storage=r.storage, password_env=r.password_env)
        study, best = pick_trial(name, url, width=r.proxy_width, parametrization="mup")
        chosen, source = best.user_attrs.get("values", best.params), f"{study.study_name}#{best.number}"
    else:
        chosen, source = {}, "spec"
    run, centre = base_values(spec, chosen, r.param, width_list[0])
    check_builder_named(model_name(run), spec, f"the settings from {source}")
    grid = grid_values(centre, r.values, r.span)
    vspec = verify_spec(spec, verify_name(spec.name, r.param), run, r.param, grid, r.seeds)

    jobs = [prepare(vspec, width=w, parametrization=p, trials=None, storage=r.storage, password_env=r.password_env)
            for p in params for w in width_list]  # every width is checked before anything is written
    executor = get_backend(r.backend, vspec, r.workers, r.backend_flags)
    for job in jobs:
        executor.check(job)
    console.print(f"verify {r.param} over {len(grid)} values × widths {', '.join(map(str, width_list))} × "
                  f"{', '.join(NAMES[p] for p in params)}, {r.seeds} seed(s) each; settings from {source}")
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    store = open_storage(jobs[0].storage)
    for job in jobs:
        code = run_study(job, store, executor, console)
        if code:
            return code

    points = collect(jobs, store, r.param)
    table = optima(points)
    judged = verdicts(table, r.max_drift)
    out = Path(jobs[0].root) / vspec.name
    write_results(out, points, table, judged, {"param": r.param, "widths": width_list, "grid": grid, "seeds": r.seeds,
                                               "source": source, "max_drift": r.max_drift})
    console.print(optima_table(table, r.param))
    for v in judged:
        verdict = "" if v.passed is None else " — pass" if v.passed else " — FAIL"
        bound = f" (bound {r.max_drift:g})" if v.passed is not None else ""
        console.print(f"{NAMES[v.parametrization]} drift {v.drift:.2f} octaves over widths "
                      f"{width_list[0]}–{width_list[-1]} (seed noise ±{v.noise:.2f}){verdict}{bound}")
    console.print(f"figure: {out / 'figure1.png'}; tables: {out}/points.parquet, optima.parquet")
    return 1 if any(v.passed is False for v in judged) else 0



def write_results(out: Path, points: pd.DataFrame, table: pd.DataFrame, judged: list, summary: dict) -> None:
    """points.parquet, optima.parquet, figure1.png and summary.json (the settings and each verdict) in `out`."""
    for frame, filename in ((points, "points.parquet"), (table, "optima.parquet")):
        with atomic_path(out / filename) as tmp:
            frame.to_parquet(tmp, index=False)
    figure_one(points, table, judged, summary["param"], out / "figure1.png")
    verdict = {v.parametrization: {"drift": v.drift, "noise": v.noise, "passed": v.passed} for v in judged}
    write_summary(out, {**summary, "parametrizations": verdict})

def run_study(job: SweepJob, store, executor, console: Console) -> int:
    study = open_study(job, store, create=True)
    if progress(study)[0] < job.n_trials:
        stopped = run_workers(study, job, executor, console)
        if stopped is not None:
            return stopped
    done, _ = progress(study)
    if done < job.n_trials:
        console.print(f"{job.study_name}: {done}/{job.n_trials} trials; the same command resumes it")
        return 1
    return 0


def collect(jobs: list[SweepJob], store, param: str) -> pd.DataFrame:
    """A row per (parametrization, width, value, seed): the run's objective (NaN if it diverged or failed)
    and its first training loss (≈ the loss at initialization)."""
    rows = []
    for job in jobs:
        study = optuna.load_study(study_name=job.study_name, storage=store)
        for t in study.get_trials(deepcopy=False):
            if t.state not in (TrialState.COMPLETE, TrialState.PRUNED, TrialState.FAIL) or param not in t.params:
                continue
            if t.state == TrialState.FAIL and "error" not in t.user_attrs:
                continue  # a surplus or a lost worker's trial: retried under another number
            losses = t.user_attrs.get("seed_values") if t.state == TrialState.COMPLETE else None
            losses = losses or [math.nan] * job.spec.seeds_per_trial
            for seed, loss in enumerate(losses):
                rows.append({"parametrization": job.parametrization, "width": job.width, "value": t.params[param],
                             "x": math.log2(t.params[param]), "seed": seed, "loss": loss,
                             "loss_init": first_loss(t), "trial": t.number})
    return pd.DataFrame(rows)


def first_loss(trial: optuna.trial.FrozenTrial) -> float:
    curve = read_curve(trial)
    losses = curve["train_loss"].dropna() if curve is not None else ()
    return float(losses.iloc[0]) if len(losses) else math.nan


def optima_table(table: pd.DataFrame, param: str) -> Table:
    out = Table(title=f"optimum of {param} per width (vertex of a parabola through the best points)")
    for column in ("param", "width", f"log₂ {param}", "value", "± seeds", "loss there", "sensitivity", "diverged"):
        out.add_column(column, justify="left" if column == "param" else "right")
    for r in table.itertuples(index=False):
        out.add_row(NAMES[r.parametrization], str(r.width), f"{r.optimum_x:.2f}" + ("" if r.fitted else "*"),
                    f"{r.optimum:.3g}", f"{r.seed_spread:.2f}", f"{r.loss:.4f}",
                    f"{r.sensitivity:.3f}" if np.isfinite(r.sensitivity) else "-", str(r.diverged))
    out.caption = "* the best grid point (no upward parabola); sensitivity: Wortsman et al. 2023"
    return out
