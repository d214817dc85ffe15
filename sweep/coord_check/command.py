"""`sweep coord-check`: build the model and data from flags, refuse a model that is not μP-ready, run the
check (attention models in both head regimes), print, plot and save."""
from __future__ import annotations

import re
import time
from pathlib import Path

import pandas as pd
import torch
from rich.console import Console
from rich.table import Table

from proxies.registry import base_width_of, build_model
from sweep.coord_check.plots import coord_check_grid
from sweep.coords import check_batch
from sweep.coords.args import open_model_data, parse_options, parse_widths
from sweep.coords.check import DEFAULT_LR, GROW_BOUND, SHRINK_BOUND, coord_check
from sweep.coords.ready import refuse_unless_mup_ready
from sweep.coords.roles import apply_roles, role_settings
from sweep.errors import InputError
from sweep.paths import results_root
from trainer.atomic import atomic_path
from trainer.config import LR_MAX
from trainer.optim import build_optimizer

# Attention models run in both regimes unless an option picks one: head dim fixed (heads grow with width;
# 1/d and 1/√d attention differ only by a constant there) and heads fixed (head dim grows with width,
# where only 1/d keeps the logits Θ(1): Tensor Programs V, μP attention q·k/d_head).
ATTENTION_REGIMES = {"gpt": {"head-dim-fixed": {}, "heads-fixed": {"n_head": 4}}}
REGIME_OPTIONS = ("n_head", "head_dim")


def regimes(model: str, options: dict) -> dict[str, dict]:
    """{regime name: extra builder options}; one unnamed regime unless the model has attention regimes."""
    if model not in ATTENTION_REGIMES or any(key in options for key in REGIME_OPTIONS):
        return {"": {}}
    return ATTENTION_REGIMES[model]


def run_coord_check(*, model: str, widths: str | None, steps: int, seeds: int, parametrization: str, optimizer: str,
                    lr: float | None, depth: int, batch_size: int | None, seq_len: int, data: str | None,
                    data_path: str | None, opt: list[str] | None, out: Path | None, console: Console,
                    settings: list[str] | None = None) -> bool:
    """Returns whether the model passed. Bad input and models that are not μP-ready raise before any file.
    `settings`: per-role multipliers (`--set`, as `sweep inspect` takes them), applied to every width."""
    if lr is not None and not 0 < lr <= LR_MAX:  # 0 trains nothing: every slope would be nan and "pass"
        raise InputError(f"--lr: a learning rate above 0 and at most {LR_MAX:g}, got {lr:g}")
    lr = DEFAULT_LR[optimizer] if lr is None else lr
    given = role_settings(settings)  # a RunConfig holding only the per-role settings
    roles, exps = given.optimizer.roles.given(), given.optimizer.roles.width_exps()
    base = base_width_of(model)
    width_list = parse_widths(widths or f"{base},{2 * base},{4 * base}")
    batch_size = batch_size or check_batch(model)
    source = open_model_data(model, data, data_path, seq_len)
    options = {**source.model_options(), **parse_options(opt)}

    def make_batch(seed: int):
        return source.batch("train", batch_size, torch.Generator().manual_seed(seed))

    def make_optimizer(net, lr: float):
        return build_optimizer(net, name=optimizer, lr=lr, roles=roles, width_exps=exps)

    makers = {}
    for regime, extra in regimes(model, options).items():
        makers[regime] = lambda width, extra=extra: with_roles(build_model(model, width, depth, parametrization,
                                                                           **options, **extra), given)
        probe = makers[regime](width_list[0])  # bad options and models that are not μP-ready fail here, before any file
        if parametrization == "mup":
            refuse_unless_mup_ready(probe, make_optimizer(probe, lr), optimizer,
                                    {role: lr_mult for role, (lr_mult, _) in roles.items()}, exps)
    out = out or results_root() / "coord-check" / f"{re.sub(r'[^A-Za-z0-9_.-]+', '_', model)}-{parametrization}"

    start = time.perf_counter()
    frames: dict[str, list[pd.DataFrame]] = {"coords": [], "slopes": [], "verdict": []}
    passed = True
    title = f"{model} {parametrization} · {optimizer} lr={lr:g} · depth {depth} · {steps} steps · {seeds} seed(s)"
    title += "".join(f" · {pair}" for pair in settings or [])
    for regime, make_model in makers.items():
        with console.status(f"coord-check {model} {regime} ({parametrization}, {optimizer}, lr {lr:g}) "
                            f"at widths {width_list}"):
            coords, slopes, verdict = coord_check(make_model, make_batch, width_list, seeds, steps,
                                                  optimizer=optimizer, lr=lr, make_optimizer=make_optimizer)
        for name, frame in (("coords", coords), ("slopes", slopes), ("verdict", verdict.table)):
            frames[name].append(frame.assign(regime=regime))
        console.print(verdict_table(verdict.table, f"{title} · {regime}" if regime else title))
        passed &= verdict.passed
    elapsed = time.perf_counter() - start

    meta = {"model": model, "parametrization": parametrization, "optimizer": optimizer, "lr": lr, "depth": depth,
            "settings": " ".join(settings or [])}
    for name, parts in frames.items():
        with atomic_path(out / f"{name}.parquet") as tmp:
            pd.concat(parts, ignore_index=True).assign(**meta).to_parquet(tmp, index=False)
    coord_check_grid(pd.concat(frames["coords"]), pd.concat(frames["verdict"]), out / "coord_check.png", title)

    outcome = "[green]PASS[/green]: behaves as μP predicts" if passed else "[red]FAIL[/red]: not in μP"
    console.print(f"{outcome} (fails: a size or update slope > +{GROW_BOUND}, or an update slope < −{SHRINK_BOUND} "
                  f"at every step); {elapsed:.1f} s; wrote {out}/")
    return passed


def with_roles(net, settings):
    """`net` with its per-role init multipliers applied (a role it lacks is refused)."""
    apply_roles(net, settings)
    return net


def verdict_table(table: pd.DataFrame, title: str) -> Table:
    rich_table = Table(title=title)
    for column in ("module", "kind", "max |x| slope", "max |Δx| slope", "min |Δx| slope", "at step", "verdict"):
        rich_table.add_column(column, justify="left" if column in ("module", "kind") else "right")
    for row in table.itertuples():
        mark = "[green]pass[/green]" if row.passed else f"[red]FAIL[/red] {row.why}"
        rich_table.add_row(row.module, row.kind, f"{row.max_size_slope:+.2f}", f"{row.max_delta_slope:+.2f}",
                           f"{row.min_delta_slope:+.2f}", str(row.step), mark)
    return rich_table
