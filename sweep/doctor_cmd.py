"""`sweep doctor`: run the checklist on a RunConfig, print the verdict table, write it as Parquet."""
from __future__ import annotations

from pathlib import Path

from rich.console import Console
from rich.table import Table

from sweep.doctor import run_doctor
from trainer.atomic import atomic_path
from trainer.config import RunConfig


def run_doctor_cmd(config: Path, width: int | None, lr_max: float | None, out: Path | None, console: Console) -> bool:
    cfg = RunConfig.load(config)
    with console.status(f"doctor: {cfg.run_id()}"):
        table, passed = run_doctor(cfg, lr_max=lr_max, width=width)
    out = out or cfg.run_dir() / "doctor.parquet"
    with atomic_path(out) as tmp:
        table.assign(run=cfg.run_id()).to_parquet(tmp, index=False)
    rich_table = Table(title=f"sweep doctor · {config}")
    for column in ("check", "measured", "expected", "verdict"):
        rich_table.add_column(column)
    for row in table.itertuples():
        rich_table.add_row(row.check, row.measured, row.expected, "[green]pass[/green]" if row.passed else "[red]FAIL[/red]")
    console.print(rich_table)
    failed = table.loc[~table["passed"], "check"].tolist()
    console.print(("[green]PASS[/green]" if passed else f"[red]FAIL[/red]: {'; '.join(failed)}") + f"; wrote {out}")
    return passed
