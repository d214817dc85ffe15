"""`--backend slurm`: one submitit job, one task per GPU across the nodes (one per node on CPU).

Each task sets up torch.distributed from SLURM's environment (submitit's TorchDistributedEnvironment
exports RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR and MASTER_PORT, which the trainer's runtime reads)
and trains the RunConfig with resume. The job is `Checkpointable`: on SLURM's timeout or preemption
signal submitit calls its `checkpoint`, which resubmits the same call, requeues the job and exits; a
job requeued outright (`scontrol requeue`, a lost node) starts the same call again. Either way the
trainer resumes from the run's latest checkpoint, so the curve goes on where it was checkpointed.

The job id and log folder (RUN_DIR/slurm/) are recorded in RUN_DIR/launch.json, so `sweep launch`
again re-attaches to a job still queued or running instead of submitting another.
"""
from __future__ import annotations

import io
import os
import shutil
import time
from contextlib import redirect_stderr
from pathlib import Path

import submitit
from rich.console import Console

from sweep.cluster.slurm import active, job_state
from sweep.errors import InputError
from sweep.launch.request import LaunchRequest
from sweep.runs.record import last_logged, read_result, write_record
from trainer.checkpoint import list_checkpoints, step_of
from trainer.config import RunConfig
from trainer.loop import RunResult, train

POLL_S = 2.0
DEFAULT_TIME_MIN = 60


class SlurmRun(submitit.helpers.Checkpointable):
    """One task of the job: join the process group SLURM describes, train with resume.

    `checkpoint` (inherited) resubmits this same call, which resumes from the run's latest checkpoint."""

    def __call__(self, cfg: RunConfig, cwd: str) -> RunResult:
        os.chdir(cwd)  # relative paths in the config mean the folder `sweep launch` ran in
        submitit.helpers.TorchDistributedEnvironment().export(set_cuda_visible_devices=False, overwrite=True)
        checkpoints = list_checkpoints(cfg.run_dir() / "checkpoints")
        start = f"resuming from checkpoint step {step_of(checkpoints[-1])}" if checkpoints else "starting at step 0"
        print(f"{cfg.run_id()}: {start} (rank {os.environ['RANK']} of {os.environ['WORLD_SIZE']})", flush=True)
        return train(cfg, resume=True)


def launch_slurm(cfg: RunConfig, request: LaunchRequest, record: dict | None, console: Console) -> int:
    """Submit the job (or re-attach to the recorded one while it is queued or running); follow it unless detached."""
    if record and record["backend"] == "slurm" and active(job_state(record["job"])[0]):
        job_id, attached = record["job"], True
    else:
        job_id, attached = submit(cfg, request), False
        record = write_record(cfg, {"backend": "slurm", "job": job_id, "logs": str((cfg.run_dir() / "slurm").resolve()),
                                    "nodes": request.nodes or 1, "gpus_per_node": request.gpus,
                                    "launched": time.time()})
    console.print(f"SLURM job {job_id} ({'re-attached' if attached else 'submitted'}); "
                  f"log {record['logs']}/{job_id}_0_log.out; checkpoints {record['checkpoints']}; "
                  f"curve {record['curve']}")
    if request.detach:
        console.print(f"detached: `sweep status` shows it; `sweep launch` again re-attaches; "
                      f"`scancel {job_id}` stops it")
        return 0
    return follow(job_id, record, console)


def submit(cfg: RunConfig, request: LaunchRequest) -> str:
    """sbatch through submitit; a refusal (partition, account, resources) is an InputError and leaves no folder."""
    folder = cfg.run_dir() / "slurm"
    created = next((p for p in [*reversed(folder.parents), folder] if not p.exists()), None)
    executor = submitit.AutoExecutor(folder=folder, cluster="slurm", slurm_max_num_timeout=1000)
    minutes = request.time or DEFAULT_TIME_MIN
    given = {"slurm_partition": request.partition, "mem_gb": request.mem, "slurm_account": request.account,
             "slurm_qos": request.qos, "gpus_per_node": request.gpus or None}
    executor.update_parameters(name=cfg.run_id(), nodes=request.nodes or 1, tasks_per_node=max(1, request.gpus),
                               timeout_min=minutes, slurm_signal_delay_s=min(90, 10 * minutes),
                               **{k: v for k, v in given.items() if v is not None})
    try:
        with redirect_stderr(io.StringIO()):  # submitit echoes sbatch's stderr; its exception holds the same text
            return executor.submit(SlurmRun(), cfg, os.getcwd()).job_id
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
