"""`sweep status [STUDY]`: every launched run under the results root (or of one sweep), with its state.

A run is launched when its folder holds launch.json. Its state comes from, in this order:
- the trainer's result.json: done or diverged;
- the scheduler while the job is there: queued, requeued (queued again after a requeue), running;
  for a local or Ray launch, its launcher process alive on this machine: running;
- else, when it ended without a result: stopped if it left a checkpoint its resume loads (RUN/checkpoints or the
  spike guard's ring; a SIGTERM or SIGUSR2 makes the trainer write one at the step it is in, trainer/preemption.py):
  `sweep launch` again resumes it; failed if it left none (launching again starts it over); unknown for a
  process on another machine.
The last step and losses come from the run's curve; a transferred run's predicted final loss and interval
from its config's provenance, flagged when the run leaves it (sweep/runs/prediction.py), or, where the
prediction holds the whole curve, at the first evaluation outside the band the trainer logged beside it
(sweep/forecast/live.py), with what to do.
"""
from __future__ import annotations

import json
from pathlib import Path

from rich.console import Console
from rich.table import Table

from sweep.cluster.processes import process_alive
from sweep.errors import InputError, plain_text
from sweep.forecast.live import ADVICE, apart, departure, latest_final
from sweep.paths import kept_inside, results_root, sweep_name
from sweep.runs.prediction import held_to, read_prediction
from sweep.runs.record import RECORD, finished_state, last_logged, read_record
from sweep.study.spec import load_spec
from trainer.checkpoint_names import RING, latest_checkpoint, step_of
from trainer.curves import read_run
from trainer.written import DamagedFile


def run_status(target: str | None, fmt: str, console: Console) -> None:
    """Every readable run listed; then a run whose files are damaged or refused (a hand-edited config, a folder
    linking out of the root) is the one line of a refusal (exit 2): one bad run never hides the others."""
    rows, damaged = [], []
    for record_path in launch_records(target):
        try:
            rows.append(run_state(record_path.parent))
        except (DamagedFile, InputError) as err:
            damaged.append(str(err))
    show_rows(rows, target, fmt, console)
    if damaged:
        more = f" (and {len(damaged) - 1} more damaged or refused run(s))" if len(damaged) > 1 else ""
        raise InputError(f"{damaged[0]}{more}; the other runs are listed")


def show_rows(rows: list[dict], target: str | None, fmt: str, console: Console) -> None:
    if fmt == "json":
        print(json.dumps(rows, indent=2))
        return
    if not rows:
        console.print(f"no launched run under {results_root()}" + (f" for {target}" if target else ""))
        return
    table = Table(title=f"launched runs under {results_root()}")
    for column in ("run", "study", "kind", "backend", "job", "state", "step", "train loss", "val loss", "predicted",
                   "detail"):
        table.add_column(column)
    for row in rows:
        cells = (row["run"], row["study"], row["kind"], row["backend"], row["job"], row["state"], show(row["step"]),
                 show(row["train_loss"]), show(row["val_loss"]), row["predicted"], row["detail"])
        table.add_row(*map(plain_text, cells))  # text read back: no markup read, no terminal escape sent
    console.print(table)


def launch_records(target: str | None) -> list[Path]:
    """launch.json of every run under the results root, or under one sweep's folder (by spec or name)."""
    root = results_root()
    if target is None:
        return kept_inside(root.glob(f"*/runs/*/{RECORD}"), root, "runs")
    path = Path(target)
    name = load_spec(path).name if path.suffix in (".yaml", ".yml") or path.is_file() else sweep_name(target, "study")
    if not (root / name).is_dir():
        raise InputError(f"study: no sweep named {name!r} under {root}")
    return kept_inside((root / name).glob(f"runs/*/{RECORD}"), root, "runs")


def run_state(run_dir: Path) -> dict:
    record = read_record(run_dir)
    kept_out_of_links(run_dir, record)
    state, detail = finished_state(run_dir), ""
    if state is None:
        state, detail = scheduler_state(record)
    if state is None:
        state, detail = ended_state(run_dir, record, detail)
    logged = last_logged(Path(record["curve"]))
    config_kept(run_dir, record, logged)
    logged = logged or {"step": None, "train_loss": None, "val_loss": None}
    prediction = read_prediction(run_dir)
    predicted, outside = held_to(prediction, logged["val_loss"], state in ("done", "diverged"))
    if outside:
        detail = "; ".join(filter(None, [detail, "val loss outside the predicted interval"]))
    rows = read_run(record["curve"]) if prediction.get("curve") or prediction.get("refine") else None
    off, own = departure(rows), latest_final(rows)
    if off:
        outside = True
        detail = "; ".join(filter(None, [detail, f"left its predicted curve at step {off['step']} ({off['side']}: "
                                                 f"{off['val_loss']:.4f} vs [{off['low']:.4f}, {off['high']:.4f}]): "
                                                 f"{off['advice']}"]))
    if own and state not in ("done", "diverged"):
        side = apart(own, prediction)
        outside = outside or side is not None
        detail = "; ".join(filter(None, [detail, f"its own curve at step {own['step']} predicts a final "
                                                 f"{own['loss']:.4f} [{own['low']:.4f}, {own['high']:.4f}]" +
                                         (f", {side} the interval it is held to: {ADVICE[side]}" if side else "")]))
    return {"run": record["run"], "study": record["study"], "kind": record["kind"], "backend": record["backend"],
            "job": record["job"], "state": state, **logged, "predicted": predicted, "outside": outside,
            **{f"predicted_{key}": prediction.get(key) for key in ("loss", "low", "high")},
            "detail": detail, "left_curve": off, "own_final": own, "run_dir": str(run_dir)}


def ended_state(run_dir: Path, record: dict, detail: str) -> tuple[str, str]:
    """A run without a result that neither a scheduler nor a process of this machine holds: (state, detail)."""
    if detail == "on another machine":
        return "unknown", detail
    latest = latest_checkpoint(*checkpoint_folders(run_dir, record))
    if latest is None:
        return "failed", detail or "ended without a result or a checkpoint; `sweep launch` again starts it over"
    resumes = f"ended without a result, checkpointed at step {step_of(latest)}; `sweep launch` again resumes it"
    return "stopped", "; ".join(filter(None, [detail, resumes]))


def checkpoint_folders(run_dir: Path, record: dict) -> list[Path]:
    """Where the run's resume looks for its newest checkpoint (trainer/checkpoint_names.py)."""
    return [Path(record["checkpoints"]), Path(run_dir) / RING]


def kept_out_of_links(run_dir: Path, record: dict) -> None:
    """Nothing status reads is read through a link out of the results root that holds the run (ROOT/STUDY/runs/RUN;
    a run read outside $SWEEP_ROOT stays readable): its result.json, its curve's and checkpoints' folders and the
    files in them (an outside tester's linked result.json turned a run diverged)."""
    root, folders = Path(run_dir).parents[2], [Path(record["curve"]), *checkpoint_folders(run_dir, record)]
    kept_inside([path for path in [run_dir / "result.json", *folders] if path.exists() or path.is_symlink()], root,
                "runs")  # the folders before what is in them: no folder out of the root is listed
    kept_inside([path for folder in folders if folder.is_dir() for path in folder.iterdir()], root, "runs")


def config_kept(run_dir: Path, record: dict, logged: dict | None) -> None:
    """A run that trained (a logged step, a result or a checkpoint) still holds the config.yaml the trainer wrote
    before its first step (trainer/loop.py), else an InputError naming it: deleted by hand, the run was listed without
    its prediction and without a word. A run not yet started (queued) has none yet."""
    config = run_dir / "config.yaml"
    if config.exists() or config.is_symlink():  # a link is refused where it is read (sweep/runs/prediction.py)
        return
    if logged or (run_dir / "result.json").exists() or latest_checkpoint(*checkpoint_folders(run_dir, record)):
        raise InputError(f"runs: {config} is missing, though the run {record['run']} trained (its curve, result or "
                         "checkpoints are there); put back the config it was launched with, or launch that config "
                         "again")


def scheduler_state(record: dict) -> tuple[str | None, str]:
    """(queued|requeued|running, detail) while the scheduler or the launcher process holds the run;
    else (None, detail)."""
    if record["backend"] == "slurm":
        from sweep.cluster.slurm import RUNNING, WAITING, job_state

        slurm, restarts = job_state(record["job"])
        if slurm in RUNNING:
            return "running", f"SLURM {slurm}" + (f", requeued {restarts}×" if restarts else "")
        if slurm in WAITING:
            detail = f"SLURM {slurm}" + (f", requeued {restarts}×" if restarts else "")
            return ("requeued" if restarts else "queued"), detail
        return None, f"SLURM {slurm}" if slurm else ""
    alive = process_alive(record["process"])
    if alive:
        return "running", f"pid {record['process']['pid']}"
    return None, "on another machine" if alive is None else ""


def show(value) -> str:
    if value is None:
        return "-"
    return f"{value:.4f}" if isinstance(value, float) else str(value)
