"""`sweep compare`: runs side by side, as a table (final and best metric, where each came from) and one plot
of their curves with x aligned by step, tokens or fraction of the run; proxies dashed, full runs solid.

A reference is a run id (its folder name under ROOT/SWEEP/runs/) or STUDY#N, an Optuna study name and a
trial number: every run made from that trial (its seeds, and full runs transferred from it).
"""
from __future__ import annotations

import math
from pathlib import Path

import matplotlib.pyplot as plt
import pandas as pd
from rich.console import Console
from rich.table import Table

from sweep.errors import InputError
from sweep.paths import inside_root
from sweep.results.plots import save_png
from sweep.results.runs_table import run_rows
from sweep.results.scope import Scope, say_skipped, scope
from sweep.results.table import text
from sweep.runs.prediction import held_to, read_prediction
from trainer.curves import read_run


def run_compare(refs: list[str], *, x: str, metric: str, study: str | None, out: Path | None,
                console: Console) -> Path:
    where = scope(study, storage=None, password_env=None)
    say_skipped(where, "compare")
    runs = pick_runs(run_rows(where), refs, where)
    curves = {run.path: read_curve(run, metric) for run in runs.itertuples()}
    console.print(compare_table(runs, curves, metric))
    path = out if out is not None else where.root / "compare.png"
    save_png(compare_figure(runs, curves, x, metric), path)
    console.print(f"plot: {path}")
    return path


def pick_runs(runs: pd.DataFrame, refs: list[str], where: Scope) -> pd.DataFrame:
    """The rows of `runs` that the references name, in the order given, each once."""
    picked = []
    for ref in refs:
        study, sep, number = ref.rpartition("#")
        if sep:
            if not number.isdigit():
                raise InputError(f"compare: {ref!r}: a trial reference is STUDY#N with N a trial number")
            rows = runs[(runs["provenance_study"] == study) & (runs["provenance_trial"] == int(number))]
        else:
            rows = runs[runs["run"] == ref]
            if rows["sweep"].nunique() > 1:
                raise InputError(f"compare: run {ref!r} is in sweeps {', '.join(sorted(rows['sweep']))}; "
                                 "name one with --study")
        if rows.empty:
            raise InputError(f"compare: no run or trial {ref!r} under {where.root}"
                             + (f" in sweep {where.sweep!r}" if where.sweep else ""))
        picked.append(rows)
    return pd.concat(picked).drop_duplicates("path").reset_index(drop=True)


def read_curve(run, metric: str) -> pd.DataFrame:
    """The run's logged rows that have `metric`, by step (empty when it logged none)."""
    root = Path(run.path).parents[2]  # ROOT/SWEEP/runs/RUN
    folder = Path(run.path).parent.parent / "curves" / f"study={run.sweep}" / f"kind={run.kind}" / f"run={run.run}"
    for path in [folder, *folder.glob("*")]:
        inside_root(path, root, "curves")
    curve = read_run(folder, columns=["step", "tokens", metric])
    if curve is None:
        return pd.DataFrame(columns=["step", "tokens", metric])
    return curve.dropna(subset=[metric]).reset_index(drop=True)


def total_steps(run, curve: pd.DataFrame) -> float:
    """The run's planned steps: its step budget, or its token budget over the tokens per step it logged."""
    if not pd.isna(run.steps):
        return float(run.steps)
    last = curve.iloc[-1]
    return float(math.ceil(run.tokens / (last["tokens"] / last["step"])))


def compare_table(runs: pd.DataFrame, curves: dict, metric: str) -> Table:
    table = Table(title=f"{len(runs)} runs, {metric}", title_justify="left")
    for column in ("run", "kind", "width", "batch", "steps", f"final {metric}", f"best {metric}", "predicted",
                   "trial"):
        table.add_column(column, overflow="fold")
    for run in runs.itertuples():
        curve = curves[run.path]
        final, best = (curve[metric].iloc[-1], curve[metric].min()) if len(curve) else (None, None)
        trial = f"{run.provenance_study}#{int(run.provenance_trial)}" if not pd.isna(run.provenance_trial) else None
        done = len(curve) > 0 and curve["step"].iloc[-1] >= total_steps(run, curve)
        predicted = held_to(read_prediction(run.path), final, done)[0] if metric == "val_loss" else "-"
        table.add_row(*map(text, (run.run, run.kind, run.width, run.batch_size, run.last_step, final, best,
                                  predicted, trial)))
    return table


def compare_figure(runs: pd.DataFrame, curves: dict, x: str, metric: str) -> plt.Figure:
    figure, ax = plt.subplots(figsize=(7, 4.5))
    for run in runs.itertuples():
        curve = curves[run.path]
        if curve.empty:
            continue
        xs = curve["step"] / total_steps(run, curve) if x == "fraction" else curve[x]
        line, = ax.plot(xs, curve[metric], "--" if run.kind == "proxy" else "-", ms=4, lw=1.2,
                        marker="." if metric == "val_loss" else None, label=f"{run.run} ({run.kind}, w{run.width})")
        predicted = read_prediction(run.path) if metric == "val_loss" else {}
        if predicted:  # the interval the run is held to
            ax.axhspan(predicted["low"], predicted["high"], color=line.get_color(), alpha=0.15)
    ax.set_xlabel({"fraction": "fraction of the run (step / total steps)"}.get(x, x))
    ax.set_ylabel(metric)
    ax.set_title("proxies dashed, full runs solid; bands: predicted final loss")
    ax.legend(fontsize=7)
    return figure
