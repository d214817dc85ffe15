"""SLURM from the submitting machine: is it there (`sinfo`), what state is a job in, cancel it.

The submission itself (submitit's executors) stays with its user: an array of sweep workers in
`sweep.backends.slurm`, one multi-node run in `sweep.launch.slurm`.
"""
from __future__ import annotations

import shutil
import subprocess

from sweep.errors import InputError

WAITING = ("PENDING", "CONFIGURING", "REQUEUED", "REQUEUE_HOLD", "REQUEUE_FED", "SUSPENDED", "RESIZING")
RUNNING = ("RUNNING", "COMPLETING", "STAGE_OUT", "SIGNALING")
FAILED = ("FAILED", "TIMEOUT", "OUT_OF_MEMORY", "NODE_FAIL", "BOOT_FAIL", "DEADLINE", "CANCELLED")


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
