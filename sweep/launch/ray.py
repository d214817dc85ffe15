"""`--backend ray`: one Ray task that trains the run, on a cluster (`--address`) or a private local instance.

Why one remote task and not Ray Train's TorchTrainer: the trainer already resumes from its own
checkpoints and joins its process group from torchrun's environment, so a task holding the run's
GPUs (`num_gpus`) that trains in place (one GPU or CPU) or runs torch's elastic launcher over its GPUs
needs no second checkpoint or process-group path. The price: one node per run (`--nodes` is SLURM's).

The driver (ray.init, the task, ray.shutdown) is a `sweep.cluster.ray` driver, in its own session with a
reaper: a private instance's session files and auth token live in a temp dir, and
no Ray process outlives the command, even one killed with SIGKILL. The driver's output goes to
RUN_DIR/ray.log. A task lost with its worker or node is retried by Ray (`max_retries`) and resumes from
the run's latest checkpoint; so does `sweep launch` again.
"""
from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from rich.console import Console

from sweep.cluster.processes import this_process
from sweep.cluster.ray import enter_driver, init_ray, leave_driver, start_driver
from sweep.launch.local import elastic_command
from sweep.runs.record import read_result, write_record
from trainer.config import RunConfig
from trainer.loop import train

TASK_RETRIES = 3


def train_task(cfg: RunConfig, cwd: str, gpus: int) -> str:
    """Inside Ray: train with resume in the folder `sweep launch` ran in; over several GPUs, under torchrun."""
    os.chdir(cwd)
    if gpus <= 1:
        return train(cfg, resume=True).status
    with tempfile.NamedTemporaryFile("w", suffix=".yaml", dir=cfg.run_dir()) as config:
        config.write(cfg.to_yaml())
        config.flush()
        subprocess.run(elastic_command(Path(config.name), gpus), check=True)
    return read_result(cfg.run_dir())["status"]


def driver_main(cfg: RunConfig, cwd: str, address: str | None, gpus: int, temp_dir: str, log: str) -> None:
    """Start (or join) Ray, run the task to its end, shut down; exit 0 when the run completed."""
    enter_driver(temp_dir, log, address)
    import ray

    init_ray(address, temp_dir)
    try:
        task = ray.remote(num_cpus=1, num_gpus=gpus, max_retries=TASK_RETRIES)(train_task)
        status = ray.get(task.remote(cfg, cwd, gpus))
        print(f"{cfg.run_id()}: {status}", flush=True)
    finally:
        leave_driver()
    sys.exit(0 if status == "completed" else 1)


def launch_ray(cfg: RunConfig, address: str | None, gpus: int, console: Console) -> int:
    """Run the driver to its end (Ctrl-C ends it and its Ray processes; launching again resumes)."""
    log = (cfg.run_dir() / "ray.log").resolve()
    started = start_driver(driver_main, "sweep-launch-ray", (cfg, os.getcwd(), address, gpus), log)
    driver = started.process
    where = f"the Ray cluster at {address}" if address else "a local Ray instance"
    record = write_record(cfg, {"backend": "ray", "job": f"driver pid {driver.pid}",
                                "process": this_process(driver.pid), "address": address, "gpus_per_node": gpus,
                                "log": str(log), "launched": time.time()})
    console.print(f"Ray: one task on {where} ({gpus} GPU); log {log}; checkpoints {record['checkpoints']}; "
                  f"curve {record['curve']}")
    try:
        driver.join()
    except KeyboardInterrupt:
        console.print("stopped; `sweep launch` again resumes from the run's latest checkpoint")
        return 130
    finally:
        started.end()
    return 0 if driver.exitcode == 0 else 1
