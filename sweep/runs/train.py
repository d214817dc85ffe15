"""`sweep train`: one RunConfig in this process, with a progress bar (quiet as a worker)."""
from __future__ import annotations

import os
from pathlib import Path

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

from sweep.cluster.processes import die_with_parent
from sweep.paths import check_writable, load_run_config
from trainer.config import RunConfig
from trainer.loop import RunResult, train


def run_train(config: Path, steps: int | None, resume: bool, quiet: bool, console: Console) -> RunResult:
    if "TORCHELASTIC_RUN_ID" in os.environ:  # a worker of torchrun: trains only while torchrun lives
        die_with_parent()
    cfg = load_run_config(config)
    if steps is not None:
        cfg = RunConfig.parse({**cfg.model_dump(), "steps": steps, "tokens": None})
    check_writable(Path(cfg.output.root) / cfg.output.study, "output.root")
    quiet = quiet or int(os.environ.get("RANK", "0")) != 0
    if quiet:
        return train(cfg, resume=resume)
    columns = [TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
               TextColumn("loss {task.fields[loss]}"), TextColumn("{task.fields[rate]} tok/s"),
               TimeElapsedColumn(), TextColumn("ETA"), TimeRemainingColumn()]
    with Progress(*columns, console=console, transient=True) as progress:
        task = progress.add_task(cfg.run_id(), total=None, loss="-", rate="-")

        def on_log(row: dict) -> None:
            tokens_per_example = row["tokens"] // (row["step"] * cfg.batch_size)
            total = cfg.total_steps(tokens_per_example)
            rate = row["tokens_per_s"]  # None while compiling: the first step is outside every window
            progress.update(task, completed=row["step"], total=total, loss=f"{row['train_loss']:.4f}",
                            rate="-" if rate is None else f"{rate:,.0f}")

        result = train(cfg, resume=resume, on_log=on_log)
    val = f"{result.val_loss:.4f}" if result.val_loss is not None else "-"
    console.print(f"{result.status}: {result.run_id} at step {result.step}, val loss {val}"
                  + (f" ({result.reason})" if result.reason else "") + f"; {cfg.run_dir()}/")
    return result
