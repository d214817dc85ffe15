"""`sweep verify`: run the grid of a setting × an axis (width by default) per parametrization as its own resumable
studies, fit each axis value's optimum, print the drift and the law, and write the Figure-1 plot.

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
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import optuna
import pandas as pd
from optuna.trial import TrialState
from rich.console import Console
from rich.table import Table

from proxies.registry import count_parameters
from sweep.backends import get_backend
from sweep.backends.live import run_workers
from sweep.errors import InputError, is_bad_input
from sweep.paths import inside_root
from sweep.rules.axis import INTEGER, Axis, label, moved_moments, parse_axis
from sweep.rules.bracket import REFINE, next_values
from sweep.rules.prior import chain_text, check_prior_choice, prior_for, update
from sweep.rules.summary import axis_folder, certificate, interval_basis, write_summary
from sweep.study.bounds import check_list
from sweep.study.lookup import locate, pick_trial, read_curve
from sweep.study.preflight import prepare
from sweep.study.space import get_path, set_path
from sweep.study.spec import StudySpec, check_builder_named, check_search_path, load_spec, model_name
from sweep.study.storage import open_storage
from sweep.study.study import SweepJob, check_same_spec, open_study, progress
from sweep.study.trial import base_run
from sweep.verify.analysis import optima, seed_mean, verdicts
from sweep.verify.grid import base_values, grid_values, verify_spec
from sweep.verify.law import fit_law
from sweep.verify.plot import NAMES, figure_one
from sweep.verify.request import WIDTHS, VerifyRequest
from trainer.atomic import atomic_path
from trainer.config import MAX_BATCH, MAX_WIDTH, RunConfig, check_name

MAX_REFINE = 32  # extra points per axis value and parametrization: past it a typo, not a budget
ROUNDS = 16  # refinement rounds at most (each adds at most two points per curve)


def parse_list(text: str, flag: str, cast=str) -> list:
    try:
        items = [cast(part.strip()) for part in text.split(",") if part.strip()]
    except ValueError:
        raise InputError(f"{flag}: {text[:80]!r} is not a comma-separated list") from None
    if not items:
        raise InputError(f"{flag}: empty")
    check_list(flag, items)
    return items


@dataclass
class Checked:
    """A verify call with everything checked and nothing written: what `run_verify` runs."""

    spec: StudySpec
    axis: Axis
    params: list[str]
    source: str
    width: int
    batch: int | None
    grid: list[float]
    jobs: list
    executor: object
    shapes: dict
    out: Path


def check_request(r: VerifyRequest) -> Checked:
    """Every check of a verify call, before anything is written (`sweep verify --plan` runs it on every ladder
    before the first one trains)."""
    spec = load_spec(r.spec)
    if r.across and r.widths is not None:
        raise InputError(f"--widths: not used with --across {r.across} (the ladder runs at the proxy's width; "
                         "widths are an axis of their own: --across width=…)")
    axis = parse_axis(r.across) if r.across else width_axis(WIDTHS if r.widths is None else r.widths)
    params = parse_list(r.parametrizations or ("mup,sp" if axis.name == "width" else "mup"), "--parametrizations")
    if any(p not in NAMES for p in params):
        raise InputError(f"--parametrizations: {r.parametrizations!r}: comma-separated, each mup or sp (both: mup,sp)")
    if r.seeds < 1:
        raise InputError(f"--seeds: at least 1, got {r.seeds}")
    if not r.max_drift > 0:
        raise InputError(f"--max-drift: a positive number of octaves, got {r.max_drift}")
    check_prior_choice(r.prior)
    if not 0 <= r.refine <= MAX_REFINE:
        raise InputError(f"--refine: extra grid points per axis value, 0 to {MAX_REFINE}, got {r.refine}")
    check_ladder(r, axis)
    check_search_path(r.param, f"--param {r.param}")  # before the folder its name makes is judged
    longest = axis_folder(spec.name, r.param, axis.name, r.ladder_width, r.ladder_batch)
    check_study_names(spec, longest, axis, f"-r{ROUNDS}" if r.refine else "")
    chosen, source, width = settings(r, spec, axis)
    ladder = None if r.ladder_width == width else r.ladder_width  # the proxy's own width: the default folder
    width = ladder or width
    run, centre = base_values(spec, chosen, r.param, width)
    batch = None if r.ladder_batch == get_path(run, "batch_size") else r.ladder_batch  # the proxy's: the default
    folder = axis_folder(spec.name, r.param, axis.name, ladder, batch)
    if axis.path == r.param:
        raise InputError(f"--across {axis.name}: the axis cannot be the setting on the grid (--param {r.param})")
    check_builder_named(model_name(run), spec, f"the settings from {source}")
    grid = grid_values(centre, r.values, r.span)
    jobs = plan(spec, r, axis, run, grid, params, width, folder, batch)  # each value checked before anything is written
    out = Path(jobs[0][1].root) / folder
    inside_root(out, Path(jobs[0][1].root), "verify results")  # never written through a link out of the root
    executor = get_backend(r.backend, jobs[0][1].spec, r.workers, r.backend_flags)
    for _, job in jobs:
        executor.check(job)
    shapes = {}
    for at, job in jobs:
        shapes[at] = shapes.get(at) or shape(job)
    check_budgets(axis, shapes)
    return Checked(spec, axis, params, source, width, batch, grid, jobs, executor, shapes, out)


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
               "shapes": [{"at": at, **s} for at, s in shapes.items()]}
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
            group = points[(points["parametrization"] == job.parametrization) & (points[axis] == at)]
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
        group = points[(points["parametrization"] == job.parametrization) & (points[axis] == at)]
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


def width_axis(widths: str) -> Axis:
    width_list = sorted(set(parse_list(widths, "--widths", int)))
    check_list("--widths", width_list, "width")
    if width_list[0] < 1 or len(width_list) < 2:
        raise InputError(f"--widths: at least two positive widths, got {widths!r}")
    return Axis("width", tuple(float(w) for w in width_list))


def check_ladder(r: VerifyRequest, axis: Axis) -> None:
    """`--ladder-width` runs a ladder across another axis than width at a width other than the proxy's (a second
    width's ladder measures how the loss law's width and token terms interact); `--ladder-batch` a horizon ladder at
    another batch than the proxy's (the target's: where the horizon law is applied, sweep/rules/plan.py)."""
    if r.ladder_width is not None and axis.name == "width":
        raise InputError("--ladder-width: for a ladder across another axis (--across AXIS=…); across width the widths "
                         "are the axis")
    if r.ladder_width is not None and not 1 <= r.ladder_width <= MAX_WIDTH:
        raise InputError(f"--ladder-width: a width from 1 to {MAX_WIDTH}, got {r.ladder_width}")
    if r.ladder_batch is None:
        return
    if axis.name not in ("tokens", "steps"):
        raise InputError(f"--ladder-batch: for a ladder across tokens or steps (the horizon), not {axis.name}")
    if r.ladder_width is not None:
        raise InputError("--ladder-batch: not with --ladder-width (one ladder moves one thing from the proxy's point)")
    if not 1 <= r.ladder_batch <= MAX_BATCH:
        raise InputError(f"--ladder-batch: a batch size from 1 to {MAX_BATCH}, got {r.ladder_batch}")


def check_study_names(spec: StudySpec, folder: str, axis: Axis, rounds: str = "") -> None:
    """A valid spec name can give a study name past the name rule once verify's suffix (`folder`, and a refinement
    round's, `rounds`) is added: one line."""
    longest = max([folder, *(f"{folder}-{label(at)}" for at in axis.values if axis.name != "width")], key=len) + rounds
    try:
        check_name(longest)
    except ValueError:
        room = 100 - (len(longest) - len(spec.name))
        raise InputError(f"name: this verify's study {longest[:40]}… is longer than 100 characters; a spec name of "
                         f"at most {room} characters leaves room for its suffix") from None


def settings(r: VerifyRequest, spec: StudySpec, axis: Axis) -> tuple[dict, str, int]:
    """(the chosen trial's values, where they came from, the proxy's width: the one the grid runs at when the axis
    is not width, unless `--ladder-width` moves it)."""
    width = r.proxy_width
    if r.trials_from == "best":
        name, url = locate(str(r.spec), storage=r.storage, password_env=r.password_env)
        study, best = pick_trial(name, url, width=r.proxy_width, parametrization="mup")
        chosen, source = best.user_attrs.get("values", best.params), f"{study.study_name}#{best.number}"
        width = width or study.user_attrs.get("width")
    else:
        chosen, source = {}, "spec"
    width = width or get_path(spec.run, "model.width")
    if axis.name == "width":
        return chosen, source, int(axis.values[0])
    if width is None and r.ladder_width is None:
        raise InputError(f"--proxy-width: the width to verify across {axis.name} at (or set run.model.width)")
    return chosen, source, int(width or r.ladder_width)


def plan(spec: StudySpec, r: VerifyRequest, axis: Axis, run: dict, grid: list[float], params: list[str],
         width: int, folder: str, batch: int | None) -> list[tuple[float, SweepJob]]:
    """(axis value, job) for every study: one spec over the widths, or one spec per value of another axis (at
    `batch`, AdamW's moments moved with it as across batch, when a horizon ladder runs at another batch)."""
    def job(vspec: StudySpec, w: int, p: str) -> SweepJob:
        return prepare(vspec, width=w, parametrization=p, trials=None, storage=r.storage, password_env=r.password_env)

    if axis.name == "width":
        vspec = verify_spec(spec, folder, run, r.param, grid, r.seeds)
        try:
            return [(at, job(vspec, int(at), p)) for p in params for at in axis.values]
        except InputError as err:
            raise InputError(f"--across width: {err}") from None
    base = job(verify_spec(spec, folder, run, r.param, grid, r.seeds), width, params[0])
    cfg = RunConfig.parse(base_run(base.spec, width, params[0]))
    if axis.name == "batch_size" and base.total_steps is None:
        raise InputError(f"--across batch_size: the axis holds the base run's token budget, which --param {r.param} "
                         "sets per grid point; verify it across another axis")
    base_tokens = base.total_steps * cfg.batch_size * base.tokens_per_example if base.total_steps else 0
    if batch is not None:  # the batch's moments are checked under the flag that asked for it
        try:
            moved_moments(set_path(run, "batch_size", batch), cfg, batch / cfg.batch_size)
        except InputError as err:
            raise InputError(f"--ladder-batch {batch}: {err}") from None
    jobs = []
    for at in axis.values:
        try:
            at_run = axis.apply(run, at, base_tokens)
            if axis.name == "batch_size":
                at_run = moved_moments(at_run, cfg, at / cfg.batch_size)
            elif batch is not None:
                at_run = moved_moments(set_path(at_run, "batch_size", batch), cfg, batch / cfg.batch_size)
            vspec = verify_spec(spec, f"{folder}-{label(at)}", at_run, r.param, grid, r.seeds)
            jobs += [(at, job(vspec, width, p)) for p in params]
        except InputError as err:
            raise InputError(f"--across {axis.name}={label(at)}: {err}") from None
    return jobs


def check_budgets(axis: Axis, shapes: dict[float, dict]) -> None:
    """A tokens or batch value whose run, rounded up to whole steps, is not the budget asked for measures another
    budget: a token value that is not a whole number of steps (the law would sit at the wrong tokens), or a batch
    whose one step is twice the held budget, is refused."""
    if axis.name not in ("tokens", "batch_size"):
        return
    held = min(s["tokens"] for s in shapes.values())
    for at, s in shapes.items():
        asked = at if axis.name == "tokens" else held
        if s["tokens"] >= 2 * asked or (axis.name == "tokens" and s["tokens"] != asked):
            raise InputError(f"--across {axis.name}={label(at)}: one step is {s['tokens'] // max(1, s['steps'])} "
                             f"tokens (batch {s['batch_size']}), so the run would train {s['tokens']} tokens, not "
                             f"{int(asked)}; use whole numbers of steps")


def shape(job: SweepJob) -> dict:
    """The run's width, depth, batch, tokens and parameter count N (all parameters) at one axis value."""
    cfg = RunConfig.parse(base_run(job.spec, job.width, job.parametrization))
    source = cfg.data.open(cfg.seed)
    n = count_parameters(cfg.model.name, job.width, cfg.model.depth, job.parametrization,
                         **{**source.model_options(), **cfg.model.options})
    steps = cfg.total_steps(source.tokens_per_example)
    return {"width": job.width, "depth": cfg.model.depth, "batch_size": cfg.batch_size, "params": n,
            "steps": steps, "tokens": steps * cfg.batch_size * source.tokens_per_example}


def report(out: Path, points: pd.DataFrame, axis: Axis, summary: dict, console: Console) -> int:
    """Fit the optima, the verdicts and the laws; write and print them; the exit code (1: μP drifts with width)."""
    table = optima(points, axis.name)
    laws = fit_laws(points, table, axis.name, summary)
    judged = [replace(v, passed=judge(v, laws.get(v.parametrization), axis.name)) for v in
              verdicts(table, summary["max_drift"])]
    write_results(out, points, table, judged, {**summary, "laws": laws})
    console.print(optima_table(table, summary["param"], axis.name))
    span = f"{axis.name} {label(axis.values[0])}–{label(axis.values[-1])}"
    for v in judged:
        verdict = "" if v.passed is None else " — pass" if v.passed else " — FAIL"
        noise = f"seed noise ±{v.noise:.2f}" if summary["seeds"] > 1 else "seed noise unknown: one seed"
        console.print(f"{NAMES[v.parametrization]} drift {v.drift:.2f} octaves over {span} ({noise}){verdict}")
    for p, law in laws.items():
        console.print(f"{NAMES[p]} law: {summary['param']}* ∝ {axis.name}^s, s = {law['slope']:.3f} measured; "
                      f"{chain_text(law)} {interval_basis(law)}, residual {law['residual']:.4f}; {law['certificate']}"
                      f"{poor_remark(law, axis.name)}")
        if law.get("edge_at"):
            console.print(f"[yellow]edge[/]: {NAMES[p]} at {axis.name} {', '.join(label(v) for v in law['edge_at'])}"
                          ": the best point is at the grid's edge, so that valley's vertex is extrapolated; "
                          + refine_hint(summary["refined"], p, law["edge_at"]))
    for row in table[table["poor_fit"]].to_dict(orient="records"):
        console.print(f"[yellow]poor fit[/]: {NAMES[row['parametrization']]} at {axis.name} {label(row[axis.name])}: "
                      f"the grid does not resolve the optimum (residual {row['residual']:.4f}); "
                      + refine_hint(summary["refined"], row["parametrization"], [row[axis.name]]))
    console.print(f"figure: {out / 'figure1.png'}; tables: {out}/points.parquet, optima.parquet")
    return 1 if any(v.passed is False for v in judged) else 0


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
    """μP's verdict across width: FAIL when the drift passes its bound; else the law's equivalence test where it has
    an interval (pass, FAIL, None undecided), else the drift's pass; nothing judged along another axis or for SP."""
    if axis != "width" or verdict.parametrization != "mup":
        return None
    if verdict.passed is False:  # the optimum moved past --max-drift: FAIL (exit 1), whatever a prior-pulled law says
        return False
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
    """A row per (parametrization, axis value, value, seed): the run's objective (NaN if it diverged or failed)
    and its first training loss (≈ the loss at initialization)."""
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
            for seed, loss in enumerate(losses):
                rows.append({"parametrization": job.parametrization, "width": job.width, axis: at,
                             "value": t.params[param], "x": math.log2(t.params[param]), "seed": seed, "loss": loss,
                             "loss_init": first_loss(t, Path(job.root)), "trial": t.number})
    points = pd.DataFrame(rows)
    if axis in ("width", "depth", "batch_size", "tokens", "steps"):
        points[axis] = points[axis].astype(int)
    return points


def first_loss(trial: optuna.trial.FrozenTrial, root: Path) -> float:
    curve = read_curve(trial, root)
    losses = curve["train_loss"].dropna() if curve is not None else ()
    return float(losses.iloc[0]) if len(losses) else math.nan


def optima_table(table: pd.DataFrame, param: str, axis: str = "width") -> Table:
    out = Table(title=f"optimum of {param} per {axis} (vertex of the parabola through the best point and its "
                      "neighbours)")
    for column in ("param", axis, f"log₂ {param}", "value", "± seeds", "loss there", "residual", "sensitivity",
                   "diverged"):
        out.add_column(column, justify="left" if column == "param" else "right")
    for r in table.to_dict(orient="records"):
        out.add_row(NAMES[r["parametrization"]], label(r[axis]),
                    f"{r['optimum_x']:.2f}" + ("" if r["fitted"] else "*"), f"{r['optimum']:.3g}",
                    f"{r['seed_spread']:.2f}" if np.isfinite(r["seed_spread"]) else "?", f"{r['loss']:.4f}",
                    f"{r['residual']:.4f}" + (" poor" * r["poor_fit"]),
                    f"{r['sensitivity']:.3f}" if np.isfinite(r["sensitivity"]) else "-", str(r["diverged"]))
    out.caption = ("* the best grid point (at the grid's edge or beside a diverged point); ± seeds: the spread of the "
                   "seeds' vertices (?: one seed, unknown); residual: RMS of the "
                   "points two steps out about the parabola; poor: the curve does not rise away from the best point "
                   "within 3 steps (noise as deep as the valley); sensitivity: Wortsman et al. 2023")
    return out
