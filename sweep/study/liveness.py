"""Liveness of running trials: a dead worker's trial is found, failed and retried; nothing is counted twice.

Optuna keeps heartbeats only on RDB storages, not on journal files, so the sweep keeps one
record of its own on every storage (system attributes of the trial):
- `sweep:worker` = who runs it (host and boot id, pid, the process's start time), set on claiming;
- `sweep:heartbeat` = {time, step, loss}, rewritten every HEARTBEAT_S by a thread of the worker
  (the live view reads step and loss from it).
A RUNNING trial is stale when its worker is on this machine and that process is gone (known at
once, so the same command after a kill -9 retries immediately), or when its heartbeat is older
than GRACE_S (a worker on a lost machine). A stale trial is failed, which only one process can do
(a finished trial cannot be updated), and that process enqueues its parameters again with
`retry_of` = the first trial of the chain: the retry trains in the same run folder and resumes
from the dead trial's last checkpoint when it has one.
"""
from __future__ import annotations

import os
import threading
import time

import optuna
from optuna.exceptions import UpdateFinishedTrialError
from optuna.trial import FrozenTrial, TrialState

from sweep.cluster.processes import machine_id, process_start, this_process

HEARTBEAT_S = 5.0
GRACE_S = 60.0
WORKER, HEARTBEAT = "sweep:worker", "sweep:heartbeat"


def this_worker() -> dict:
    return this_process(os.getpid())


def stale_reason(trial: FrozenTrial, now: float, machine: str) -> str | None:
    """Why a RUNNING trial is known dead, or None while it may be alive."""
    if trial.state != TrialState.RUNNING:
        return None
    worker = trial.system_attrs.get(WORKER)
    if worker and worker["machine"] == machine:
        if process_start(worker["pid"]) != worker["start"]:
            return f"worker process {worker['pid']} on this machine is gone"
        return None
    beat = trial.system_attrs.get(HEARTBEAT, {}).get("time")
    if beat is None:
        started = trial.datetime_start.timestamp() if trial.datetime_start else now
        return f"no heartbeat {now - started:.0f} s after start" if now - started > GRACE_S else None
    return f"no heartbeat for {now - beat:.0f} s" if now - beat > GRACE_S else None


def retry_stale(study: optuna.Study) -> list[int]:
    """Fail every stale RUNNING trial and enqueue its parameters again; the numbers failed here."""
    now, machine, failed = time.time(), machine_id(), []
    for trial in study.get_trials(deepcopy=False, states=(TrialState.RUNNING,)):
        reason = stale_reason(trial, now, machine)
        if reason is not None and release(study, trial, f"worker lost: {reason}"):
            failed.append(trial.number)
    return failed


def release(study: optuna.Study, trial: FrozenTrial | optuna.Trial, reason: str) -> bool:
    """Fail a RUNNING trial that did not finish (worker lost, Ctrl-C) and enqueue its parameters again.

    Returns False when another process finished or released it first (it then owns the retry). A trial lost before
    its objective drew its parameters has none recorded: under a grid its point is the one the sampler gave it
    (`grid_point`), since Optuna's GridSampler counts a failed trial's point as visited and refuses an empty enqueue;
    under any other sampler nothing is enqueued, and the sampler draws afresh.
    """
    storage = study._storage  # Optuna's Study can only fail trials it asked for itself
    try:
        storage.set_trial_user_attr(trial._trial_id, "reason", f"{reason}; retried")
        if not storage.set_trial_state_values(trial._trial_id, state=TrialState.FAIL):
            return False
    except UpdateFinishedTrialError:
        return False
    params = trial.params or grid_point(study, trial)
    if params:
        study.enqueue_trial(params, user_attrs={"retry_of": trial.user_attrs.get("retry_of", trial.number)})
    return True


def grid_point(study: optuna.Study, trial: FrozenTrial | optuna.Trial) -> dict:
    """The point a GridSampler gave `trial` (its `grid_id` into the sampler's grid, which Optuna keeps in private
    attributes: `_all_grids`, shuffled by the sampler's seed, and `_param_names`), {} under any other sampler."""
    attrs = trial.system_attrs if isinstance(trial, FrozenTrial) else \
        study._storage.get_trial_system_attrs(trial._trial_id)  # a live Trial keeps them in the storage alone
    sampler, grid_id = study.sampler, attrs.get("grid_id")
    grids, names = getattr(sampler, "_all_grids", None), getattr(sampler, "_param_names", None)
    if not isinstance(sampler, optuna.samplers.GridSampler) or grid_id is None or grids is None or names is None:
        return {}
    return dict(zip(names, grids[grid_id], strict=True))


class Heartbeat:
    """While a trial runs: stamp it with this worker and rewrite its heartbeat every `interval` s.

    `lost` turns true when the trial is no longer RUNNING under this worker (another process
    judged it stale and failed it): the trainer's on_eval callback then stops the run.
    """

    def __init__(self, storage: optuna.storages.BaseStorage, trial_id: int, interval: float = HEARTBEAT_S):
        self.storage, self.trial_id, self.interval = storage, trial_id, interval
        self.progress: dict = {}
        self.lost = False
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"heartbeat-{trial_id}", daemon=True)

    def __enter__(self) -> Heartbeat:
        self.storage.set_trial_system_attr(self.trial_id, WORKER, this_worker())
        self.beat()
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()

    def update(self, step: int, loss: float) -> None:
        self.progress = {"step": step, "loss": loss}

    def beat(self) -> None:
        try:
            self.storage.set_trial_system_attr(self.trial_id, HEARTBEAT, {"time": time.time(), **self.progress})
        except UpdateFinishedTrialError:
            self.lost = True

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            try:
                self.beat()
            except Exception:  # a storage hiccup must not kill the trial; the next beat retries
                continue
