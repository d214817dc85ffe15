"""Preemption: a termination signal makes a run checkpoint at the end of the step it is in and leave at once.

SLURM sends SIGTERM on `scontrol requeue`, on preemption and at the time limit (then SIGKILL after
`KillWait`), and submitit asks for SIGUSR2 `signal_delay_s` ahead of the limit; Kubernetes and systemd send
SIGTERM too. While `train` runs in a process's main thread, `Preemption` catches both: the handler only
sets a flag; the loop sees it after the current step, writes a checkpoint at that step (curves flushed first,
as for every checkpoint) and raises `Preempted`. A handler that was installed before (submitit's, which
requeues the job on SIGUSR2) is called then, after the checkpoint exists. The resumed run goes on from that
step: no step is trained twice or lost.

`Preempted` is a BaseException, like KeyboardInterrupt: code that records a run's own errors (`except
Exception`) does not take it for one; a sweep worker releases its trial for a retry and exits.
"""
from __future__ import annotations

import signal
import threading

SIGNALS = (signal.SIGTERM, signal.SIGUSR2)


class Preempted(BaseException):
    def __init__(self, signum: int, step: int):
        super().__init__(f"{signal.Signals(signum).name} at step {step}: checkpointed; resuming continues from there")
        self.signum, self.step = signum, step


class Preemption:
    """While entered (main thread only; elsewhere a no-op): `received` is the signal that asked the run to stop."""

    def __init__(self):
        self.received: int | None = None
        self.previous: dict[int, object] = {}

    def __enter__(self) -> Preemption:
        if threading.current_thread() is threading.main_thread():
            for signum in SIGNALS:
                self.previous[signum] = signal.signal(signum, self._handle)
        return self

    def __exit__(self, *exc) -> None:
        for signum, handler in self.previous.items():
            signal.signal(signum, handler)
        self.previous = {}

    def _handle(self, signum: int, frame) -> None:
        self.received = self.received or signum

    def leave(self, step: int) -> None:
        """After the checkpoint: give the signal to the handler that was there before, then raise Preempted."""
        signum = self.received
        previous = self.previous.get(signum)
        self.__exit__()
        if callable(previous):  # submitit: requeue the job (SIGUSR2), or log and bypass (SIGTERM)
            previous(signum, None)
        raise Preempted(signum, step)
