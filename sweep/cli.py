"""The `sweep` command."""
from __future__ import annotations

import sys
from pathlib import Path
from typing import Optional

import typer
from rich.console import Console

from sweep.errors import BAD_INPUT

try:  # typer ≥ 0.26 vendors click
    from typer._click.exceptions import UsageError
except ImportError:  # pragma: no cover - older typer depends on click
    from click.exceptions import UsageError

app = typer.Typer(add_completion=False, no_args_is_help=True, rich_markup_mode=None,
                  help="Tune hyperparameters on small μP proxies and carry them to full-size runs.")
console = Console(width=None if sys.stdout.isatty() else 160)


@app.command("coord-check", short_help="Check μP: activation sizes and updates flat across widths")
def coord_check_cmd(
    model: str = typer.Option("gpt", help="zoo model (gpt, mlp, resnet) or package.module:function"),
    widths: Optional[str] = typer.Option(None, help="comma-separated widths [default: 1×, 2×, 4× the base width]"),
    steps: int = typer.Option(8, min=2, help="steps recorded (t = 0 … steps-1), training on one batch per seed"),
    seeds: int = typer.Option(3, min=1, help="seeds averaged per width"),
    parametrization: str = typer.Option("mup", help="mup or sp"),
    optimizer: str = typer.Option("adamw", help="adamw or sgd"),
    lr: Optional[float] = typer.Option(None, min=0.0, help="learning rate [default: 2^-7 adamw, 0.1 sgd]"),
    depth: int = typer.Option(2, min=1),
    batch_size: Optional[int] = typer.Option(None, min=1, help="[default: 4 sequences for gpt, else 16]"),
    seq_len: int = typer.Option(32, min=1),
    data: Optional[str] = typer.Option(None, help="data kind [default: stdlib for gpt, synthetic for mlp/resnet]"),
    data_path: Optional[str] = typer.Option(None, help="file or folder for text/tokens data"),
    opt: Optional[list[str]] = typer.Option(None, help="model option KEY=VALUE (repeatable; gpt: n_head= or head_dim= "
                                            "picks one attention regime, else both run)"),
    out: Optional[Path] = typer.Option(None, help="output folder [default: studies/coord-check/MODEL-PARAMETRIZATION]"),
):
    """Check that activations and their updates stay flat as width grows: table, PNG, Parquet; exit 1 if not μP."""
    from sweep.coord_check_run import run_coord_check

    passed = run_coord_check(model=model, widths=widths, steps=steps, seeds=seeds, parametrization=parametrization,
                             optimizer=optimizer, lr=lr, depth=depth, batch_size=batch_size, seq_len=seq_len,
                             data=data, data_path=data_path, opt=opt, out=out, console=console)
    raise typer.Exit(0 if passed else 1)


@app.command("inspect", short_help="Print the μP table of a model, per parameter")
def inspect_cmd(
    model: str = typer.Argument(..., help="zoo model (gpt, mlp, resnet) or package.module:function"),
    width: int = typer.Option(..., min=1),
    depth: int = typer.Option(2, min=1),
    parametrization: str = typer.Option("mup", help="mup or sp"),
    opt: Optional[list[str]] = typer.Option(None, help="model option KEY=VALUE (repeatable)"),
):
    """Print each parameter's shape, infinite dims, init std, Adam LR and forward multipliers, weight decay."""
    from sweep.inspect_model import inspect_table

    console.print(inspect_table(model, width, depth, parametrization, opt))


@app.command("train", short_help="Train one RunConfig (resumable); write curves")
def train_cmd(
    config: Path = typer.Argument(..., help="RunConfig YAML"),
    steps: Optional[int] = typer.Option(None, min=1, help="override the config's step budget"),
    resume: bool = typer.Option(False, "--resume", help="continue from the run's latest checkpoint, if any"),
    quiet: bool = typer.Option(False, "--quiet", help="no progress bar (workers are always quiet)"),
):
    """Train one RunConfig in this process (torchrun for several): curves, checkpoints, result."""
    from sweep.train_cmd import run_train

    result = run_train(config, steps, resume, quiet, console)
    raise typer.Exit(0 if result.status == "completed" else 1)


def main() -> None:
    """Entry point: bad input is one line on stderr and exit code 2."""
    try:
        code = app(standalone_mode=False)
    except UsageError as err:
        where = f"{err.ctx.command_path}: " if err.ctx else ""
        print(f"error: {where}{' '.join(err.format_message().split())}", file=sys.stderr)
        sys.exit(2)
    except BAD_INPUT as err:
        print(f"error: {err}", file=sys.stderr)
        sys.exit(2)
    except typer.Abort:
        sys.exit(130)
    sys.exit(code or 0)
