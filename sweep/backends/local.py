"""The local backend, two entry points: a sweep's K worker processes on this machine (`LocalBackend`), and one full
run here (`launch_local`).

Processes, not threads: each trains with its own torch threads (OMP_NUM_THREADS when set, else cores // K, at
least 1, so workers × threads ≤ cores) and its own Python interpreter. They are spawned (not forked: a fork of
a process that has started torch's thread pools can deadlock) and die with the sweep: a worker
asks the kernel for SIGKILL when its parent exits (Linux PR_SET_PDEATHSIG), so a `kill -9` of
`sweep proxy` leaves no orphan training on, and the next `sweep proxy` finds the trial stale.

One full run (`sweep launch --backend local`): in this process or as N processes under torch's elastic launcher.
One process trains here (`sweep train RUN.yaml --resume`, with its progress bar); N > 1 run
`python -m torch.distributed.run --standalone --nproc-per-node N -m sweep train RUN.yaml --resume`,
whose processes join a gloo (CPU) or NCCL (GPU) group through the trainer's runtime. Either resumes
from the run's latest checkpoint, so the same command continues a killed run. torchrun dies with
this command and its workers with torchrun (PR_SET_PDEATHSIG; torchrun starts each worker in a
session of its own, out of reach of a signal to this one's), so a killed launch leaves no worker
training on beside the next one.
"""
from __future__ import annotations

import multiprocessing as mp
import os
import signal
import subprocess
import sys
import time
from dataclasses import replace
from multiprocessing import resource_tracker
from pathlib import Path

from rich.console import Console

from sweep.backends.base import Backend, Execution
from sweep.cluster.processes import die_with_parent, this_process
from sweep.errors import EnvironmentFault, InputError, held
from sweep.runs.record import write_record
from sweep.study.study import SweepJob
from trainer.config import RunConfig

STOP_TIMEOUT_S = 30.0


def worker_threads(workers: int) -> int:
    """Torch threads per worker: OMP_NUM_THREADS when it is a positive whole number (torch's own default honours
    it, so a user who set it gets it), else the cores shared out, cores // workers, at least 1."""
    asked = os.environ.get("OMP_NUM_THREADS", "").strip()
    if asked.isdigit() and int(asked) > 0:
        return int(asked)
    return max(1, (os.cpu_count() or 1) // workers)


class LocalBackend(Backend):
    name = "local"

    def __init__(self, workers: int = 1):
        if workers < 1:
            raise InputError(f"--workers: must be at least 1, got {workers}")
        self.workers = workers

    def launch(self, job: SweepJob) -> LocalExecution:
        job = replace(job, threads=job.threads or worker_threads(self.workers))
        context = mp.get_context("spawn")
        processes = [context.Process(target=worker_main, args=(replace(job, worker=i),), name=f"sweep-worker-{i}")
                     for i in range(self.workers)]
        # The workers start with Ctrl-C held, not as a traceback mid-import; worker_main takes it. The resource
        # tracker starts first: its start unblocks SIGINT in this thread (multiprocessing's own SIG_UNBLOCK).
        # Here too a Ctrl-C waits (`held`): another thread of ours can take the signal, and a KeyboardInterrupt
        # between spawning a worker and sending it its job leaves it reading a closed pipe (EOFError).
        resource_tracker.ensure_running()
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
        try:
            with held():
                for process in processes:
                    process.start()
        finally:
            signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
        return LocalExecution(processes, job.threads)


class LocalExecution(Execution):
    def __init__(self, processes: list, threads: int):
        self.processes, self.threads = processes, threads

    def running(self) -> bool:
        return any(p.is_alive() for p in self.processes)

    def stop(self) -> None:
        for p in self.processes:
            if p.is_alive():
                os.kill(p.pid, signal.SIGINT)  # the worker releases its trial, then exits
        for p in self.processes:
            p.join(STOP_TIMEOUT_S)
            if p.is_alive():
                p.kill()
                p.join()

    def errors(self) -> list[str]:
        return [f"{p.name} (pid {p.pid}) exited with code {p.exitcode}"
                for p in self.processes if p.exitcode not in (None, 0, -signal.SIGINT)]

    def describe(self) -> str:
        pids = ", ".join(str(p.pid) for p in self.processes)
        return f"{len(self.processes)} local worker(s), {self.threads} torch thread(s) each (pids {pids})"


def worker_main(job: SweepJob) -> None:
    die_with_parent()
    try:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})  # a Ctrl-C held since launch lands here
        from sweep.study.worker import run_worker

        run_worker(job)
    except KeyboardInterrupt:
        os._exit(130)
    except EnvironmentFault as fault:  # one line, not a traceback: the disk or the storage, named
        print(f"error: {fault}", file=sys.stderr, flush=True)
        os._exit(1)



def elastic_command(config: Path, processes: int) -> list[str]:
    """torchrun on one machine (a private rendezvous on a free port) running `sweep train` with resume."""
    return [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc-per-node={processes}",
            "-m", "sweep", "train", str(config), "--resume", "--quiet"]


def launch_local(cfg: RunConfig, config: Path, processes: int, console: Console) -> int:
    """Train here; returns the exit code (0 when the run completed)."""
    record = write_record(cfg, {"backend": "local", "job": f"pid {os.getpid()}", "process": this_process(os.getpid()),
                                "processes": processes, "config": str(config.resolve()), "launched": time.time()})
    console.print(f"local: {processes} process(es); checkpoints {record['checkpoints']}; curve {record['curve']}")
    if processes == 1:
        from sweep.runs.train import run_train

        return 0 if run_train(config, None, True, False, console).status == "completed" else 1
    return subprocess.run(elastic_command(config, processes), preexec_fn=die_with_parent).returncode
