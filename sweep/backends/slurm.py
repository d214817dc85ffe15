"""The SLURM backend: one submitit job array; each task is a worker on the shared Optuna storage.

Each array task runs `run_worker` (claim trials until the study has its count), so the array's
size is `--workers` and how many run at once is `--array-parallelism`; the study, not SLURM,
decides how many trials run. The storage must be reachable from every node (a journal file on a
shared filesystem, or a SQLAlchemy URL): SQLite is refused. Its password stays in the environment
(sbatch exports it to the tasks); the job pickled to disk holds only the redacted URL form.

Preemption and timeouts: a task is `Checkpointable`. On SLURM's warning signal submitit calls
`checkpoint` (the same call is resubmitted), requeues the task and exits; the exit unwinds
`run_worker`, which releases the running trial. A task killed outright (`scontrol requeue`, a lost
node) leaves its trial RUNNING: the requeued task finds it stale (its process is gone on this
node; on another one after the heartbeat grace) and retries it. Either way the retry trains in the
same run folder and resumes from the run's last checkpoint.

The array's id and log folder are kept on the study (user attr `slurm_job`), so the same
`sweep proxy` command re-attaches to an array still queued or running instead of submitting another.
"""
from __future__ import annotations

import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from sweep.backends.base import Backend, Execution
from sweep.cluster.slurm import cancel, check_slurm, executor, failed_tasks, queued, slurm_job_id
from sweep.errors import InputError
from sweep.study.storage import open_storage
from sweep.study.study import SweepJob, open_study

JOB_ATTR = "slurm_job"
STOP_TIMEOUT_S = 30.0


class SlurmBackend(Backend):
    name = "slurm"

    def __init__(self, workers: int, options: Any):
        if workers < 1:
            raise InputError(f"--workers: must be at least 1 (array tasks), got {workers}")
        self.workers, self.options = workers, options

    def check(self, job: SweepJob) -> None:
        if job.storage.url.startswith("sqlite:"):
            raise InputError("--storage: --backend slurm needs a storage every node reaches: journal:PATH on a "
                             "shared filesystem or a SQLAlchemy URL (postgresql://…); SQLite is for one machine")
        check_slurm()

    def launch(self, job: SweepJob) -> SlurmExecution:
        study = open_study(job, open_storage(job.storage), create=False)
        recorded = study.user_attrs.get(JOB_ATTR)
        if recorded and queued(slurm_job_id(recorded.get("id"), job.storage.redacted, f"study {JOB_ATTR}")):
            return SlurmExecution(recorded["id"], Path(recorded["folder"]), recorded["tasks"], attached=True)
        folder = Path(job.root) / job.spec.name / "slurm" / job.study_name
        o = self.options
        slurm = executor(folder, job.study_name, o, gpus_per_task=o.gpus_per_node or None,
                         cpus_per_task=o.cpus_per_task, array_parallelism=o.array_parallelism or self.workers)
        job = replace(job, threads=job.threads or o.cpus_per_task)
        try:
            tasks = slurm.map_array(SlurmTask(), [replace(job, worker=i) for i in range(self.workers)])
        except Exception as err:  # sbatch's refusal: unknown partition, account, QOS, too many resources
            why = " ".join(str(err).split())[:300]
            raise InputError(f"--backend slurm: sbatch refused the array ({why})") from None
        array_id = tasks[0].job_id.split("_")[0]
        study.set_user_attr(JOB_ATTR, {"id": array_id, "folder": str(folder), "tasks": self.workers})
        return SlurmExecution(array_id, folder, self.workers, attached=False)


class SlurmTask:
    """One array task: a worker. Checkpointable (the default `checkpoint` resubmits the same call)."""

    def __call__(self, job: SweepJob) -> int:
        from sweep.study.worker import run_worker

        return run_worker(job)

    def checkpoint(self, job: SweepJob):
        import submitit

        return submitit.helpers.DelayedSubmission(self, job)


class SlurmExecution(Execution):
    def __init__(self, array_id: str, folder: Path, tasks: int, attached: bool):
        self.array_id, self.folder, self.tasks, self.attached = array_id, folder, tasks, attached

    def running(self) -> bool:
        return queued(self.array_id)

    def stop(self) -> None:
        """Cancel what is queued; interrupt what runs (each task releases its trial), then cancel the rest."""
        cancel(self.array_id, "--state=PENDING")
        cancel(self.array_id, "--signal=INT")
        deadline = time.time() + STOP_TIMEOUT_S
        while queued(self.array_id) and time.time() < deadline:
            time.sleep(0.5)
        cancel(self.array_id)

    def errors(self) -> list[str]:
        return [f"SLURM task {task} ended {state} (exit {code}); log: {self.folder}/{task}_0_log.err"
                for task, state, code in failed_tasks(self.array_id)]

    def describe(self) -> str:
        how = "re-attached to" if self.attached else "submitted"
        return f"SLURM job array {self.array_id} ({how}, {self.tasks} task(s)); logs in {self.folder}"

