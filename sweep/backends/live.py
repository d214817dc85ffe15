"""The live view of a running sweep, read from the Optuna storage (so it shows every backend's workers):
progress over trials, the running trials with their step and loss, the best so far, and a line per
finished trial; `run_workers` starts a backend's workers on a study and follows them with it (for `sweep proxy`
and `sweep verify`)."""
from __future__ import annotations

import time

import optuna
from optuna.trial import FrozenTrial, TrialState
from rich.console import Console, Group
from rich.live import Live
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from sweep.backends.base import Execution
from sweep.errors import TERMINATED, sigterm_stops
from sweep.study.liveness import HEARTBEAT
from sweep.study.study import SweepJob, counts

REFRESH_S = 1.0


def short(params: dict) -> str:
    """`lr=0.01, embedding.lr_mult=8, init.embedding=2`: each name by its shortest dotted suffix that no other name
    holds anywhere (so the role in `init.embedding` is not read as the embedding's LR)."""
    def suffix(name: str) -> str:
        parts = name.split(".")
        for k in range(1, len(parts)):
            tail = "." + ".".join(parts[-k:]) + "."
            if not any(o != name and tail in f".{o}." for o in params):
                return tail.strip(".")
        return name
    return ", ".join(f"{suffix(name)}={fmt(v)}" for name, v in params.items())


def fmt(value) -> str:
    return f"{value:.4g}" if isinstance(value, float) else str(value)


def finished_line(trial: FrozenTrial) -> str:
    attrs = trial.user_attrs
    if trial.state == TrialState.COMPLETE:
        outcome = f"[green]COMPLETE[/] {trial.value:.4f}"
    elif trial.state == TrialState.PRUNED:
        outcome = f"[yellow]PRUNED[/] ({attrs.get('reason', '')})"
    else:
        outcome = f"[red]FAILED[/] ({attrs.get('error') or attrs.get('reason', '')})"
    taken = len(attrs.get("reused") or ())  # runs another study had trained (sweep/study/twin.py)
    trained = len(attrs.get("runs") or ()) - taken
    over = f" in {trained} runs" if trained > 1 else ""  # `steps` sums every run the trial trained
    over += f", {taken} run{'s' * (taken > 1)} taken as trained" if taken else ""
    return f"trial {trial.number:>4} {outcome} after {attrs.get('steps', 0)} steps{over} · {short(trial.params)}"


def running_table(trials: list[FrozenTrial]) -> Table:
    table = Table(title=None, box=None, show_header=True, header_style="bold")
    for column in ("trial", "step", "train loss", "for", "params"):
        table.add_column(column)
    now = time.time()
    for t in trials:
        beat = t.system_attrs.get(HEARTBEAT, {})
        loss = beat.get("loss")
        started = t.datetime_start.timestamp() if t.datetime_start else now
        table.add_row(str(t.number), str(beat.get("step", "-")), f"{loss:.4f}" if loss is not None else "-",
                      f"{now - started:.0f}s", short(t.params))
    return table


def watch(study: optuna.Study, n_trials: int, execution: Execution, console: Console) -> None:
    """Follow the study until the workers end; print each trial as it finishes."""
    seen: set[int] = set()
    bar = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                   TextColumn("{task.fields[best]}"))
    task = bar.add_task(study.study_name, total=n_trials, best="")

    def refresh() -> Group:
        trials = study.get_trials(deepcopy=False)
        for t in trials:
            if t.state.is_finished() and t.number not in seen:
                seen.add(t.number)
                console.print(finished_line(t))
        complete = [t for t in trials if t.state == TrialState.COMPLETE]
        best = min(complete, key=lambda t: t.value) if complete else None
        bar.update(task, completed=sum(map(counts, trials)),
                   best=f"best {best.value:.4f} (trial {best.number})" if best else "")
        return Group(bar, running_table([t for t in trials if t.state == TrialState.RUNNING]))

    for t in study.get_trials(deepcopy=False):  # what earlier runs finished is not news
        if t.state.is_finished():
            seen.add(t.number)
    with Live(refresh(), console=console, refresh_per_second=4, transient=True, auto_refresh=False) as live:
        while execution.running():
            time.sleep(REFRESH_S)
            live.update(refresh(), refresh=True)
        refresh()


def run_workers(study: optuna.Study, job: SweepJob, executor, console: Console, detach: bool = False) -> int | None:
    """Launch the backend's workers on the study and follow them to the end; an exit code when the
    command must stop here (130 on Ctrl-C, 0 when detached), else None."""
    execution = None
    try:
        execution = executor.launch(job)
        console.print(f"running on {execution.describe()}")
        if detach:
            console.print("detached: the same command without --detach follows it again")
            return 0
        with sigterm_stops():
            watch(study, job.n_trials, execution, console)
    except KeyboardInterrupt:
        if execution is not None:  # else the workers started had the Ctrl-C too, and stop by themselves
            execution.stop()
        console.print("stopped: running trials were released; the same command resumes the study")
        return 143 if TERMINATED.is_set() else 130
    for line in execution.errors():
        console.print(f"[red]worker failed[/]: {line}")
    return None
