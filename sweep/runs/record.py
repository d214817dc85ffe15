"""What a run folder says about a launched run.

RUN_DIR/launch.json (written atomically before the run starts) holds how and where it was launched:
the backend, the job (a SLURM job id, or the launching process: machine, pid and start time), its
log, checkpoint and curve locations. `sweep launch` reads it to re-attach instead of starting a run
twice; `sweep status` finds launched runs by it. The trainer's own files tell the rest: result.json
(completed, diverged) and the curve (last step and loss).
"""
from __future__ import annotations

import json
from pathlib import Path

from sweep.cluster.slurm import slurm_job_id
from sweep.paths import RECORD, curve_folder, stored_name, stored_path
from trainer.atomic import atomic_path
from trainer.config import RunConfig
from trainer.curves import read_run
from trainer.written import check_fields, read_object, reading

FINISHED = {"completed": "done", "diverged": "diverged"}  # result.json status → launch state


def locations(cfg: RunConfig) -> dict:
    """Absolute paths of the run folder, its checkpoints and its curve (so status works from any folder; it reads
    them under the root that holds the run, sweep/paths.py `stored_path`, so a root copied elsewhere reads its own)."""
    run_dir = cfg.run_dir().resolve()
    return {"run_dir": str(run_dir), "checkpoints": str(run_dir / "checkpoints"),
            "curve": str(curve_folder(cfg).resolve())}


def write_record(cfg: RunConfig, record: dict) -> dict:
    record = {"run": cfg.run_id(), "study": cfg.output.study, "kind": cfg.output.kind, **locations(cfg), **record}
    with atomic_path(cfg.run_dir() / RECORD) as tmp:
        tmp.write_text(json.dumps(record, indent=2))
    return record


# the fields every reader of a record or a result takes, with their types (a damaged file is one line naming it)
RECORD_FIELDS = {"run": str, "study": str, "kind": str, "run_dir": str, "checkpoints": str, "curve": str,
                 "backend": str, "job": str}
PROCESS_FIELDS = {"machine": str, "pid": int, "start": str}  # a local or Ray launch's launcher process
RESULT_FIELDS = {"status": str, "step": int}


def read_record(run_dir: Path) -> dict | None:
    """launch.json, each field of its type; its run and study are names read back (`stored_name`), its job an id
    the scheduler gave."""
    path = Path(run_dir) / RECORD
    record = read_object(path, "launch record", RECORD_FIELDS)
    if record is None:
        return None
    for key in ("run", "study"):
        stored_name(record[key], f"launch record {key}", path)
    if record["backend"] == "slurm":
        slurm_job_id(record["job"], path)
    else:
        with reading(path, "launch record"):
            check_fields(record, {"process": dict})
            check_fields(record["process"], PROCESS_FIELDS)
    return rooted(record, Path(run_dir))


def rooted(record: dict, run_dir: Path) -> dict:
    """The record with its run, checkpoint and curve folders under the results root that holds the run folder
    (ROOT/STUDY/runs/RUN; sweep/paths.py `stored_path`): a root copied or moved elsewhere reads and re-attaches to
    its own, never the old root's."""
    root = run_dir.parents[2]
    return {**record, **{key: str(stored_path(record[key], root, kind)) for key, kind in
                         (("run_dir", "runs"), ("checkpoints", "checkpoints"), ("curve", "curves"))}}


def read_result(run_dir: Path) -> dict | None:
    """The trainer's result.json (status, step, losses, reason), once the run has ended."""
    path = Path(run_dir) / "result.json"
    return read_object(path, "run result", RESULT_FIELDS)


def finished_state(run_dir: Path) -> str | None:
    """done or diverged when the trainer recorded so; None while it has not (or the run was pruned)."""
    result = read_result(run_dir)
    return FINISHED.get(result["status"]) if result else None


def last_logged(curve: Path) -> dict | None:
    """The curve's last row: step, train_loss, val_loss (the last evaluation's); None before the first log."""
    rows = read_run(curve, columns=["step", "train_loss", "val_loss"])
    if rows is None:
        return None
    val = rows["val_loss"].dropna()
    return {"step": int(rows["step"].iloc[-1]), "train_loss": float(rows["train_loss"].iloc[-1]),
            "val_loss": float(val.iloc[-1]) if len(val) else None}
