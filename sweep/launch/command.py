"""`sweep launch RUN.yaml --backend local|slurm|ray`: start a run (a transferred full run, or any RunConfig)
where it should train, resumable; the same command resumes it, re-attaches to it, or says it is done.

Everything is checked before anything is written: the flags against the backend, the RunConfig, its
data and model name, the scheduler or cluster. Then, from what the run folder says:
- the trainer recorded the run done or diverged: print it, start nothing;
- it was launched and still runs (a SLURM job queued or running, a local or Ray launcher process
  alive): re-attach to the SLURM job, or say where it runs;
- else launch it; the trainer resumes from the run's latest checkpoint, if any.
"""
from __future__ import annotations

import os
from pathlib import Path

from rich.console import Console

from proxies.registry import check_model
from sweep.cluster.processes import process_alive
from sweep.launch.request import LaunchRequest
from sweep.paths import load_run_config
from sweep.runs.record import finished_state, last_logged, locations, read_record, read_result
from sweep.study.trial import check_run_folder
from trainer.config import RunConfig
from trainer.resolve import resolve
from trainer.tracking import check_trackers


def run_launch(config: Path, request: LaunchRequest, console: Console) -> int:
    request.check()
    cfg = resolve(load_run_config(config))
    check_trackers(cfg)
    source = cfg.data.open(cfg.seed)
    model = cfg.model
    check_model(model.name, model.width, model.depth, model.parametrization,
                **{**source.model_options(), **model.options})
    if request.backend == "slurm":
        from sweep.cluster.slurm import check_script, check_slurm

        check_slurm()
        check_script(cfg.run_dir() / "slurm", job_name=cfg.run_id())
    if request.backend == "ray" and request.settings.address:
        from sweep.cluster.ray import check_address

        check_address(request.settings.address)

    run_dir = cfg.run_dir()
    check_run_folder(cfg)  # a folder another config trained is never reported as this one's, nor continued
    console.print(f"run {cfg.run_id()} ({cfg.output.kind}) in {run_dir.resolve()}")
    if state := finished_state(run_dir):
        return report(state, cfg, console)
    record = read_record(run_dir)
    where = still_launched(record)
    if where and not (request.backend == record["backend"] == "slurm"):  # a SLURM job of this backend is re-attached
        console.print(f"already {where}; not starting it twice")
        return 0
    if request.backend == "local":
        from sweep.backends.local import launch_local

        code = launch_local(cfg, config, request.processes, console)
    elif request.backend == "slurm":
        from sweep.backends.slurm import launch_slurm

        code = launch_slurm(cfg, request.settings, request.detach, record, console)
    else:
        from sweep.backends.ray import launch_ray

        code = launch_ray(cfg, request.settings.address, request.gpus, console)
    state = finished_state(run_dir)
    return report(state, cfg, console) if state and not request.detach else code


def still_launched(record: dict | None) -> str | None:
    """Where the recorded launch still holds the run (a SLURM job queued or running, a launcher process alive
    on this machine other than this one), or None."""
    if record is None:
        return None
    if record["backend"] == "slurm":
        from sweep.cluster.slurm import active, job_state

        state = job_state(record["job"])[0]
        return f"{state.lower()} as SLURM job {record['job']}" if active(state) else None
    alive = process_alive(record["process"]) and record["process"]["pid"] != os.getpid()
    return f"running ({record['backend']}, {record['job']})" if alive else None


def report(state: str, cfg: RunConfig, console: Console) -> int:
    """One line on a finished run: its state, last step and losses, where its files are; 0 when done."""
    result = read_result(cfg.run_dir())
    where = locations(cfg)
    val = f", val loss {result['val_loss']:.4f}" if result.get("val_loss") is not None else ""
    logged = last_logged(Path(where["curve"]))
    loss = f", train loss {logged['train_loss']:.4f}" if logged else ""
    reason = f" ({result['reason']})" if result.get("reason") else ""
    console.print(f"{state}: step {result['step']}{loss}{val}{reason}; checkpoints {where['checkpoints']}; "
                  f"curve {where['curve']}")
    return 0 if state == "done" else 1
