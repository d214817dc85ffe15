"""The exact trial count and liveness, in one process against a real SQLite storage: which trials
count, a worker that lost the race for the last place never trains, a dead worker's trial is failed
once and enqueued again, a live one is left alone."""
import subprocess
import sys
import time

import optuna
import pytest
from optuna.trial import TrialState

from sweep.study import liveness
from sweep.study import study as study_mod
from sweep.study.liveness import HEARTBEAT, WORKER, Heartbeat, retry_stale, stale_reason, this_worker
from sweep.study.study import claim, counts, progress


@pytest.fixture
def study(tmp_path):
    return optuna.create_study(storage=f"sqlite:///{tmp_path / 'o.db'}", study_name="s")


def finish(study, state, **attrs):
    trial = study.ask()
    trial.suggest_float("x", 0, 1)
    for key, value in attrs.items():
        trial.set_user_attr(key, value)
    study.tell(trial, 1.0 if state == TrialState.COMPLETE else None, state=state)


def test_what_counts_toward_the_requested_number(study):
    finish(study, TrialState.COMPLETE)
    finish(study, TrialState.PRUNED)
    finish(study, TrialState.FAIL, error="ValueError: bug")  # the run's own error: counted, not retried
    finish(study, TrialState.FAIL, reason="worker lost: …; retried")  # retried: not counted
    finish(study, TrialState.FAIL, reason="surplus: 3 trials were already taken")
    assert [counts(t) for t in study.trials] == [True, True, True, False, False]
    assert progress(study) == (3, 0)


def test_the_worker_that_loses_the_race_for_the_last_place_never_trains(study, monkeypatch):
    finish(study, TrialState.COMPLETE)
    winner = study.ask()  # another worker took the last place a moment ago…
    views = iter([(1, 0)])  # …after this worker had counted (1 done, 0 running)
    real = study_mod.progress
    monkeypatch.setattr(study_mod, "progress", lambda s: next(views, None) or real(s))
    got = claim(study, n_trials=2, deadline=time.time() + 1.5)
    assert got is None  # it waited for the running trial instead of starting a third
    surplus = study.trials[-1]
    assert surplus.state == TrialState.FAIL and surplus.user_attrs["reason"].startswith("surplus")
    assert study.trials[winner.number].state == TrialState.RUNNING
    assert sum(map(counts, study.trials)) == 1


def test_claim_returns_none_once_the_count_is_reached(study):
    finish(study, TrialState.COMPLETE)
    finish(study, TrialState.PRUNED)
    assert claim(study, n_trials=2) is None
    trial = claim(study, n_trials=3)
    assert trial is not None and trial.number == 2


def test_a_dead_local_worker_is_stale_at_once_and_its_trial_is_retried_once(study):
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    trial = study.ask()
    trial.suggest_float("x", 0, 1)
    study._storage.set_trial_system_attr(trial._trial_id, WORKER,
                                         {"machine": liveness.machine_id(), "pid": dead.pid, "start": "0"})
    assert "is gone" in stale_reason(study.trials[0], time.time(), liveness.machine_id())
    assert retry_stale(study) == [0]
    assert retry_stale(study) == []  # failed once, enqueued once
    failed, retry = study.trials
    assert failed.state == TrialState.FAIL and failed.user_attrs["reason"].startswith("worker lost")
    assert retry.state == TrialState.WAITING and retry.user_attrs["retry_of"] == 0
    assert study.ask().suggest_float("x", 0, 1) == failed.params["x"]  # the retry runs the same point


def test_a_grid_trial_lost_before_it_drew_its_point_is_failed_and_the_grid_runs_every_point_once(tmp_path):
    """Found by an outside tester: a verify killed between a trial's start and its first suggestion left a trial with
    no parameters; its retry was enqueued empty, and Optuna's GridSampler refused it at every rerun ("All parameters
    must be specified when using GridSampler with enqueue_trial")."""
    grid = {"x": [0.1, 0.2, 0.3]}
    study = optuna.create_study(storage=f"sqlite:///{tmp_path / 'o.db'}", study_name="g",
                                sampler=optuna.samplers.GridSampler(grid, seed=0))
    lost = study.ask()  # its worker died before the objective suggested x
    assert liveness.release(study, study.trials[lost.number], "worker lost: test") and not study.trials[0].params
    study.optimize(lambda t: t.suggest_float("x", 0, 1), n_trials=3)
    done = [t.params["x"] for t in study.trials if t.state == TrialState.COMPLETE]
    assert sorted(done) == [0.1, 0.2, 0.3]


def test_a_live_grid_trial_released_by_its_own_worker_keeps_its_point(tmp_path):
    """Found by an outside tester: SIGTERM to `sweep verify --plan` made each worker release its running trial, the
    live `optuna.Trial` it holds; reading its grid point asked the Trial for `system_attrs`, which only a frozen
    trial has: AttributeError, a traceback, and the point was never re-enqueued."""
    grid = {"x": [0.1, 0.2, 0.3]}
    study = optuna.create_study(storage=f"sqlite:///{tmp_path / 'o.db'}", study_name="g",
                                sampler=optuna.samplers.GridSampler(grid, seed=0))
    live = study.ask()  # the worker's own handle; stopped before it suggested x
    assert liveness.release(study, live, "stopped: test")
    study.optimize(lambda t: t.suggest_float("x", 0, 1), n_trials=3)
    assert sorted(t.params["x"] for t in study.trials if t.state == TrialState.COMPLETE) == [0.1, 0.2, 0.3]


def test_a_worker_that_exited_but_was_never_reaped_is_gone():
    """A zombie (exited, unreaped: an orphan of a container whose PID 1 never reaps) is not alive."""
    child = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE)
    assert liveness.process_start(child.pid) is not None
    child.stdin.close()  # it exits
    deadline = time.time() + 60
    while liveness.process_start(child.pid) is not None:  # until it has exited (still unreaped: no wait)
        assert time.time() < deadline, "the child never exited"
        time.sleep(0.05)
    assert open(f"/proc/{child.pid}/stat").read().rsplit(")", 1)[1].split()[0] == "Z"  # a zombie, not reaped
    child.wait()


def test_a_live_worker_is_left_alone_and_a_silent_remote_one_times_out(study):
    trial = study.ask()
    with Heartbeat(study._storage, trial._trial_id, interval=0.05) as beat:
        beat.update(12, 3.5)
        time.sleep(0.2)
        frozen = study.trials[0]
        assert frozen.system_attrs[WORKER] == this_worker()
        assert frozen.system_attrs[HEARTBEAT]["step"] == 12
        assert stale_reason(frozen, time.time(), liveness.machine_id()) is None
        assert retry_stale(study) == []
    remote = {**frozen.system_attrs[HEARTBEAT], "time": time.time() - liveness.GRACE_S - 1}
    study._storage.set_trial_system_attr(trial._trial_id, HEARTBEAT, remote)
    assert stale_reason(study.trials[0], time.time(), "another-host/x/y").startswith("no heartbeat for")
    assert stale_reason(study.trials[0], remote["time"] + liveness.GRACE_S - 1, "another-host/x/y") is None


def test_a_heartbeat_notices_when_its_trial_was_taken_away(study):
    trial = study.ask()
    with Heartbeat(study._storage, trial._trial_id, interval=0.05) as beat:
        study._storage.set_trial_state_values(trial._trial_id, state=TrialState.FAIL)
        time.sleep(0.3)
        assert beat.lost
