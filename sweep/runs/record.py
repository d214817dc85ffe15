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

from sweep.paths import curve_folder, read_json
from trainer.atomic import atomic_path
from trainer.config import RunConfig
from trainer.curves import read_run

RECORD = "launch.json"
FINISHED = {"completed": "done", "diverged": "diverged"}  # result.json status → launch state


def locations(cfg: RunConfig) -> dict:
    """Absolute paths of the run folder, its checkpoints and its curve (so status works from any folder)."""
    run_dir = cfg.run_dir().resolve()
    return {"run_dir": str(run_dir), "checkpoints": str(run_dir / "checkpoints"),
            "curve": str(curve_folder(cfg).resolve())}


def write_record(cfg: RunConfig, record: dict) -> dict:
    record = {"run": cfg.run_id(), "study": cfg.output.study, "kind": cfg.output.kind, **locations(cfg), **record}
    with atomic_path(cfg.run_dir() / RECORD) as tmp:
        tmp.write_text(json.dumps(record, indent=2))
    return record


def read_record(run_dir: Path) -> dict | None:
    return read_json(Path(run_dir) / RECORD, "launch record")


def read_result(run_dir: Path) -> dict | None:
    """The trainer's result.json (status, step, losses, reason), once the run has ended."""
    return read_json(Path(run_dir) / "result.json", "run result")


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
