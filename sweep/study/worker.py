"""A worker: run trials of one study until it has its count. Every backend runs this, wherever it runs."""
from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager

import optuna
import torch

from sweep.errors import EnvironmentFault
from sweep.study.liveness import release
from sweep.study.storage import open_storage
from sweep.study.study import SweepJob, claim, open_study, seed_by_first_trial
from sweep.study.trial import run_trial
from trainer.preemption import Preempted


@contextmanager
def no_ctrl_c() -> Iterator[None]:
    """SIGINT ignored in the block, then as it was: a caller in this process (a test, a library user) keeps its
    Ctrl-C, and a child started later does not inherit an ignored one."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def run_worker(job: SweepJob) -> int:
    """Claim and run trials until the study has `job.n_trials` counted or the deadline passes.

    Returns how many trials this worker ran. Ctrl-C (KeyboardInterrupt) and a termination signal (Preempted,
    raised once the run has checkpointed) release the running trial for a retry, so the next `sweep proxy`
    or the requeued task resumes it, then propagate. A full disk or an unreachable
    storage (EnvironmentFault) propagates without a release: the storage may be what failed, and a
    release cut in half on a full disk (failed, not enqueued again) would lose the retry. The trial
    stays RUNNING under this exited worker; the next `sweep proxy` finds it stale (at once on this
    machine, after the heartbeat grace on another) and retries it from its last checkpoint.
    """
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    if job.threads:
        torch.set_num_threads(job.threads)
    study = open_study(job, open_storage(job.storage, wait=True), create=False)
    ran = 0
    while (trial := claim(study, job.n_trials, job.deadline)) is not None:
        if ran == 0:
            seed_by_first_trial(study, job, trial.number)
        try:
            run_trial(job, study, trial)
        except EnvironmentFault:
            raise
        except BaseException as err:
            with no_ctrl_c():  # a second Ctrl-C must not cut the release short
                release(study, trial, f"preempted: {err}" if isinstance(err, Preempted) else "interrupted")
            raise
        ran += 1
    return ran
