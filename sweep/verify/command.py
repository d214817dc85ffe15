"""`sweep verify`: run the grid of a setting × an axis (width by default) per parametrization as its own resumable
studies, fit each axis value's optimum, print the drift and the law, and write the Figure-1 plot; the call is
checked whole before anything is written (checks.py).

Results land in ROOT/NAME-verify-SETTING/ for width (its Optuna storage unless the spec names one, runs and
curves) or ROOT/NAME-verify-SETTING-across-AXIS/ for another axis (whose studies, one per axis value, live in
…-AXIS-VALUE/): `points.parquet` (a row per run), `optima.parquet` (a row per axis value), `figure1.png`,
`summary.json` (the settings, the verdicts and the laws; read by `sweep transfer`). Exit 1 when the μP drift
across width exceeds `--max-drift` octaves.

The default bound, 1 octave: under SP the optimal LR moves about an octave per doubling of width
(Tensor Programs V, Fig. 1), 3 over the default 8×; the μP vertex's seed noise on short CPU runs is
≈ 0.5 octave (a 2-layer GPT on byte-level text, widths 32→256, 3 seeds), so a correct μP model sits
under 1 with margin and an SP one (or a μP bug that lets the optimum follow width) lands well above it.
The law's band across width is the same bound per octave of the measured range: |s| ≤ max_drift / log₂(max/min).
"""
from __future__ import annotations

import math
from collections import Counter
from dataclasses import replace
from pathlib import Path

import numpy as np
import optuna
import pandas as pd
from optuna.trial import TrialState
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from sweep.backends.live import run_workers
from sweep.errors import is_bad_input
from sweep.rules.axis import INTEGER, Axis, label
from sweep.rules.bracket import REFINE, next_values
from sweep.rules.prior import chain_text, prior_for, update
from sweep.rules.summary import certificate, interval_basis, write_summary
from sweep.study.lookup import read_curve
from sweep.study.preflight import prepare
from sweep.study.storage import open_storage
from sweep.study.study import SweepJob, check_same_spec, open_study, progress
from sweep.study.trial import base_run
from sweep.verify.analysis import Verdict, optima, seed_mean, trained, verdicts
from sweep.verify.checks import ROUNDS, check_request
from sweep.verify.grid import verify_spec
from sweep.verify.law import fit_law
from sweep.verify.plot import NAMES, figure_one
from sweep.verify.request import VerifyRequest
from trainer.atomic import atomic_path
from trainer.config import RunConfig


def run_verify(request: VerifyRequest, console: Console) -> int:
    r, c = request, check_request(request)
    axis, width, batch, grid, jobs, executor, shapes = c.axis, c.width, c.batch, c.grid, c.jobs, c.executor, c.shapes
    at = (f" at width {width}" if axis.name != "width" else "") + (f", batch {batch}" if batch else "")
    console.print(f"verify {r.param} over {len(grid)} values × {axis.name} {', '.join(map(label, axis.values))}{at} "
                  f"× {', '.join(NAMES[p] for p in c.params)}, {r.seeds} seed(s) each; settings from {c.source}")
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    stores: dict[str, object] = {}
    for _, job in jobs:
        store = stores.setdefault(str(job.storage), open_storage(job.storage))
        code = run_study(job, store, executor, console)
        if code:
            return code
    points = collect(jobs, stores, r.param, axis.name)
    code, points, refined = refine_grids(jobs, stores, points, r, axis.name, executor, console)
    if code:
        return code
    values = [int(v) if axis.name in INTEGER else v for v in axis.values]
    cfg = RunConfig.parse(base_run(jobs[0][1].spec, jobs[0][1].width, jobs[0][1].parametrization))
    summary = {"param": r.param, "axis": axis.name, "values": values,
               "widths": values if axis.name == "width" else [width], "grid": grid, "seeds": r.seeds,
               "source": c.source, "max_drift": r.max_drift, "prior": r.prior, "optimizer": cfg.optimizer.name,
               "depth_rule": cfg.model.options.get("depth_alpha") is not None,
               "refined": refined,
               "shapes": [{"at": at, **s} for at, s in shapes.items()],
               "reused": reused_runs(points, axis.name)}
    return report(c.out, points, axis, summary, console)


def refine_grids(jobs: list, stores: dict, points: pd.DataFrame, r: VerifyRequest, axis: str, executor,
                 console: Console) -> tuple[int, pd.DataFrame, list[dict]]:
    """Rounds of `next_values` (sweep/rules/bracket.py) per axis value and parametrization, each round's points a
    study of their own (NAME-rK: the same command finds them run and resumes), until every optimum is bracketed or
    its `--refine` budget is spent; (exit code, every point, what was added and whether each ended bracketed).

    A round an earlier run finished is taken in whatever the budget (`paid_round`): `--refine` bounds what more is
    run, as Optuna's `n_trials` does, and never hides points already paid for (a smaller budget, or 0, refitted the
    bare grid, overwrote the bracketed fit in summary.json that transfer reads, and advised the refinement just run)."""
    base, added = list(jobs), {}
    for round_ in range(1, ROUNDS + 1):
        new = []
        for at, job in base:
            group = trained(points[(points["parametrization"] == job.parametrization) & (points[axis] == at)])
            mean = seed_mean(group)
            todo = [v for v in next_values(mean.index.to_numpy(float), mean.to_numpy(float), point_noise(group))
                    if v not in set(mean.index)]
            key = (job.parametrization, at)
            within = bool(todo) and len(added.get(key, [])) + len(todo) <= r.refine
            paid = bool(todo) and not within and paid_round(job, round_, todo, r)
            if within or paid:
                added.setdefault(key, []).extend(todo)
                doing = "kept from an earlier run" if paid else "refining"
                console.print(f"{doing} (round {round_}): {NAMES[job.parametrization]} at {axis} {label(at)}, its "
                              f"optimum not yet bracketed: log₂ {', '.join(f'{v:.2f}' for v in todo)}")
                new.append((at, round_job(job, round_, todo, r)))
        if not new:
            break
        for _, job in new:
            code = run_study(job, stores.setdefault(str(job.storage), open_storage(job.storage)), executor, console)
            if code:
                return code, points, []
        jobs = jobs + new
        points = collect(jobs, stores, r.param, axis)
    if not r.refine and not added:
        return 0, points, []  # refinement off and none run before: the grid as given
    refined = []
    for at, job in base:
        group = trained(points[(points["parametrization"] == job.parametrization) & (points[axis] == at)])
        mean = seed_mean(group)
        left = next_values(mean.index.to_numpy(float), mean.to_numpy(float), point_noise(group))
        refined.append({"parametrization": job.parametrization, "at": float(at),
                        "added": added.get((job.parametrization, at), []), "bracketed": not left})
        if left:
            console.print(f"[yellow]not bracketed[/]: {NAMES[job.parametrization]} at {axis} {label(at)} after "
                          f"{len(added.get((job.parametrization, at), []))} extra points (--refine {r.refine}); "
                          f"next: log₂ {', '.join(f'{v:.2f}' for v in left)}")
    return 0, points, refined


def round_job(job: SweepJob, round_: int, todo: list[float], r: VerifyRequest) -> SweepJob:
    """Refinement round `round_` of `job`'s curve: the log₂ values `todo`, a study of its own (NAME-rK)."""
    vspec = verify_spec(job.spec, f"{job.spec.name}-r{round_}", job.spec.run, r.param, [2.0 ** v for v in todo],
                        r.seeds)
    return prepare(vspec, width=job.width, parametrization=job.parametrization, trials=None, storage=r.storage,
                   password_env=r.password_env)


def paid_round(job: SweepJob, round_: int, todo: list[float], r: VerifyRequest) -> bool:
    """Whether an earlier run of this command finished this round (its study holds every trial, run for the same
    values): read only, so nothing is created where it was not."""
    try:
        rjob = round_job(job, round_, todo, r)
        study = optuna.load_study(study_name=rjob.study_name, storage=open_storage(rjob.storage, read_only=True))
        check_same_spec(study.user_attrs, rjob)
    except Exception as err:  # no such storage or study, one made for other values, or values no run takes
        if isinstance(err, KeyError) or is_bad_input(err):
            return False
        raise
    return progress(study)[0] >= rjob.n_trials


def point_noise(group: pd.DataFrame) -> float:
    """The standard error of a point's seed mean (the seeds' spread, pooled over points, / √seeds); 0 with one seed:
    its noise is unknown, and any rise counts as one."""
    seeds = group["seed"].nunique()
    if seeds < 2:
        return 0.0
    spread = group.groupby("x")["loss"].std(ddof=1).dropna()
    return float(spread.mean() / math.sqrt(seeds)) if len(spread) else 0.0


def report(out: Path, points: pd.DataFrame, axis: Axis, summary: dict, console: Console) -> int:
    """Fit the optima, the verdicts and the laws; write and print them; the exit code (1: μP drifts with width)."""
    table = optima(points, axis.name)
    laws = fit_laws(trained(points), table, axis.name, summary)
    judged = [replace(v, passed=judge(v, laws.get(v.parametrization), axis.name)) for v in
              verdicts(table, summary["max_drift"])]
    errors = failures(points)
    write_results(out, points, table, judged,
                  {**summary, "laws": laws, "failed": sum(errors.values()), "failed_errors": errors})
    console.print(optima_table(table, summary["param"], axis.name))
    if errors:
        kinds = escape(", ".join(f"{kind} ×{n}" for kind, n in errors.items()))
        console.print(f"[yellow]failed[/]: {sum(errors.values())} of {len(points)} runs raised an error and trained "
                      f"nothing ({kinds}): left out of the fit and of the diverged count; points.parquet holds each "
                      "one's error; a failed trial counts as run, so the same command does not train it again")
    for v in judged:
        noise = f"seed noise ±{v.noise:.2f}" if summary["seeds"] > 1 else "seed noise unknown: one seed"
        measured = table.loc[(table["parametrization"] == v.parametrization) & table["measured"], axis.name]
        ends = sorted({label(measured.min()), label(measured.max())}, key=float) if len(measured) else ["none"]
        span = f"{axis.name} {'–'.join(ends)}"
        console.print(f"{NAMES[v.parametrization]} drift {v.drift:.2f} octaves over {span} ({noise})"
                      f"{verdict_text(v, table, axis.name)}")
    for p, law in laws.items():
        console.print(f"{NAMES[p]} law: {summary['param']}* ∝ {axis.name}^s, s = {law['slope']:.3f} measured; "
                      f"{chain_text(law)} {interval_basis(law)}, residual {law['residual']:.4f}; {law['certificate']}"
                      f"{poor_remark(law, axis.name)}")
        if law.get("edge_at"):
            console.print(f"[yellow]edge[/]: {NAMES[p]} at {axis.name} {', '.join(label(v) for v in law['edge_at'])}"
                          ": the best point is at the edge of the grid's points that trained, so that valley's "
                          "vertex is extrapolated; "
                          + refine_hint(summary["refined"], p, law["edge_at"]))
    for row in table[table["poor_fit"]].to_dict(orient="records"):
        console.print(f"[yellow]poor fit[/]: {NAMES[row['parametrization']]} at {axis.name} {label(row[axis.name])}: "
                      f"the grid does not resolve the optimum (residual {row['residual']:.4f}); "
                      + refine_hint(summary["refined"], row["parametrization"], [row[axis.name]]))
    console.print(f"figure: {out / 'figure1.png'}; tables: {out}/points.parquet, optima.parquet")
    return 1 if any(v.passed is False for v in judged) else 0


def failures(points: pd.DataFrame) -> dict[str, int]:
    """{error kind: runs} of the runs whose trial failed (a tool error), the kind the exception's type before the
    message's first colon (sweep/study/trial.py) or the whole message where it has none."""
    return dict(sorted(Counter(str(e).partition(":")[0] for e in points["error"].dropna()).items()))


def verdict_text(v: Verdict, table: pd.DataFrame, axis: str) -> str:
    """The verdict's word (empty when not judged), and the axis values not measured (every run there failed): a FAIL
    then comes from the drift over the others (found by an outside tester: it read as if the missing value failed)."""
    word = "" if v.passed is None else " — pass" if v.passed else " — FAIL"
    if not v.unmeasured:
        return word
    missing = table.loc[(table["parametrization"] == v.parametrization) & ~table["measured"], axis]
    unmeasured = f"not measured at {axis} {', '.join(map(label, missing))}, every run failed"
    if v.passed is False:
        return f"{word}: the drift over the measured values is past the bound; {unmeasured}"
    return f"{word or ' — no verdict'}: {unmeasured}"


def refine_hint(refined: list[dict], parametrization: str, values: list[float]) -> str:
    """What brackets an optimum the grid left at its edge or unresolved: `--refine` adds points to the same studies
    (sweep/rules/bracket.py), where a new --range would start a new ladder; where refinement bracketed it already,
    the valley is as shallow as the seeds' noise, and more seeds resolve it."""
    rows = [r for r in refined if r["parametrization"] == parametrization and r["at"] in values]
    if not rows:
        return (f"the same command with --refine {REFINE} (the default) adds up to {REFINE} points per curve until "
                "each optimum is bracketed (resumable; every run so far is kept)")
    if all(r["bracketed"] for r in rows):
        return (f"refinement bracketed it ({', '.join(str(len(r['added'])) for r in rows)} points added), but the "
                "valley is as shallow as the seeds' noise there: more --seeds resolve it")
    return "its --refine budget was spent; the same command with a larger one goes on from here"


def fit_laws(points: pd.DataFrame, table: pd.DataFrame, axis: str, summary: dict) -> dict[str, dict]:
    """Per parametrization, the law measured by the joint fit, its published prior and posterior (`--prior`), its
    certificate (an equivalence test) and the axis values whose optimum was a poor fit."""
    laws, poor = {}, table[table["poor_fit"]]
    for p, group in points.groupby("parametrization", sort=True):
        law = fit_law(group, axis)
        if law is None:
            continue
        prior = prior_for(summary["param"], axis, p, summary["optimizer"], summary["depth_rule"])
        poor_at = sorted(float(v) for v in poor.loc[poor["parametrization"] == p, axis])
        laws[p] = {**law, **update(law, prior, summary["prior"]), "poor_at": poor_at,
                   **certificate(axis, p, law, summary["max_drift"], prior.centre if prior else None)}
    return laws


def judge(verdict, law: dict | None, axis: str) -> bool | None:
    """μP's verdict across width: FAIL when the drift passes its bound; else none where a width was not measured;
    else the law's equivalence test where it has an interval (pass, FAIL, None undecided), else the drift's pass;
    nothing judged along another axis or for SP."""
    if axis != "width" or verdict.parametrization != "mup":
        return None
    if verdict.passed is False:  # the optimum moved past --max-drift: FAIL (exit 1), whatever a prior-pulled law says
        return False
    if verdict.unmeasured:  # an axis value no run measured: the law over the rest does not speak for it
        return None
    if law is not None and law.get("equivalence", {}).get("verdict") in ("pass", "fail", "undecided"):
        return law["passed"]
    return verdict.passed


def poor_remark(law: dict, axis: str) -> str:
    """What a law fitted through optima the grid did not resolve inherits (empty when it has none)."""
    if not law.get("poor_at"):
        return ""
    at = ", ".join(label(v) for v in law["poor_at"])
    return f"; [yellow]fitted through poor optima[/] at {axis} {at}: the slope inherits their error"


def write_results(out: Path, points: pd.DataFrame, table: pd.DataFrame, judged: list, summary: dict) -> None:
    """points.parquet, optima.parquet, figure1.png and summary.json (the settings, each verdict, the laws)."""
    for frame, filename in ((points, "points.parquet"), (table, "optima.parquet")):
        with atomic_path(out / filename) as tmp:
            frame.to_parquet(tmp, index=False)
    figure_one(points, table, judged, summary["param"], out / "figure1.png", summary["axis"], summary["laws"])
    verdict = {v.parametrization: {"drift": v.drift, "noise": v.noise, "passed": v.passed} for v in judged}
    optimum_rows = table.replace({np.nan: None}).to_dict(orient="records")
    write_summary(out, {**summary, "parametrizations": verdict, "optima": optimum_rows})


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


def collect(jobs: list[tuple[float, SweepJob]], stores: dict, param: str, axis: str) -> pd.DataFrame:
    """A row per (parametrization, axis value, value, seed): the run's objective (NaN if it diverged or failed),
    the error of a trial that failed (a tool error, its message: no training, so no divergence; None for a run that
    trained), its first training loss (≈ the loss at initialization), and whether it was another study's run
    (`reused`)."""
    rows = []
    for at, job in jobs:
        study = optuna.load_study(study_name=job.study_name, storage=stores[str(job.storage)])
        for t in study.get_trials(deepcopy=False):
            if t.state not in (TrialState.COMPLETE, TrialState.PRUNED, TrialState.FAIL) or param not in t.params:
                continue
            if t.state == TrialState.FAIL and "error" not in t.user_attrs:
                continue  # a surplus or a lost worker's trial: retried under another number
            losses = t.user_attrs.get("seed_values") if t.state == TrialState.COMPLETE else None
            losses = losses or [math.nan] * job.spec.seeds_per_trial
            error = t.user_attrs["error"] if t.state == TrialState.FAIL else None
            reused = {r.get("seed") for r in t.user_attrs.get("reused", []) if isinstance(r, dict)}
            for seed, loss in enumerate(losses):
                rows.append({"parametrization": job.parametrization, "width": job.width, axis: at,
                             "value": t.params[param], "x": math.log2(t.params[param]), "seed": seed, "loss": loss,
                             "error": error, "loss_init": first_loss(t, Path(job.root)), "trial": t.number,
                             "reused": seed in reused})
    points = pd.DataFrame(rows)
    if axis in ("width", "depth", "batch_size", "tokens", "steps"):
        points[axis] = points[axis].astype(int)
    return points


def reused_runs(points: pd.DataFrame, axis: str) -> list[dict]:
    """[{at, runs}]: per axis value, the runs another study trained (sweep/study/twin.py), no compute of this one."""
    if "reused" not in points:
        return []
    return [{"at": float(at), "runs": int(n)} for at, n in points.groupby(axis)["reused"].sum().items() if n]


def first_loss(trial: optuna.trial.FrozenTrial, root: Path) -> float:
    curve = read_curve(trial, root)
    losses = curve["train_loss"].dropna() if curve is not None else ()
    return float(losses.iloc[0]) if len(losses) else math.nan


def optima_table(table: pd.DataFrame, param: str, axis: str = "width") -> Table:
    out = Table(title=f"optimum of {param} per {axis} (vertex of the parabola through the best point and its "
                      "neighbours)")
    for column in ("param", axis, f"log₂ {param}", "value", "± seeds", "loss there", "residual", "sensitivity",
                   "diverged", "failed"):
        out.add_column(column, justify="left" if column == "param" else "right")
    for r in table.to_dict(orient="records"):
        fit = ("not measured", *"-" * 5) if not r["measured"] else (
            f"{r['optimum_x']:.2f}" + ("" if r["fitted"] else "*"), f"{r['optimum']:.3g}",
            f"{r['seed_spread']:.2f}" if np.isfinite(r["seed_spread"]) else "?", f"{r['loss']:.4f}",
            f"{r['residual']:.4f}" + (" poor" * r["poor_fit"]),
            f"{r['sensitivity']:.3f}" if np.isfinite(r["sensitivity"]) else "-")
        out.add_row(NAMES[r["parametrization"]], label(r[axis]), *fit, str(r["diverged"]), str(r["failed"]))
    out.caption = ("* the best grid point (at the grid's edge or beside a diverged point); ± seeds: the spread of the "
                   "seeds' vertices (?: one seed, unknown); residual: RMS of the "
                   "points two steps out about the parabola; poor: the curve does not rise away from the best point "
                   "within 3 steps (noise as deep as the valley); sensitivity: Wortsman et al. 2023; failed: runs "
                   "that raised an error (they trained nothing: left out of the fit; not measured where every run "
                   "failed)")
    return out

