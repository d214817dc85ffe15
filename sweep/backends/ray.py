"""The Ray backend, two entry points: a sweep's trials run by Ray Tune, on a local Ray instance or a cluster, the
study asking them (`RayBackend`); one full run as one Ray task (`launch_ray`).

How Tune and the study meet: Tune executes trials asked from the study. Its searcher is the study's
own `claim_once` (in the driver), each Tune trial runs `run_trial` on one Optuna trial in a Ray
worker, and the study's pruner (inside `run_trial`) judges it; neither OptunaSearch nor ASHA:
- the exact count and the retry of a dead worker's trial live in the study, shared by every
  backend. A Ray worker killed mid-trial leaves its Optuna trial RUNNING with a dead process; the
  next `suggest` finds it stale, fails it and claims its retry, which resumes the run's checkpoint.
  Tune's own retry (`max_failures`) is off: it would train the same Tune trial again outside the
  study's count.
- the pruner's state is the storage, so a study continued on another backend is pruned by the same
  rule; ASHA's rungs would live in this driver and die with it.
Tune gives what is Ray's: placement (fractional GPUs, CPUs per trial), concurrency, worker processes.
Tune reuses its trial actors (every trial asks the same resources), so a Ray worker starts and imports
torch and the trainer once, not once per trial (benchmarks/backends_overhead.py: the in-trial
overhead fell from ~5 s to ~0.3 s per trial on 2 loaded cores).

The driver (ray.init, Tuner.fit, ray.shutdown) is a `sweep.cluster.ray` driver: a child process in its own
session, none of whose processes outlives the command; it shuts Ray down before it releases the trials Tune
stopped, so their workers are known gone. Tune's output goes to ROOT/NAME/ray/STUDY.log.

One full run (`sweep launch --backend ray`, `launch_ray`): one Ray task that trains the run, on a cluster
(`--address`) or a private local instance.

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
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from rich.console import Console

from sweep.backends.base import Backend, Execution
from sweep.backends.local import elastic_command
from sweep.cluster.processes import this_process
from sweep.cluster.ray import STOP_TIMEOUT_S, Driver, check_address, enter_driver, init_ray, leave_driver, start_driver
from sweep.errors import InputError
from sweep.runs.record import read_result, write_record
from sweep.study.study import SweepJob
from trainer.config import RunConfig

TASK_RETRIES = 3  # a run's task lost with its worker or node


class RayBackend(Backend):
    name = "ray"

    def __init__(self, workers: int, options: Any):
        if workers < 1:
            raise InputError(f"--workers: must be at least 1 (trials at once), got {workers}")
        self.options = options
        self.max_concurrent = options.max_concurrent or workers

    def check(self, job: SweepJob) -> None:
        address = self.options.address
        if address is None and self.options.gpus_per_trial > 0:
            import torch

            if torch.cuda.device_count() == 0:  # Tune would wait for a GPU forever
                raise InputError(f"--gpus-per-trial: {self.options.gpus_per_trial:g}, but this machine has no GPU for "
                                 "the local Ray instance (0, or --address of a cluster with GPUs)")
        if address is None or address == "auto":
            return
        if job.storage.url.startswith("sqlite:"):
            raise InputError("--storage: a Ray cluster needs a storage every node reaches: journal:PATH on a shared "
                             "filesystem or a SQLAlchemy URL (postgresql://…); SQLite is for one machine")
        check_address(address)

    def launch(self, job: SweepJob) -> RayExecution:
        log = Path(job.root) / job.spec.name / "ray" / f"{job.study_name}.log"
        driver = start_driver(driver_main, "sweep-ray-driver", (job, self.options, self.max_concurrent), log)
        return RayExecution(driver, log, self.options, self.max_concurrent)


class RayExecution(Execution):
    def __init__(self, driver: Driver, log: Path, options: Any, max_concurrent: int):
        self.driver, self.log = driver.process, log
        self.end = driver.end
        self.options, self.max_concurrent = options, max_concurrent

    def running(self) -> bool:
        if self.driver.is_alive():
            return True
        self.end()
        return False

    def stop(self) -> None:
        if self.driver.is_alive():
            os.kill(self.driver.pid, signal.SIGINT)  # Tune stops its trials; the driver releases theirs
            self.driver.join(STOP_TIMEOUT_S)
        self.end()

    def errors(self) -> list[str]:
        code = self.driver.exitcode
        if code in (None, 0, -signal.SIGINT):
            return []
        return [f"the Ray Tune driver (pid {self.driver.pid}) exited with code {code}; log: {self.log}"]

    def describe(self) -> str:
        where = f"the Ray cluster at {self.options.address}" if self.options.address else "a local Ray instance"
        return (f"Ray Tune on {where}, {self.max_concurrent} trial(s) at once, {self.options.cpus_per_trial:g} CPU and "
                f"{self.options.gpus_per_trial:g} GPU per trial (driver pid {self.driver.pid}, log {self.log})")


def driver_main(job: SweepJob, options: Any, max_concurrent: int, temp_dir: str, log: str) -> None:
    """Start (or join) Ray, run Tune until the study has its count, release what was stopped, shut down."""
    enter_driver(temp_dir, log, options.address)
    from ray import tune

    from sweep.backends.ray_tune import StudySearcher, run_one
    from sweep.study.liveness import retry_stale

    # Tune would run each trial in its own trial folder; relative paths (a journal, the spec's data) mean
    # the command's folder, where the workers of a local instance start
    init_ray(options.address, temp_dir, {"env_vars": {"RAY_CHDIR_TO_TRIAL_DIR": "0"}})
    searcher = StudySearcher(job)
    try:
        trainable = tune.with_resources(tune.with_parameters(run_one, job=job),
                                        {"cpu": options.cpus_per_trial, "gpu": options.gpus_per_trial})
        tuner = tune.Tuner(trainable, tune_config=tune.TuneConfig(search_alg=searcher, num_samples=-1,
                                                                  reuse_actors=True,
                                                                  max_concurrent_trials=max_concurrent),
                           run_config=tune.RunConfig(name=job.study_name, storage_path=str(Path(temp_dir) / "tune"),
                                                     failure_config=tune.FailureConfig(max_failures=0), verbose=0))
        tuner.fit()
    except KeyboardInterrupt:
        pass
    finally:
        leave_driver()
        retry_stale(searcher.study)  # trials whose workers Tune stopped are released for the next command



def train_task(cfg: RunConfig, cwd: str, gpus: int) -> str:
    """Inside Ray: train with resume in the folder `sweep launch` ran in; over several GPUs, under torchrun."""
    os.chdir(cwd)
    if gpus <= 1:
        from trainer.loop import train

        return train(cfg, resume=True).status
    with tempfile.NamedTemporaryFile("w", suffix=".yaml", dir=cfg.run_dir()) as config:
        config.write(cfg.to_yaml())
        config.flush()
        subprocess.run(elastic_command(Path(config.name), gpus), check=True)
    return read_result(cfg.run_dir())["status"]


def run_driver_main(cfg: RunConfig, cwd: str, address: str | None, gpus: int, temp_dir: str, log: str) -> None:
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
    started = start_driver(run_driver_main, "sweep-launch-ray", (cfg, os.getcwd(), address, gpus), log)
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
