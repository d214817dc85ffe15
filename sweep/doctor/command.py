"""`sweep doctor`: run the checklist on a RunConfig or a study's proxy run, print the verdict table,
write it as Parquet."""
from __future__ import annotations

from pathlib import Path

import yaml
from rich.console import Console
from rich.table import Table

from sweep.doctor.checks import run_doctor
from sweep.errors import InputError
from sweep.paths import load_run_config, results_root
from sweep.study.preflight import check_points
from sweep.study.spec import load_spec
from sweep.study.trial import base_run
from trainer import yaml_io
from trainer.atomic import atomic_path
from trainer.config import RunConfig


def is_study(path: Path) -> bool:
    try:
        raw = yaml_io.load(yaml_io.read_file(path))
    except (OSError, yaml.YAMLError, UnicodeDecodeError):
        return False  # RunConfig.load names what is wrong with the file
    return isinstance(raw, dict) and "search" in raw


def study_target(path: Path, width: int | None, lr_max: float | None) -> tuple[RunConfig, float | None, int, Path]:
    """A study's base run at the proxy width (what `sweep proxy --width W` trains, before the searched
    values), the top of its searched LR range, and where its table goes (ROOT/NAME/doctor-wW-PARAM.parquet)."""
    spec = load_spec(path)
    model = spec.run.get("model", {})
    width = width if width is not None else model.get("width")
    if width is None:
        raise InputError("--width: required for a study (the proxy width, as for sweep proxy), or set run.model.width")
    parametrization = model.get("parametrization", "mup")
    lr = spec.space().params.get("optimizer.lr")
    if lr_max is None and lr is not None:
        lr_max = max(float(v) for v in lr.extremes())
    base = base_run(spec, width, parametrization)
    check_points(spec, base)  # what sweep proxy would refuse, refused here
    out = results_root() / spec.name / f"doctor-w{width}-{parametrization}.parquet"
    return RunConfig.parse(base), lr_max, width, out


def run_doctor_cmd(config: Path, width: int | None, lr_max: float | None, out: Path | None, console: Console) -> bool:
    if is_study(config):
        cfg, lr_max, width, default_out = study_target(config, width, lr_max)
    else:
        cfg = load_run_config(config)
        default_out = cfg.run_dir() / "doctor.parquet"
    with console.status(f"doctor: {cfg.run_id()}"):
        table, passed = run_doctor(cfg, lr_max=lr_max, width=width)
    out = out or default_out
    with atomic_path(out) as tmp:
        table.assign(run=cfg.run_id()).to_parquet(tmp, index=False)
    rich_table = Table(title=f"sweep doctor · {config}")
    for column in ("check", "measured", "expected", "verdict"):
        rich_table.add_column(column)
    for row in table.itertuples():
        rich_table.add_row(row.check, row.measured, row.expected,
                           "[green]pass[/green]" if row.passed else "[red]FAIL[/red]")
    console.print(rich_table)
    failed = table.loc[~table["passed"], "check"].tolist()
    console.print(("[green]PASS[/green]" if passed else f"[red]FAIL[/red]: {'; '.join(failed)}") + f"; wrote {out}")
    return passed
