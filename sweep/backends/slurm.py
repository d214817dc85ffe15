"""The SLURM backend, two entry points, both submitted by `sweep.cluster.slurm.executor`: a sweep's workers as one
submitit job array, each task a worker on the shared Optuna storage (`SlurmBackend`); one full run as one job
(`launch_slurm`).

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

One full run (`sweep launch --backend slurm`): one task per GPU across the nodes (one per node on CPU). Each
sets up torch.distributed from SLURM's environment (submitit's TorchDistributedEnvironment exports RANK,
WORLD_SIZE, LOCAL_RANK, MASTER_ADDR and MASTER_PORT, which the trainer's runtime reads) and trains the RunConfig
with resume. The job is `Checkpointable`: on SLURM's timeout or preemption signal submitit calls its `checkpoint`,
which resubmits the same call, requeues the job and exits; a job requeued outright (`scontrol requeue`, a lost
node) starts the same call again. Either way the trainer resumes from the run's latest checkpoint.

The job id and log folder (RUN_DIR/slurm/) are recorded in RUN_DIR/launch.json, so `sweep launch`
again re-attaches to a job still queued or running instead of submitting another.
"""
from __future__ import annotations

import io
import os
import shutil
import time
from contextlib import redirect_stderr
from dataclasses import replace
from pathlib import Path
from typing import Any

import submitit
from rich.console import Console

from sweep.backends.base import Backend, Execution
from sweep.cluster.slurm import (
    active,
    cancel,
    check_script,
    check_slurm,
    executor,
    failed_tasks,
    job_state,
    queued,
    slurm_job_id,
)
from sweep.errors import InputError
from sweep.runs.record import last_logged, read_result, write_record
from sweep.study.storage import open_storage
from sweep.study.study import SweepJob, open_study
from trainer.checkpoint import list_checkpoints, step_of
from trainer.config import RunConfig

JOB_ATTR = "slurm_job"
STOP_TIMEOUT_S = 30.0
POLL_S = 2.0  # a launched run's job state, while it is followed


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
        check_script(Path(job.root) / job.spec.name / "slurm" / job.study_name, job_name=job.study_name)

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



class SlurmRun(submitit.helpers.Checkpointable):
    """One task of the job: join the process group SLURM describes, train with resume.

    `checkpoint` (inherited) resubmits this same call, which resumes from the run's latest checkpoint."""

    def __call__(self, cfg: RunConfig, cwd: str) -> Any:
        from trainer.loop import train

        os.chdir(cwd)  # relative paths in the config mean the folder `sweep launch` ran in
        submitit.helpers.TorchDistributedEnvironment().export(set_cuda_visible_devices=False, overwrite=True)
        checkpoints = list_checkpoints(cfg.run_dir() / "checkpoints")
        start = f"resuming from checkpoint step {step_of(checkpoints[-1])}" if checkpoints else "starting at step 0"
        print(f"{cfg.run_id()}: {start} (rank {os.environ['RANK']} of {os.environ['WORLD_SIZE']})", flush=True)
        return train(cfg, resume=True)


def launch_slurm(cfg: RunConfig, settings: Any, detach: bool, record: dict | None, console: Console) -> int:
    """Submit the job (or re-attach to the recorded one while it is queued or running); follow it unless detached."""
    if record and record["backend"] == "slurm" and active(job_state(record["job"])[0]):
        job_id, attached = record["job"], True
    else:
        job_id, attached = submit(cfg, settings), False
        record = write_record(cfg, {"backend": "slurm", "job": job_id, "logs": str((cfg.run_dir() / "slurm").resolve()),
                                    "nodes": settings.nodes, "gpus_per_node": settings.gpus_per_node,
                                    "launched": time.time()})
    console.print(f"SLURM job {job_id} ({'re-attached' if attached else 'submitted'}); "
                  f"log {record['logs']}/{job_id}_0_log.out; checkpoints {record['checkpoints']}; "
                  f"curve {record['curve']}")
    if detach:
        console.print(f"detached: `sweep status` shows it; `sweep launch` again re-attaches; "
                      f"`scancel {job_id}` stops it")
        return 0
    return follow(job_id, record, console)


def submit(cfg: RunConfig, settings: Any) -> str:
    """sbatch through submitit; a refusal (partition, account, resources) is an InputError and leaves no folder."""
    folder = cfg.run_dir() / "slurm"
    created = next((p for p in [*reversed(folder.parents), folder] if not p.exists()), None)
    s = settings
    slurm = executor(folder, cfg.run_id(), s, nodes=s.nodes, ntasks_per_node=max(1, s.gpus_per_node),
                     gpus_per_node=s.gpus_per_node or None)
    try:
        with redirect_stderr(io.StringIO()):  # submitit echoes sbatch's stderr; its exception holds the same text
            return slurm.submit(SlurmRun(), cfg, os.getcwd()).job_id
    except Exception as err:  # sbatch's refusal
        if created is not None:
            shutil.rmtree(created, ignore_errors=True)
        raise InputError(f"--backend slurm: sbatch refused the job ({' '.join(str(err).split())[:300]})") from None


def follow(job_id: str, record: dict, console: Console) -> int:
    """Print each change of the job's state with the curve's last step until it ends; 0 when the run completed.

    Ctrl-C stops following only: the job goes on."""
    seen = None
    try:
        while active((now := job_state(job_id))[0]):
            if now != seen:
                state, restarts = seen = now
                logged = last_logged(Path(record["curve"]))
                at = f" at step {logged['step']}, loss {logged['train_loss']:.4f}" if logged else ""
                console.print(f"job {job_id}: {state.lower()}" + (f" (requeued {restarts}×)" if restarts else "") + at)
            time.sleep(POLL_S)
    except KeyboardInterrupt:
        console.print(f"stopped following; job {job_id} goes on "
                      f"(`sweep launch` again re-attaches, `scancel {job_id}` stops it)")
        return 130
    result = read_result(Path(record["run_dir"]))
    if result is None:
        console.print(f"[red]job {job_id} ended {now[0]} without a result[/]; log: {record['logs']}/{job_id}_0_log.err")
        return 1
    return 0 if result["status"] == "completed" else 1
