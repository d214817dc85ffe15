"""SLURM from the submitting machine: is it there (`sinfo`), the job's batch script, what state a job is in,
cancel it.

Both entry points of `sweep.backends.slurm` submit through `executor`: an array of sweep workers and one
multi-node run. It writes the settings (sweep/cluster/settings.py, whose patterns keep every text on
its `#SBATCH` line) and refuses any other text bound for the script (the log folder, the job name) that holds a
control character, before sbatch is called or a script written.
"""
from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

from sweep.errors import InputError

WAITING = ("PENDING", "CONFIGURING", "REQUEUED", "REQUEUE_HOLD", "REQUEUE_FED", "SUSPENDED", "RESIZING")
RUNNING = ("RUNNING", "COMPLETING", "STAGE_OUT", "SIGNALING")
FAILED = ("FAILED", "TIMEOUT", "OUT_OF_MEMORY", "NODE_FAIL", "BOOT_FAIL", "DEADLINE", "CANCELLED")


JOB_ID = re.compile(r"[0-9]{1,20}(_[0-9]{1,10})?")  # a job, or one task of an array


def slurm_job_id(value: object, source: object, field: str = "launch record job") -> str:
    """A SLURM job id read back from `source` (it goes to scontrol, sacct, squeue, scancel), else an InputError."""
    if isinstance(value, str) and JOB_ID.fullmatch(value):
        return value
    raise InputError(f"{field}: {source} holds {str(value)[:40]!r}, not a SLURM job id; refused")


CONTROL = re.compile(r"[\x00-\x1f\x7f]")  # a newline ends a `#SBATCH` line; the rest would run as a command


def check_script(folder: Path, **texts: Any) -> None:
    """Refuse (an InputError) a log folder or any other text bound for the batch script that holds a control
    character; called before anything is written (the backends' pre-flight) and again by `executor`."""
    for key, value in [("log folder", str(folder.absolute())), *texts.items()]:
        if isinstance(value, str) and CONTROL.search(value):
            raise InputError(f"--backend slurm: the {key.replace('_', ' ')} {value[:60]!r} holds a control character "
                             "(a newline would end its #SBATCH line); refused")


def executor(folder: Path, name: str, settings: Any, **shape: Any) -> Any:
    """A submitit SlurmExecutor for a job named `name`, its logs in `folder`, with the SLURM `settings` (partition,
    account, QOS, time, memory per node) and the job's `shape` (nodes, tasks, GPUs, an array's parallelism)."""
    import submitit

    given = {"job_name": name, "partition": settings.partition, "account": settings.account, "qos": settings.qos,
             "time": settings.time, "mem": f"{round(settings.mem * 1024)}M" if settings.mem else None,
             "signal_delay_s": min(90, 10 * settings.time), **shape}
    given = {key: value for key, value in given.items() if value is not None}
    check_script(folder, **given)
    slurm = submitit.SlurmExecutor(folder=folder, max_num_timeout=1000)
    slurm.update_parameters(**given)
    return slurm


def check_slurm() -> None:
    """SLURM's commands run here (`sinfo --version`), and those submitit and status call are installed (a half
    installed SLURM, sinfo without srun, was submitit's traceback), else an InputError for `--backend slurm`."""
    if missing := [name for name in ("sbatch", "srun", "scontrol", "sacct") if shutil.which(name) is None]:
        raise InputError(f"--backend slurm: SLURM is half installed here ({', '.join(missing)} not found on PATH); "
                         "submit from a login node")
    try:
        subprocess.run(["sinfo", "--version"], capture_output=True, check=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        raise InputError("--backend slurm: no SLURM here (sinfo does not run); submit from a login node") from None


def job_state(job_id: str) -> tuple[str | None, int]:
    """(SLURM state, restarts) of a job: scontrol while SLURM remembers it, else sacct; (None, 0) if unknown."""
    try:
        shown = subprocess.run(["scontrol", "show", "job", "-o", job_id], capture_output=True, text=True, timeout=60)
        if shown.returncode == 0 and "JobState=" in shown.stdout:
            fields = dict(item.split("=", 1) for item in shown.stdout.split() if "=" in item)
            return fields["JobState"], int(fields.get("Restarts", 0))
        done = subprocess.run(["sacct", "-n", "-X", "-P", "-j", job_id, "-o", "State"], capture_output=True, text=True,
                              timeout=60)
    except (OSError, subprocess.SubprocessError):  # no SLURM on this machine
        return None, 0
    states = done.stdout.split()
    return (states[-1], 0) if states else (None, 0)


def active(state: str | None) -> bool:
    """Whether a job in this state is queued or running."""
    return state in WAITING or state in RUNNING


def queued(job_id: str) -> bool:
    """Whether a task of the job (or array) is queued or running (squeue forgets finished jobs)."""
    done = subprocess.run(["squeue", "-h", "-j", job_id, "-o", "%T"], capture_output=True, text=True, timeout=60)
    return done.returncode == 0 and bool(done.stdout.split())


def failed_tasks(job_id: str) -> list[tuple[str, str, str]]:
    """(task, state, exit code) of each task of the job that ended in a FAILED state (sacct)."""
    done = subprocess.run(["sacct", "-n", "-X", "-P", "-j", job_id, "-o", "JobID,State,ExitCode"],
                          capture_output=True, text=True, timeout=60)
    rows = [row.split("|") for row in done.stdout.splitlines()]
    return [(task, state, code) for task, state, code in rows if state.split()[0] in FAILED]


def cancel(job_id: str, *options: str) -> None:
    """scancel with `options` (a state filter, a signal); the job's absence is no error."""
    subprocess.run(["scancel", *options, job_id], capture_output=True, timeout=60)
