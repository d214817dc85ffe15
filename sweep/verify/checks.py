"""Every check of a `sweep verify` call, before anything is written: the axis and its ladder's width and batch,
the parametrizations and the bounds of each flag, the settings' source, and the studies (one per parametrization
and axis value) with their shapes and budgets; `sweep verify --plan` runs them on every ladder before one trains."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from proxies.registry import count_parameters
from sweep.backends import get_backend
from sweep.errors import InputError
from sweep.paths import inside_root
from sweep.rules.axis import Axis, label, moved_moments, parse_axis
from sweep.rules.prior import check_prior_choice
from sweep.rules.summary import axis_folder, schedule_folder
from sweep.study.bounds import check_list
from sweep.study.lookup import locate, pick_trial
from sweep.study.preflight import prepare
from sweep.study.space import get_path, set_path
from sweep.study.spec import StudySpec, check_builder_named, check_search_path, load_spec, model_name
from sweep.study.study import SweepJob
from sweep.study.trial import base_run
from sweep.verify.grid import base_values, grid_values, verify_spec
from sweep.verify.plot import NAMES
from sweep.verify.request import WIDTHS, VerifyRequest
from trainer.config import MAX_BATCH, MAX_WIDTH, ConfigError, RunConfig, check_name

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
    longest = schedule_folder(spec.name, r.param, *r.schedule) if r.schedule else \
        axis_folder(spec.name, r.param, axis.name, r.ladder_width, r.ladder_batch)
    check_study_names(spec, longest, axis, f"-r{ROUNDS}" if r.refine else "")
    chosen, source, width = settings(r, spec, axis)
    ladder = None if r.ladder_width == width else r.ladder_width  # the proxy's own width: the default folder
    width = ladder or width
    run, centre = base_values(spec, chosen, r.param, width)
    batch = None if r.ladder_batch == get_path(run, "batch_size") else r.ladder_batch  # the proxy's: the default
    folder = axis_folder(spec.name, r.param, axis.name, ladder, batch)
    if r.schedule:
        run, folder = on_schedule(spec, run, r, width)
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


def on_schedule(spec: StudySpec, run: dict, r: VerifyRequest, width: int) -> tuple[dict, str]:
    """(the base run, its folder) for a width ladder on a full run's schedule (`r.schedule`: its depth, batch and
    tokens; `sweep plan`'s own-curve runs): the run at that depth, batch and token budget, AdamW's moments moved by
    the SDE rule as `sweep transfer --batch-rule fitted` moves the full run's, in a folder of its own
    (`schedule_folder`), so that the width ladder on the proxy's schedule is never mixed with it."""
    if r.across and not r.across.startswith("width="):
        raise InputError(f"--across {r.across}: a ladder on a full run's schedule is across width")
    depth, batch, tokens = r.schedule
    try:
        base = RunConfig.parse(set_path(run, "model.width", width))
    except ConfigError as err:
        raise InputError(f"run.{err}") from None
    at = {**set_path(set_path(run, "model.depth", depth), "batch_size", batch), "steps": None, "tokens": tokens}
    try:
        at = moved_moments(at, base, batch / base.batch_size)
    except InputError as err:
        raise InputError(f"batch {batch}: {err}") from None
    return at, schedule_folder(spec.name, r.param, depth, batch, tokens)


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

