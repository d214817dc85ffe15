"""`sweep demo`: the whole path on the built-in corpus, on 2 CPU cores (about four minutes before its ladders ran on
two seeds with refinement, which roughly double their runs).

coordinate check → a proxy sweep (the packaged example `demo`, width 32, S = 150 steps) → verify over widths 32,
64, 128 (μP beside SP) → a ladder at width 32: the LR's optimum across batch 16, 32 (tokens held) and across S/2,
S, 2S steps (batch held) on 2 seeds, every grid 5 LRs, the best trial's × 2^-2 … 2^2, refined until each optimum is
bracketed (4 extra points at most) → transfer to width 256 at twice the batch and twice the tokens with the laws as
posteriors over their published priors (printed prior → measured → posterior, and which one transfer used), and the
loss predicted from the ladder → `sweep launch` of that config on the local backend → the HTML report. It ends with
two checks of the full run, the issue's promise for it: does it end below every proxy's loss, and inside its
predicted interval? Either failing fails the demo (exit 1), as
a failed coordinate check or verify does. Every step is the command of its own name, run in this process; each
resumes, so a second `sweep demo` only re-reads what the first one wrote.

It runs no ladder at a second width (`--ladder-width`): the loss law's width × tokens term is used no farther
than one doubling past the widths it is measured at (sweep/rules/scaling.py), and the target is three doublings
past the proxy; a steps ladder at width 128 would reach it and cost the demo about three minutes more.
"""
from __future__ import annotations

from importlib.resources import as_file
from pathlib import Path

import pandas as pd
from rich.console import Console
from rich.rule import Rule

from sweep import examples
from sweep.coord_check.command import run_coord_check
from sweep.errors import InputError
from sweep.launch.command import run_launch
from sweep.launch.request import LaunchRequest
from sweep.paths import results_root
from sweep.plan.command import PlanRequest, make_plan
from sweep.plan.printout import show
from sweep.proxy.command import run_proxy
from sweep.proxy.request import SweepRequest
from sweep.results.report import run_report
from sweep.rules import Target
from sweep.rules.prior import chain_text, slope_chain
from sweep.rules.summary import interval_text, read_summary
from sweep.runs.record import read_result
from sweep.study.spec import load_spec
from sweep.study.trial import base_run
from sweep.transfer.command import run_transfer
from sweep.verify.command import run_verify
from sweep.verify.request import VerifyRequest
from trainer.config import RunConfig

PROXY_WIDTH = 32
VERIFY_WIDTHS = "32,64,128"
LADDER_SEEDS = 2  # the laws transfer uses: with one seed the fit cannot see the optimum's seed noise


def ladder(steps: int) -> tuple[str, ...]:
    """Each ladder's `--across`, for a proxy trained `steps` steps."""
    return "batch_size=16,32", f"steps={steps // 2},{steps},{2 * steps}"


def target(run: RunConfig) -> Target:
    """Width 256 at twice the proxy's batch and twice its tokens, with the fitted batch and horizon laws."""
    tokens = 2 * run.steps * run.batch_size * run.data.seq_len
    return Target(width=256, batch_size=2 * run.batch_size, tokens=tokens, batch_rule="fitted", horizon="fitted")


def run_demo(workers: int, console: Console) -> int:
    if workers < 1:  # checked before the first step writes: a refused flag ran the coordinate check first
        raise InputError(f"--workers: must be at least 1, got {workers}")
    with as_file(examples.example("demo")) as spec:  # a real file even if the package is zipped
        return _run_demo(spec, workers, console)


def _run_demo(spec: Path, workers: int, console: Console) -> int:
    root = results_root()
    study = load_spec(spec)
    name, proxy = study.name, RunConfig.parse(base_run(study, PROXY_WIDTH, "mup"))
    steps = ["coordinate check", "proxy sweep", "verify", "ladder", "transfer", "full run", "report"]

    def header(i: int) -> None:
        console.print(Rule(f"step {i + 1}/{len(steps)}: {steps[i]}"))

    header(0)
    coord = root / "coord-check" / "gpt-mup" / "verdict.parquet"
    if coord.is_file():
        console.print(f"done before: {coord.parent}/")
        coord_passed = bool(pd.read_parquet(coord)["passed"].all())
    else:
        coord_passed = run_coord_check(model="gpt", widths=None, steps=8, seeds=3, parametrization="mup",
                                       optimizer="adamw", lr=None, depth=2, batch_size=None, seq_len=32, data=None,
                                       data_path=None, opt=None, out=None, console=console)
    header(1)
    code = run_proxy(SweepRequest(spec, width=PROXY_WIDTH, workers=workers), console)
    if code:
        return code
    header(2)
    best = load_best(spec)
    span = f"{best / 4},{best * 4},5"  # every grid: the best LR × 2^-2 … 2^2
    verify_code = run_verify(VerifyRequest(spec, widths=VERIFY_WIDTHS, span=span, seeds=1,
                                           workers=workers), console)
    if verify_code not in (0, 1):
        return verify_code
    header(3)
    show_plan(spec, target(proxy), name, console)
    for across in ladder(proxy.steps):
        code = run_verify(VerifyRequest(spec, across=across, span=span, seeds=LADDER_SEEDS,
                                        workers=workers), console)
        if code:
            return code
    header(4)
    config = run_transfer(spec, target(proxy), trial="best", proxy_width=None, storage=None, password_env=None,
                          out=None, console=console)
    header(5)
    launched = run_launch(config, LaunchRequest(backend="local"), console)
    result = read_result(RunConfig.load(config).run_dir()) or {"status": "unfinished", "step": 0, "val_loss": None}
    header(6)
    report = run_report(str(spec), storage=None, password_env=None, out=None, console=console)
    held = conclude(root, name, coord_passed, RunConfig.load(config), result, console)
    console.print(f"report: {report}")
    return 0 if coord_passed and verify_code == 0 and launched == 0 and held else 1


def show_plan(spec: Path, goal: Target, name: str, console: Console) -> None:
    """What `sweep plan` would buy this target with 5 % of its FLOPs, printed before the demo's own smaller ladder."""
    plan = make_plan(PlanRequest(spec, goal.tokens, width=goal.width, batch_size=goal.batch_size), name)
    show(plan, console)
    console.print(plan["verdict"]["line"])
    console.print("the demo runs a smaller ladder (one seed, 5-point grids) to finish in minutes: its laws' intervals "
                  "are what `sweep verify` measures, wider than the plan's")


def load_best(spec: Path) -> float:
    """The LR of the proxy sweep's best trial."""
    from sweep.study.lookup import locate, pick_trial

    name, url = locate(str(spec), storage=None, password_env=None)
    _, best = pick_trial(name, url, width=PROXY_WIDTH, parametrization="mup")
    return float(best.user_attrs.get("values", best.params)["optimizer.lr"])


def conclude(root: Path, name: str, coord_passed: bool, full: RunConfig, result: dict, console: Console) -> bool:
    """Print what the demo found, last whether the full run ended below every proxy's loss and inside its
    prediction; returns whether it did both."""
    console.print(Rule("demo: what it found"))
    console.print(f"coordinate check: {'PASS' if coord_passed else 'FAIL'} (the zoo's gpt behaves as μP predicts)")
    for p, v in read_summary(root, name)["parametrizations"].items():
        verdict = "" if v["passed"] is None else " — pass" if v["passed"] else " — FAIL"
        console.print(f"verify {p}: the optimal LR moved {v['drift']:.2f} octaves over widths {VERIFY_WIDTHS}{verdict}")
    proxies = []
    for axis in ("width", "batch_size", "steps"):
        summary = read_summary(root, name, axis=axis)
        law = summary["laws"].get("mup")
        if law:
            console.print(f"law across {axis}: LR* ∝ {axis}^s, {chain_text(law)} {interval_text(law, 2)}")
        proxies += [row["loss"] for row in summary["optima"] if row["parametrization"] == "mup" and row["loss"]]
    for law in full.provenance.laws:
        console.print(f"fitted {law['param']} × ({law['axis']} ×{law['ratio']:g}): {law['before']:.4g} → "
                      f"{law['after']:.4g}; textbook " + ", ".join(f"{k} {v:.4g}" for k, v in law["textbook"].items()))
        console.print(f"  transfer's slope: {slope_chain(law)}")
    val, p = result["val_loss"], full.provenance.prediction
    below = val is not None and val < min(proxies)
    inside = val is not None and bool(p) and p["low"] <= val <= p["high"]
    if p:
        how = p.get("point") or p["form"]
        console.print(f"predicted val loss {p['loss']:.4f} [{p['low']:.4f}, {p['high']:.4f}] ({how})")
    shown = f"{val:.4f}" if val is not None else "-"
    console.print(f"full run (width {full.model.width}, batch {full.batch_size}): {result['status']} at step "
                  f"{result['step']}, val loss {shown} — below every proxy's ({min(proxies):.4f}): "
                  f"{'yes' if below else 'NO'}; inside the prediction: {'yes' if inside else 'NO'}")
    return below and inside
