"""The `sweep` command: flags parsed here (choices as Enums) and checked before it starts (sweep/argv/), then one
call of a command's package."""
from __future__ import annotations

import functools
import inspect
import re
import sys
from collections.abc import Callable
from enum import Enum
from pathlib import Path
from typing import Annotated, NoReturn

import typer
from rich.console import Console

from sweep import errors
from sweep.argv.repeats import TYPED, OnceEach
from sweep.argv.values import checked_flags, whole_number
from sweep.cluster.settings import RUN, WORKERS, options
from sweep.coords import DEFAULT_BATCH, DEFAULT_STEPS, OTHER_BATCH
from sweep.errors import as_fault, is_bad_input
from sweep.launch.request import LaunchRequest
from sweep.plan.request import SHARE, PlanRequest
from sweep.proxy.request import WARM_START_TOP, SweepRequest
from sweep.rules.target import Target
from sweep.verify.request import WIDTHS, VerifyRequest
from trainer.preemption import Preempted

try:  # typer ≥ 0.26 vendors click
    from typer._click.exceptions import BadParameter, UsageError
except ImportError:  # pragma: no cover - older typer depends on click
    from click.exceptions import BadParameter, UsageError


def choice(name: str, *values: str) -> type[Enum]:
    """An Enum of `values`: typer makes it a choice that click checks (one check, one message)."""
    return Enum(name, [(value, value) for value in values], type=str)


Backend = choice("Backend", "local", "ray", "slurm")
Parametrization = choice("Parametrization", "mup", "sp")
Optimizer = choice("Optimizer", "adamw", "sgd", "muon", "lion", "schedulefree_adamw", "adam_atan2")  # as OPTIMIZERS
ResultsFormat = choice("ResultsFormat", "table", "csv", "json")
SqlFormat = choice("SqlFormat", "table", "csv", "parquet")
ExportFormat = choice("ExportFormat", "csv", "parquet")
StatusFormat = choice("StatusFormat", "table", "json")
XAxis = choice("XAxis", "step", "tokens", "fraction")
Metric = choice("Metric", "val_loss", "train_loss")
TrialsFrom = choice("TrialsFrom", "best", "spec")

# options several commands share, defined once
ParametrizationOption = Annotated[Parametrization | None,
                                  typer.Option(help="mup (μP) or sp (standard parametrization)")]
Storage = Annotated[str | None, typer.Option(help="Optuna storage URL [default: the spec's, or sqlite in the "
                                                     "study folder]")]
StoragePasswordEnv = Annotated[str | None, typer.Option(help="environment variable holding the storage password")]


def with_backend_flags(entry: str) -> Callable[[Callable], Callable]:
    """Give a command the options of its entry point (`workers` or `run`), derived from the backends' settings models
    (sweep/cluster/settings.py); they reach it as one `backend_flags` dict (None: not given)."""
    flags = options(entry)

    def decorate(command: Callable) -> Callable:
        signature = inspect.signature(command, eval_str=True)
        added = [inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, annotation=kind,
                                   default=typer.Option(None, *names, help=text))
                 for name, (kind, text, names) in flags.items()]

        @functools.wraps(command)
        def wrapper(**kwargs):
            given = {name: kwargs.pop(name) for name in flags}
            return command(**kwargs, backend_flags=given)

        wrapper.__signature__ = signature.replace(parameters=[p for p in signature.parameters.values()
                                                              if p.name != "backend_flags"] + added)
        return wrapper

    return decorate


ROLE_SETTINGS_HELP = ("per-role setting PATH=VALUE (repeatable): optimizer.roles.ROLE.lr_mult, .weight_decay_mult, "
                      ".lr_width_exp (the role's LR × (width / base width)^e, e in [-1, 1]), model.init.ROLE")

app = typer.Typer(add_completion=False, no_args_is_help=True, rich_markup_mode=None,
                  help="Tune hyperparameters on small μP proxies and carry them to full-size runs.")
console = Console(width=None if sys.stdout.isatty() else 160)


@app.command("coord-check", short_help="Check μP: activation sizes and updates flat across widths")
def coord_check_cmd(
    model: str = typer.Option("gpt", help="zoo model (gpt, mlp, resnet) or package.module:function"),
    widths: str | None = typer.Option(None, help="comma-separated widths [default: 1×, 2×, 4× the base width]"),
    steps: int = typer.Option(DEFAULT_STEPS, min=2,
                              help="steps recorded (t = 0 … steps-1), training on one batch per seed"),
    seeds: int = typer.Option(3, min=1, help="seeds averaged per width"),
    parametrization: ParametrizationOption = Parametrization.mup,
    optimizer: Optimizer = typer.Option(Optimizer.adamw, help="its μP table (proxies.optimizers); Muon with "
                                        "adjust_lr_fn match_rms_adamw"),
    lr: float | None = typer.Option(None, min=0.0, help="learning rate [default: the optimizer's, calibrated: "
                                    "docs/guide/coord-check.md]"),
    depth: int = typer.Option(2, min=1),
    batch_size: int | None = typer.Option(None, min=1, help=f"[default: {DEFAULT_BATCH['gpt']} sequences for gpt, "
                                                           f"else {OTHER_BATCH}]"),
    seq_len: int = typer.Option(32, min=1),
    data: str | None = typer.Option(None, help="data kind [default: synthetic for mlp/resnet, else stdlib]"),
    data_path: str | None = typer.Option(None, help="file or folder for text/tokens data"),
    opt: list[str] | None = typer.Option(None, help="model option KEY=VALUE (repeatable; gpt: n_head= or head_dim= "
                                            "picks one attention regime, else both run)"),
    out: Path | None = typer.Option(None, help="output folder [default: ROOT/coord-check/MODEL-PARAMETRIZATION, "
                                       "ROOT = $SWEEP_ROOT or ./studies]"),
    set_: list[str] | None = typer.Option(None, "--set", help=ROLE_SETTINGS_HELP),
):
    """Check that activations and their updates stay flat as width grows: table, PNG, Parquet; exit 1 if not μP."""
    from sweep.coord_check.command import run_coord_check

    passed = run_coord_check(model=model, widths=widths, steps=steps, seeds=seeds,
                             parametrization=parametrization.value, optimizer=optimizer.value, lr=lr, depth=depth,
                             batch_size=batch_size, seq_len=seq_len, data=data, data_path=data_path, opt=opt, out=out,
                             console=console, settings=set_)
    raise typer.Exit(0 if passed else 1)


@app.command("inspect", short_help="Print the μP table of a model, per parameter")
def inspect_cmd(
    model: str = typer.Argument(..., help="zoo model (gpt, mlp, resnet) or package.module:function"),
    width: int = typer.Option(..., min=1),
    depth: int = typer.Option(2, min=1),
    parametrization: ParametrizationOption = Parametrization.mup,
    opt: list[str] | None = typer.Option(None, help="model option KEY=VALUE (repeatable)"),
    optimizer: Optimizer = typer.Option(Optimizer.adamw, help="whose μP table (LR multipliers, Muon's owners)"),
    set_: list[str] | None = typer.Option(None, "--set", help=ROLE_SETTINGS_HELP),
):
    """Print each parameter's shape, infinite dims, role, owner, init std, LR and forward multipliers, weight decay."""
    from sweep.inspect.command import inspect_table

    console.print(inspect_table(model, width, depth, parametrization.value, opt, optimizer.value, set_))


class RecipeFormat(str, Enum):
    torch = "torch"
    torchtitan = "torchtitan"
    megatron = "megatron"
    hf = "hf"
    nanogpt = "nanogpt"


@app.command("recipe", short_help="Write a RunConfig's μP recipe for torchtitan, Megatron, HF, nanoGPT or torch")
def recipe_cmd(
    config: Path = typer.Argument(..., help="RunConfig YAML (e.g. what `sweep transfer` wrote)"),
    to: RecipeFormat = typer.Option(..., "--to", help="torch (JSON for trainer.recipe), torchtitan, megatron, hf, "
                                    "nanogpt"),
    out: Path | None = typer.Option(None, help="file to write (default: stdout)"),
):
    """Per parameter pattern: role, optimizer, LR, weight decay, init; the model's multipliers; provenance."""
    from sweep.recipe.command import run_recipe

    text = run_recipe(config, to.value, out)
    if out is None:
        sys.stdout.write(text)


@app.command("train", short_help="Train one RunConfig (resumable); write curves")
def train_cmd(
    config: Path = typer.Argument(..., help="RunConfig YAML"),
    steps: int | None = typer.Option(None, min=1, help="override the config's step budget"),
    resume: bool = typer.Option(False, "--resume", help="continue from the run's latest checkpoint, if any"),
    quiet: bool = typer.Option(False, "--quiet", help="no progress bar (workers are always quiet)"),
):
    """Train one RunConfig in this process (torchrun for several): curves, checkpoints, result."""
    from sweep.runs.train import run_train

    result = run_train(config, steps, resume, quiet, console)
    raise typer.Exit(0 if result.status == "completed" else 1)


@app.command("proxy", short_help="Sweep LR/WD/warmup/betas on a small-width proxy with Optuna (resumable)")
@with_backend_flags(WORKERS)
def proxy_cmd(
    spec: Path = typer.Argument(..., help="study spec YAML"),
    width: int | None = typer.Option(None, help="proxy width [default: the spec's run.model.width]"),
    trials: int | None = typer.Option(None, help="trials to reach [default: the spec's trials]"),
    workers: int = typer.Option(SweepRequest.workers,
                                help="worker processes (local), array tasks (slurm), trials at once (ray)"),
    storage: Storage = None,
    storage_password_env: StoragePasswordEnv = None,
    enqueue: list[str] | None = typer.Option(None, help="a trial to run first, NAME=VALUE,… (repeatable)"),
    timeout: float | None = typer.Option(None, help="minutes after which no new trial starts"),
    backend: Backend = typer.Option(Backend(SweepRequest.backend), help="where trials run"),
    parametrization: ParametrizationOption = None,
    warm_start: int | None = typer.Option(None, min=1, help="enqueue the best trials of this (narrower) width's study "
                                          "first"),
    warm_start_top: int | None = typer.Option(None, min=1, help="how many of its best trials --warm-start enqueues "
                                              f"[default: {WARM_START_TOP}] (with --trials the same: a "
                                              "successive-halving rung across widths)"),
    detach: bool = typer.Option(SweepRequest.detach, "--detach",
                                help="slurm: submit and return; the same command re-attaches"),
    backend_flags: dict = None,
):
    """Create or resume the spec's study at one width and run its trials (the spec's parametrization unless
    --parametrization); the same command resumes it."""
    from sweep.proxy.command import run_proxy

    request = SweepRequest(spec, width=width, trials=trials, workers=workers, storage=storage,
                           password_env=storage_password_env, enqueue=tuple(enqueue or ()), timeout=timeout,
                           backend=backend.value, parametrization=parametrization and parametrization.value,
                           warm_start=warm_start, warm_start_top=warm_start_top, backend_flags=backend_flags,
                           detach=detach)
    raise typer.Exit(run_proxy(request, console))


@app.command("results", short_help="Rank a sweep's trials; write its plots")
def results_cmd(
    study: str = typer.Argument(..., help="study spec YAML, or the sweep's name"),
    width: int | None = typer.Option(None, help="only the study at this width"),
    top: int = typer.Option(10, help="trials shown, and curves plotted"),
    format: ResultsFormat = typer.Option(ResultsFormat.table, "--format"),
    storage: Storage = None,
    storage_password_env: StoragePasswordEnv = None,
    plots: bool = typer.Option(True, "--plots/--no-plots", help="write PNG and HTML plots under ROOT/NAME/plots/"),
):
    """Rank, value, params, state, steps and duration per trial; history, importance, parallel, slice and curve
    plots."""
    from sweep.results.command import run_results

    run_results(study, width=width, top=top, fmt=format.value, storage=storage, password_env=storage_password_env,
                plots=plots, console=console)


@app.command("sql", short_help="One read-only SQL query over trials, runs and curves (DuckDB)")
def sql_cmd(
    statement: str = typer.Argument(..., help="one SELECT over the views trials, runs and curves"),
    study: str | None = typer.Option(None, help="one sweep (spec YAML or name) [default: every sweep under the root]"),
    storage: Storage = None,
    storage_password_env: StoragePasswordEnv = None,
    format: SqlFormat = typer.Option(SqlFormat.table, "--format"),
    out: Path | None = typer.Option(None, help="file to write (csv, parquet) [default: csv to stdout]"),
):
    """Run one SELECT (DuckDB) over `trials` (a row per Optuna trial), `runs` (a row per run folder, with
    provenance) and `curves` (the Parquet curve store); anything but a SELECT is refused."""
    from sweep.results.sql import run_sql

    run_sql(statement, study=study, storage=storage, password_env=storage_password_env, fmt=format.value, out=out,
            console=console)


@app.command("export", short_help="Write a sweep's trials, runs and curves as CSV or Parquet")
def export_cmd(
    study: str = typer.Argument(..., help="study spec YAML, or the sweep's name"),
    format: ExportFormat = typer.Option(ExportFormat.parquet, "--format"),
    out: Path | None = typer.Option(None, help="folder [default: ROOT/NAME/export]"),
    storage: Storage = None,
    storage_password_env: StoragePasswordEnv = None,
):
    """trials, runs and curves of one sweep as files (each atomically), for pandas, spreadsheets or DuckDB."""
    from sweep.results.export import run_export

    run_export(study, fmt=format.value, out=out, storage=storage, password_env=storage_password_env, console=console)


@app.command("compare", short_help="Runs side by side: final and best loss, curves on one plot")
def compare_cmd(
    refs: list[str] = typer.Argument(..., help="run ids (folder names under runs/) or STUDY#N (a trial's runs)"),
    x: XAxis = typer.Option(XAxis.step, "--x", help="x axis (fraction: step / total steps)"),
    metric: Metric = typer.Option(Metric.val_loss),
    study: str | None = typer.Option(None, help="look in this sweep only [default: every sweep under the root]"),
    out: Path | None = typer.Option(None, help="PNG to write [default: ROOT/compare.png]"),
):
    """A table (run, kind, width, batch, steps, final and best metric, the trial it came from) and one plot;
    proxies dashed, full runs solid."""
    from sweep.results.compare import run_compare

    run_compare(refs, x=x.value, metric=metric.value, study=study, out=out, console=console)


@app.command("verify", short_help="Measure how the optimum moves with width, batch, tokens or depth: drift, law, "
                                  "Figure 1")
@with_backend_flags(WORKERS)
def verify_cmd(
    spec: Path = typer.Argument(..., help="study spec YAML"),
    widths: str | None = typer.Option(None, help=f"comma-separated widths (the default axis) [default: {WIDTHS}]"),
    across: str | None = typer.Option(None, help="AXIS=v1,v2,…: width, batch_size (tokens held), tokens or steps "
                                      "(batch held), depth, or a RunConfig path [default: width=--widths]"),
    param: str = typer.Option(VerifyRequest.param,
                              help="the setting on the grid (a RunConfig path with positive values)"),
    values: str | None = typer.Option(None, "--values", "--lrs", help="the grid, comma-separated (2^-8 allowed)"),
    span: str | None = typer.Option(None, "--range", "--lr-range", help="LO,HI,N: N values log2-spaced from LO to HI "
                                       "[default: the base value × 2^-3 … 2^3]"),
    parametrizations: str | None = typer.Option(None, help="mup, sp or mup,sp [default: mup,sp across width, "
                                                "else mup]"),
    seeds: int = typer.Option(VerifyRequest.seeds,
                              help="training seeds per grid point (the optimum's spread is measured over them)"),
    trials_from: TrialsFrom = typer.Option(TrialsFrom(VerifyRequest.trials_from),
                                           help="other settings from the sweep's best trial, or the "
                                           "spec's defaults"),
    proxy_width: int | None = typer.Option(None, help="the sweep's width whose best trial is used "
                                                      "[default: its only one]"),
    ladder_width: int | None = typer.Option(None, help="the width a ladder across another axis runs at, its own "
                                            "folder …-across-AXIS-wWIDTH [default: the proxy's]; a steps ladder at a "
                                            "second width lets `sweep transfer` fit the loss's width × tokens term"),
    ladder_batch: int | None = typer.Option(None, help="the batch a ladder across tokens or steps runs at, its own "
                                            "folder …-across-AXIS-bBATCH [default: the proxy's]; at the target's "
                                            "batch, `sweep transfer` applies the horizon law where it was measured"),
    max_drift: float = typer.Option(VerifyRequest.max_drift,
                                    help="μP fails when its optimum moves more than this (octaves) across widths"),
    refine: int = typer.Option(VerifyRequest.refine, help="extra grid points per axis value, run until each optimum is "
                               "bracketed (the loss rises past the noise on both sides, ½-octave spacing there); "
                               "0: no more points (those an earlier run added are kept)"),
    prior: str = typer.Option(VerifyRequest.prior, help="each law's prior: published (its slope from the literature, "
                              "updated by the measurement) or none (the measurement alone)"),
    backend: Backend = typer.Option(Backend(VerifyRequest.backend), help="where the runs go"),
    workers: int = typer.Option(VerifyRequest.workers,
                                help="worker processes (local), array tasks (slurm), trials at once (ray)"),
    storage: Storage = None,
    storage_password_env: StoragePasswordEnv = None,
    plan: Path | None = typer.Option(None, help="run the ladders of a `sweep plan` file, rung by rung, each until "
                                                "its interval at the target reaches the plan's goal"),
    backend_flags: dict = None,
):
    """A grid of the setting × an axis per parametrization (resumable studies): each value's optimum as a fitted
    vertex with its seed spread and residual, the drift, the law (slope with its interval, one valley fit), LR
    sensitivity; Figure-1 PNG, Parquet, summary.json; exit 1 if μP drifts with width."""
    from sweep.verify.command import run_verify

    if plan is not None:  # the flags the plan sets: given beside it, they would be ignored
        from sweep.verify.planned import refuse_typed, run_planned

        refuse_typed({flag: value for flag, name, value in (
            ("--widths", "widths", widths), ("--across", "across", across), ("--param", "param", param),
            ("--values", "values", values), ("--range", "span", span),
            ("--parametrizations", "parametrizations", parametrizations), ("--seeds", "seeds", seeds))
            if name in TYPED.get()})
    request = VerifyRequest(spec, widths=widths, across=across, param=param,
                            values=values, span=span, parametrizations=parametrizations,
                            seeds=seeds, trials_from=trials_from.value,
                            proxy_width=proxy_width, ladder_width=ladder_width, ladder_batch=ladder_batch,
                            max_drift=max_drift, refine=refine, prior=prior, backend=backend.value, workers=workers,
                            storage=storage, password_env=storage_password_env, backend_flags=backend_flags)
    if plan is not None:
        raise typer.Exit(run_planned(plan, request, console))
    raise typer.Exit(run_verify(request, console))


@app.command("plan", short_help="From a compute budget to the proxy ladder: rungs, seeds, grids and the intervals "
                              "they buy")
def plan_cmd(
    spec: Path = typer.Argument(..., help="study spec YAML of the proxy sweep"),
    tokens: float = typer.Option(..., help="the full run's token budget, e.g. 26e9"),
    width: int | None = typer.Option(None, help="the full run's width (or --params)"),
    depth: int | None = typer.Option(None, help="the full run's depth [default: the spec's]"),
    params: float | None = typer.Option(None, help="the full run's parameter count (or --width), e.g. 1.3e9"),
    batch_size: int | None = typer.Option(None, help="the full run's batch, in examples [default: the spec's]"),
    share: float | None = typer.Option(None, help="the tuning budget as a share of the full run's FLOPs "
                                                  f"[default: {SHARE:g}]"),
    flops: float | None = typer.Option(None, help="the tuning budget in FLOPs (or --share)"),
    goal: float = typer.Option(PlanRequest.goal, help="the LR's 95 % half-width wanted at the target, octaves"),
    proxy_width: int | None = typer.Option(None, help="the proxy width [default: chosen]"),
    out: Path | None = typer.Option(None, help="the plan file, inside the results root [default: ROOT/NAME/plan.yaml]"),
):
    """Chooses the proxy width, rungs along width, batch, tokens and depth, seeds and grids so that each law's
    interval at the target is as narrow as the budget allows; prints the plan and writes plan.yaml for
    `sweep verify --plan`. Exit 1 (one line) when the budget cannot buy the goal; exit 2 (one line, nothing
    written) when it cannot buy even the smallest useful ladder."""
    from sweep.plan.command import run_plan

    request = PlanRequest(spec, tokens, width=width, depth=depth, params=params, batch_size=batch_size, share=share,
                          flops=flops, goal=goal, proxy_width=proxy_width, out=out)
    raise typer.Exit(run_plan(request, console))


@app.command("transfer", short_help="Write the full-size RunConfig from a proxy trial, with rules and provenance")
def transfer_cmd(
    spec: Path = typer.Argument(..., help="study spec YAML of the proxy sweep"),
    width: int = typer.Option(..., help="the full run's width"),
    depth: int | None = typer.Option(None, help="the full run's depth (needs the proxy's depth rule) [default: kept]"),
    batch_size: int | None = typer.Option(None, help="the full run's batch, in examples [default: kept]"),
    tokens: float | None = typer.Option(None, help="the full run's token budget, e.g. 26e9 [default: the proxy's]"),
    steps: int | None = typer.Option(None, help="the full run's steps (instead of --tokens)"),
    batch_rule: str = typer.Option(Target.batch_rule, help="how the LR follows the batch: none, linear, sqrt, noise, "
                                   "or fitted (the law `sweep verify --across batch_size=…` measured)"),
    horizon_rule: str = typer.Option(Target.horizon, help="how the LR follows the token budget: none (kept) or "
                                     "fitted (the law `sweep verify --across tokens=…` measured)"),
    depth_rule: str = typer.Option(Target.depth_rule, help="depth: the model's own rule (depth_alpha) or fitted "
                                   "(the law `sweep verify --across depth=…` measured)"),
    role_rule: str = typer.Option(Target.role_rule, help="per-role multipliers: kept as tuned (μP's width-free "
                                  "reading), or fitted (each by the width law `sweep verify --param PATH` measured)"),
    extrapolate: bool = typer.Option(Target.extrapolate,
                                     help="apply a fitted law past 2× its measured range (flagged)"),
    prior: str = typer.Option(Target.prior, help="fitted laws: the posterior over each law's published prior, or none "
                              "(the measured slope alone)"),
    warmup_rule: str = typer.Option(Target.warmup, help="warmup kept as a fraction of the run or as tokens: "
                                                     "fraction|tokens"),
    beta2_rule: str = typer.Option(Target.beta2, help="β2 kept at its half-life in tokens, or left: halflife|none"),
    wd_rule: str = typer.Option(Target.weight_decay, help="weight decay at a constant AdamW timescale in tokens, as a "
                                "fraction of the run, or left: tokens|fraction|none"),
    trial: str = typer.Option("best", help="the proxy trial: best or its number"),
    proxy_width: int | None = typer.Option(None, help="the sweep's width to take the trial from "
                                                      "[default: its only one]"),
    storage: Storage = None,
    storage_password_env: StoragePasswordEnv = None,
    out: Path | None = typer.Option(None, help="where to write it [default: ROOT/NAME/transfer/wW-dD-bB.yaml]"),
    device_memory: float | None = typer.Option(None, min=0.001, max=2 ** 20,  # 1e308 GiB overflowed to bytes
                                               help="GiB of one device of the full run: above half of it, the "
                                                    "training state is sharded (FSDP2) [default: this GPU]"),
):
    """Apply width, depth, batch and horizon rules to the proxy trial's RunConfig; print what changed and why."""
    from sweep.transfer.command import run_transfer

    tokens = whole_number(tokens, "--tokens")  # 26e9 as `sweep plan` takes it
    target = Target(width=width, depth=depth, batch_size=batch_size, steps=steps, tokens=tokens, batch_rule=batch_rule,
                    warmup=warmup_rule, beta2=beta2_rule, weight_decay=wd_rule, horizon=horizon_rule,
                    depth_rule=depth_rule, role_rule=role_rule, extrapolate=extrapolate, prior=prior)
    run_transfer(spec, target, trial=trial, proxy_width=proxy_width, storage=storage,
                 password_env=storage_password_env, out=out, console=console, device_memory_gb=device_memory)


@app.command("launch",
             short_help="Start a full run locally, on SLURM or on Ray; the same command resumes or re-attaches")
@with_backend_flags(RUN)
def launch_cmd(
    config: Path = typer.Argument(..., help="RunConfig YAML (e.g. what `sweep transfer` wrote)"),
    backend: Backend = typer.Option(Backend(LaunchRequest.backend), help="where it trains"),
    detach: bool = typer.Option(LaunchRequest.detach, "--detach",
                                help="slurm: submit and return; the same command re-attaches"),
    backend_flags: dict = None,
):
    """Train RUN.yaml with resume on the backend; print its job, log, checkpoints and curve; exit 0 when done."""
    from sweep.launch.command import run_launch

    request = LaunchRequest(backend=backend.value, flags=backend_flags, detach=detach)
    raise typer.Exit(run_launch(config, request, console))


@app.command("status", short_help="List launched runs: state, last step and loss, backend and job")
def status_cmd(
    study: str | None = typer.Argument(None, help="a sweep's spec or name [default: every launched run]"),
    format: StatusFormat = typer.Option(StatusFormat.table, "--format"),
):
    """Every run folder with a launch record under the results root (or one sweep's): queued, running, requeued,
    done, failed or diverged, from the scheduler and the run's files."""
    from sweep.status.command import run_status

    run_status(study, format.value, console)


@app.command("doctor", short_help="Pre-flight checklist of a RunConfig or a study: one verdict table")
def doctor_cmd(
    config: Path = typer.Argument(..., help="RunConfig YAML, or a study spec (its base run at --width)"),
    width: int | None = typer.Option(None, min=1, help="target width for the size, step-time and memory rows; "
                                        "for a study, the proxy width [default: the config's]"),
    lr_max: float | None = typer.Option(None, min=0.0, help="top of the LR range for the gradient-norm row "
                                           "[default: a study's searched maximum, else the config's lr]"),
    out: Path | None = typer.Option(None, help="Parquet of the table [default: RUN_DIR/doctor.parquet; "
                                       "for a study ROOT/NAME/doctor-wW-PARAM.parquet]"),
):
    """Init loss, overfit one batch, gradient norms, dead or unoptimized parameters, shifted labels, disjoint
    splits, id range, coordinate check, size and cost; exit 1 on any failed row."""
    from sweep.doctor.command import run_doctor_cmd

    raise typer.Exit(0 if run_doctor_cmd(config, width, lr_max, out, console) else 1)


@app.command("report", short_help="One self-contained HTML report of a sweep, coordinate check to full run")
def report_cmd(
    study: str = typer.Argument(..., help="study spec YAML, or the sweep's name"),
    storage: Storage = None,
    storage_password_env: StoragePasswordEnv = None,
    out: Path | None = typer.Option(None, help="the HTML file [default: ROOT/NAME/report.html]"),
):
    """Coordinate check, sweep history, importance, parallel coordinates, Figure 1 with its drift, the
    transferred configs with provenance, full runs beside their proxies: images embedded, opens offline."""
    from sweep.results.report import run_report

    run_report(study, storage=storage, password_env=storage_password_env, out=out, console=console)


@app.command("init", short_help="Copy an example spec out to edit: studies/NAME.yaml; without NAME, list them")
def init_cmd(
    name: str | None = typer.Argument(None, help="example name (run `sweep init` to list them)"),
    out: Path | None = typer.Option(None, help="file, or folder for NAME.yaml [default: studies/NAME.yaml]"),
):
    """Write a packaged example (study spec or RunConfig) where you can edit it; never overwrites a file."""
    from sweep.init.command import run_init

    run_init(name, out, console)


@app.command("demo", short_help="The whole path on the built-in corpus: "
                                "coord check → sweep → verify → transfer → run → report")
def demo_cmd(workers: int = typer.Option(2, help="local worker processes for the sweep and verify")):
    """Coordinate check, a proxy sweep at width 32, verify over widths 32–128, transfer to width 256, a local run of
    the transferred config, the HTML report; about four minutes on 2 CPU cores. Run it again: it resumes."""
    from sweep.demo import run_demo

    raise typer.Exit(run_demo(workers, console))


for registered in app.registered_commands:  # every command, so a flag added later is covered too
    registered.callback = checked_flags(registered.callback, registered.name)
    registered.cls = OnceEach


REFUSED_CHOICE = re.compile(r"(?:Value error, )?('.*' is not one of )(.*?)\.?")


def usage_line(err: UsageError) -> str:
    """click's message on one line after the command's path; a refused choice reads as the commands' own bad
    flags do (InputError): `--format: 'xml' is not one of table, json`. A value that may hold a password is
    never echoed."""
    refused = REFUSED_CHOICE.fullmatch(err.message) if isinstance(err, BadParameter) and err.param else None
    if refused:
        return errors.mask_secrets(f"{err.param.opts[0]}: {refused[1]}{refused[2].replace(chr(39), '')}")
    where = f"{err.ctx.command_path}: " if err.ctx else ""
    return f"{where}{errors.mask_secrets(err.format_message())}"  # click echoes what it refuses


def main() -> None:
    """Entry point: bad input is one line on stderr and exit code 2; a full or read-only disk or an
    unreachable storage met on the way is one line and exit code 1; Ctrl-C is one line and exit code 130,
    whatever the command was doing (sweep/errors.py); SIGTERM or SIGUSR2 during training is one line
    and 128 + the signal's number, after a checkpoint at that step; SIGTERM while following workers is one line
    and 143, after they released their trials."""
    errors.watch()
    try:
        code = app(standalone_mode=False)
    except (typer.Abort, KeyboardInterrupt):
        code = 130
    except Preempted as err:  # the run checkpointed at the signal; the same command resumes it
        exit_with(f"preempted: {err}", 128 + err.signum)
    except Exception as err:
        if not errors.INTERRUPTED.is_set():
            fail(err)
        code = 130
    if errors.TERMINATED.is_set():
        exit_with(errors.TERMINATED_LINE, 143)
    if code == 130 or errors.INTERRUPTED.is_set():
        exit_with(errors.INTERRUPTED_LINE, 130)
    sys.exit(code or 0)


def fail(err: Exception) -> NoReturn:
    """One line on stderr: exit 2 for bad input, 1 for a disk or storage fault; anything else is raised."""
    if isinstance(err, UsageError):
        exit_with(f"error: {usage_line(err)}", 2)
    if is_bad_input(err):
        exit_with(f"error: {err}", 2)
    fault = as_fault(err)
    if fault is None:
        raise err
    exit_with(f"error: {fault}", 1)


def exit_with(line: str, code: int) -> NoReturn:
    """The command's last line, on stderr: printable, and with every word that may hold a password masked (a value
    a message quotes back, e.g. a URL given as data.path, is what the user typed)."""
    print(errors.mask_secrets(errors.printable(line)), file=sys.stderr)
    sys.exit(code)
