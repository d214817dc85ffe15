"""`sweep coord-check`: build the model and data from flags, run the check, print, plot and save."""
from __future__ import annotations

import re
import time
from pathlib import Path

import pandas as pd
import torch
from rich.console import Console
from rich.table import Table

from proxies.registry import build_model
from sweep.coord_check import SLOPE_THRESHOLD, coord_check
from sweep.errors import InputError
from sweep.models import open_model_data, parse_options, parse_widths
from sweep.plots import coord_check_grid
from trainer.atomic import atomic_path

DEFAULT_LR = {"adamw": 2 ** -6, "sgd": 0.1}


def run_coord_check(*, model: str, widths: str, steps: int, seeds: int, parametrization: str, optimizer: str,
                    lr: float | None, depth: int, batch_size: int, seq_len: int, data: str | None,
                    data_path: str | None, opt: list[str] | None, out: Path | None, console: Console) -> bool:
    """Returns whether the model passed. Bad input raises before anything is written."""
    if parametrization not in ("mup", "sp"):
        raise InputError(f"--parametrization: {parametrization!r} is not one of mup, sp")
    if optimizer not in DEFAULT_LR:
        raise InputError(f"--optimizer: {optimizer!r} is not one of {', '.join(DEFAULT_LR)}")
    lr = DEFAULT_LR[optimizer] if lr is None else lr
    width_list = parse_widths(widths)
    source = open_model_data(model, data, data_path, seq_len)
    options = {**source.model_options(), **parse_options(opt)}

    def make_model(width: int) -> torch.nn.Module:
        return build_model(model, width, depth, parametrization, **options)

    def make_batches(seed: int) -> list:
        g = torch.Generator().manual_seed(seed)
        return [source.batch("train", batch_size, g) for _ in range(steps)]

    make_model(width_list[0])  # bad model options fail here, before any work or any file
    out = out or Path("studies") / "coord-check" / f"{re.sub(r'[^A-Za-z0-9_.-]+', '_', model)}-{parametrization}"

    start = time.perf_counter()
    with console.status(f"coord-check {model} ({parametrization}, {optimizer}, lr {lr:g}) at widths {width_list}"):
        sizes, slopes, verdict = coord_check(make_model, make_batches, width_list, seeds, optimizer=optimizer, lr=lr)
    elapsed = time.perf_counter() - start

    meta = {"model": model, "parametrization": parametrization, "optimizer": optimizer, "lr": lr, "depth": depth}
    for name, frame in (("sizes", sizes), ("slopes", slopes), ("verdict", verdict.table)):
        with atomic_path(out / f"{name}.parquet") as tmp:
            frame.assign(**meta).to_parquet(tmp, index=False)
    title = f"{model} {parametrization} · {optimizer} lr={lr:g} · depth {depth} · {seeds} seed(s)"
    coord_check_grid(sizes, verdict.table, out / "coord_check.png", title)

    console.print(verdict_table(verdict.table, title))
    outcome = "[green]PASS[/green]: behaves as μP predicts" if verdict.passed else "[red]FAIL[/red]: not in μP"
    console.print(f"{outcome} (slope threshold +{SLOPE_THRESHOLD}); {elapsed:.1f} s; wrote {out}/")
    return verdict.passed


def verdict_table(table: pd.DataFrame, title: str) -> Table:
    rich_table = Table(title=title)
    for column in ("module", "max slope", "at step", "min slope", "verdict"):
        rich_table.add_column(column, justify="left" if column == "module" else "right")
    for row in table.itertuples():
        mark = "[green]pass[/green]" if row.passed else "[red]FAIL[/red]"
        rich_table.add_row(row.module, f"{row.max_slope:+.2f}", str(row.step), f"{row.min_slope:+.2f}", mark)
    return rich_table
