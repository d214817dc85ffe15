"""The Ray backend: Ray Tune runs the trials, on a local Ray instance or a cluster; the study asks them.

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

The driver (ray.init, Tuner.fit, ray.shutdown) is a child process in its own session, so every
process the local Ray instance starts can be found and killed when it ends: none outlives the
command. Three paths end them: the driver itself after ray.shutdown (before it releases the trials
Tune stopped, so their workers are known gone); this command after the driver exits; and, when this
command is killed with SIGKILL (Linux then kills the driver, see `die_with_parent`), a reaper forked
by the driver that outlives it. The instance's session files and auth token go to a temp dir removed
afterwards, never to /tmp/ray or ~/.ray; Tune's output goes to ROOT/NAME/ray/STUDY.log.
"""
from __future__ import annotations

import multiprocessing as mp
import os
import secrets
import shutil
import signal
import socket
import tempfile
from pathlib import Path

from sweep.backends.base import Backend, Execution
from sweep.backends.processes import become_subreaper, die_with_parent, end_session, reap_children, start_reaper
from sweep.errors import InputError
from sweep.study.spec import RaySpec
from sweep.study.study import SweepJob

STOP_TIMEOUT_S = 60.0


class RayBackend(Backend):
    name = "ray"
    flags = tuple(RaySpec.model_fields)

    def __init__(self, workers: int, options: RaySpec):
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

    def launch(self, job: SweepJob) -> "RayExecution":
        temp_dir = tempfile.mkdtemp(prefix="sweep-ray-")
        log = Path(job.root) / job.spec.name / "ray" / f"{job.study_name}.log"
        log.parent.mkdir(parents=True, exist_ok=True)
        driver = mp.get_context("spawn").Process(target=driver_main, name="sweep-ray-driver",
                                                 args=(job, self.options, self.max_concurrent, temp_dir, str(log)))
        driver.start()
        return RayExecution(driver, temp_dir, log, self.options, self.max_concurrent)


def check_address(address: str) -> None:
    """A cluster address must be HOST:PORT or ray://HOST:PORT, and answer (`auto` is Ray's own lookup)."""
    if address == "auto":
        return
    host, _, port = address.removeprefix("ray://").rpartition(":")
    if not host or not port.isdigit():
        raise InputError(f"--address: {address!r} is not HOST:PORT, ray://HOST:PORT or auto")
    try:
        socket.create_connection((host, int(port)), timeout=5).close()
    except OSError as err:
        raise InputError(f"--address: cannot reach the Ray cluster at {address} ({err.strerror or err})") from None


class RayExecution(Execution):
    def __init__(self, driver, temp_dir: str, log: Path, options: RaySpec, max_concurrent: int):
        self.driver, self.temp_dir, self.log = driver, temp_dir, log
        self.options, self.max_concurrent = options, max_concurrent

    def running(self) -> bool:
        if self.driver.is_alive():
            return True
        self.clean_up()
        return False

    def stop(self) -> None:
        if self.driver.is_alive():
            os.kill(self.driver.pid, signal.SIGINT)  # Tune stops its trials; the driver releases theirs
            self.driver.join(STOP_TIMEOUT_S)
        self.clean_up()

    def clean_up(self) -> None:
        """End what the driver's session left (a driver killed before ray.shutdown), remove the temp dir."""
        if self.driver.is_alive():
            self.driver.kill()
        self.driver.join()
        end_session(self.driver.pid, STOP_TIMEOUT_S)
        shutil.rmtree(self.temp_dir, ignore_errors=True)

    def errors(self) -> list[str]:
        code = self.driver.exitcode
        if code in (None, 0, -signal.SIGINT):
            return []
        return [f"the Ray Tune driver (pid {self.driver.pid}) exited with code {code}; log: {self.log}"]

    def describe(self) -> str:
        where = f"the Ray cluster at {self.options.address}" if self.options.address else "a local Ray instance"
        return (f"Ray Tune on {where}, {self.max_concurrent} trial(s) at once, {self.options.cpus_per_trial:g} CPU and "
                f"{self.options.gpus_per_trial:g} GPU per trial (driver pid {self.driver.pid}, log {self.log})")


def end_driver_session(temp_dir: str) -> None:
    """In the reaper, once the driver is gone: end the rest of its session and remove the temp dir."""
    end_session(os.getsid(0), STOP_TIMEOUT_S, spare=(os.getpid(),))
    shutil.rmtree(temp_dir, ignore_errors=True)


def enter_driver(temp_dir: str, log: str, address: str | None) -> None:
    """The start of a Ray driver process: its own session (Ray's processes join it), dying with its parent,
    a reaper that ends the session however the driver dies, its output to `log`, and for a private
    instance (no `address`) a fresh auth token in the temp dir."""
    os.setsid()
    die_with_parent()
    become_subreaper()  # Ray's processes orphaned by the shutdown are reaped here, not left as zombies
    start_reaper(lambda: end_driver_session(temp_dir))
    with open(log, "a") as out:
        os.dup2(out.fileno(), 1)
        os.dup2(out.fileno(), 2)
    if address is None:
        token = Path(temp_dir) / "auth_token"
        token.write_text(secrets.token_hex(32))
        token.chmod(0o600)
        os.environ["RAY_AUTH_TOKEN_PATH"] = str(token)
    os.environ.setdefault("RAY_AIR_NEW_OUTPUT", "0")


def init_ray(address: str | None, temp_dir: str, runtime_env: dict | None = None) -> None:
    """Join the cluster at `address`, or start a private instance with every CPU, its session files in `temp_dir`."""
    import ray

    if address is None:
        ray.init(num_cpus=os.cpu_count(), _temp_dir=temp_dir, include_dashboard=False, log_to_driver=False,
                 runtime_env=runtime_env)
    else:
        ray.init(address=address, log_to_driver=False, runtime_env=runtime_env)


def leave_driver() -> None:
    """Shut Ray down and end what the shutdown left in the driver's session (the reaper too)."""
    import ray

    ray.shutdown()
    end_session(os.getpid(), STOP_TIMEOUT_S, spare=(os.getpid(),))
    reap_children()


def driver_main(job: SweepJob, options: RaySpec, max_concurrent: int, temp_dir: str, log: str) -> None:
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
        tuner = tune.Tuner(trainable, tune_config=tune.TuneConfig(search_alg=searcher, num_samples=-1, reuse_actors=True,
                                                                  max_concurrent_trials=max_concurrent),
                           run_config=tune.RunConfig(name=job.study_name, storage_path=str(Path(temp_dir) / "tune"),
                                                     failure_config=tune.FailureConfig(max_failures=0), verbose=0))
        tuner.fit()
    except KeyboardInterrupt:
        pass
    finally:
        leave_driver()
        retry_stale(searcher.study)  # trials whose workers Tune stopped are released for the next command
