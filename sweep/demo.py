"""`sweep demo`: the whole path on the built-in corpus, on a laptop CPU in about ten minutes.

coordinate check → a proxy sweep (the packaged example `demo`, width 32) → verify over widths 32, 64, 128
(μP beside SP) → transfer to width 256 at twice the batch (square-root rule) → `sweep launch` of that
config on the local backend → the HTML report. Every step is the command of its own name, run in this process; each
resumes, so a second `sweep demo` only re-reads what the first one wrote.
"""
from __future__ import annotations

from importlib.resources import as_file
from pathlib import Path

import pandas as pd
from rich.console import Console
from rich.rule import Rule

from sweep import examples
from sweep.coordcheck.command import run_coord_check
from sweep.launch.command import run_launch
from sweep.launch.record import read_result
from sweep.launch.request import LaunchRequest
from sweep.paths import results_root
from sweep.results.report import run_report
from sweep.rules import Target
from sweep.rules.command import run_transfer
from sweep.study.spec import load_spec
from sweep.sweeps.command import run_proxy
from sweep.sweeps.request import SweepRequest
from sweep.verify.command import run_verify
from sweep.verify.request import VerifyRequest
from sweep.verify.summary import read_summary
from trainer.config import RunConfig

PROXY_WIDTH = 32
VERIFY_WIDTHS = "32,64,128"
TARGET = Target(width=256, batch_size=32, batch_rule="sqrt")


def run_demo(workers: int, console: Console) -> int:
    with as_file(examples.example("demo")) as spec:  # a real file even if the package is zipped
        return _run_demo(spec, workers, console)


def _run_demo(spec: Path, workers: int, console: Console) -> int:
    root = results_root()
    name = load_spec(spec).name
    steps = ["coordinate check", "proxy sweep", "verify", "transfer", "full run", "report"]

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
    verify_code = run_verify(VerifyRequest(spec, widths=VERIFY_WIDTHS, seeds=1, workers=workers), console)
    if verify_code not in (0, 1):
        return verify_code
    header(3)
    config = run_transfer(spec, TARGET, trial="best", proxy_width=None, storage=None, password_env=None, out=None,
                          console=console)
    header(4)
    launched = run_launch(config, LaunchRequest(backend="local"), console)
    result = read_result(RunConfig.load(config).run_dir()) or {"status": "unfinished", "step": 0, "val_loss": None}
    header(5)
    report = run_report(str(spec), storage=None, password_env=None, out=None, console=console)

    console.print(Rule("demo: what it found"))
    drift = read_summary(root, name)["parametrizations"]
    console.print(f"coordinate check: {'PASS' if coord_passed else 'FAIL'} (the zoo's gpt behaves as μP predicts)")
    for p, v in drift.items():
        verdict = "" if v["passed"] is None else " — pass" if v["passed"] else " — FAIL"
        console.print(f"verify {p}: the optimal LR moved {v['drift']:.2f} octaves over widths {VERIFY_WIDTHS}{verdict}")
    console.print(f"transferred to width {TARGET.width}, batch {TARGET.batch_size} ({TARGET.batch_rule} rule): "
                  f"{config}")
    val = f"{result['val_loss']:.4f}" if result["val_loss"] is not None else "-"
    console.print(f"full run: {result['status']} at step {result['step']}, val loss {val} (`sweep status` lists it)")
    console.print(f"report: {report}")
    return 0 if coord_passed and verify_code == 0 and launched == 0 else 1
