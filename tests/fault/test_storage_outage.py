"""The storage unreachable mid-sweep: PostgreSQL stopped under a 2-worker `sweep proxy`, then started again.

- Back within `storage_retry_s`: every storage call waits it out (retries with backoff), the trials
  that were training finish after the restart, nothing is lost and the count is exact.
- Down past `storage_retry_s`: the workers stop, each with one line naming the storage (redacted),
  exit 1; once the server is back the same command completes the study, earlier trials kept.
- The password never appears in the output, the study folder or the storage's attributes.
- The retry schedule (sweep/study/storage/_resilient.py): 0.5 s doubling, capped at 10 s, the last try at the
  bound; the command's own up-front open does not wait (bad input).
"""
from __future__ import annotations

import datetime
import json
import subprocess
import time
from pathlib import Path

import optuna
import pytest
from optuna.trial import TrialState

from sweep.errors import EnvironmentFault, InputError
from sweep.study.storage import open_storage, storage_url
from sweep.study.storage._resilient import backoff
from sweep.study.study import counts
from tests.services import end_postgres, free_port, new_postgres
from tests.sweep_helpers import load, run_sweep, sweep_cmd, sweep_env, wait_for, write_spec

# 100 steps: about 1.5 s of training on an idle core, the time the test has to stop the server mid-trial
RUN = {"steps": 100, "log_every": 5, "eval": {"every": 10}, "checkpoint": {"every": 50, "keep": 2}}
OUTAGE_S = 5.0


@pytest.fixture(scope="module")
def own_postgres():
    """A PostgreSQL server of these tests' own: they stop it, while other workers' tests use the run's shared one."""
    server = new_postgres()
    yield server
    end_postgres(server)


@pytest.fixture
def server(own_postgres):
    """The module's PostgreSQL, running again after the test whatever happened."""
    yield own_postgres
    if not own_postgres.running():
        own_postgres.start()


def secret_url(server) -> str:
    return f"postgresql+psycopg://sweep:{server.password}@127.0.0.1:{server.port}/sweep"


def start_sweep(tmp_path: Path, server, spec: Path) -> tuple[subprocess.Popen, list[str], dict]:
    command = sweep_cmd("proxy", spec, "--width", "16", "--workers", "2", "--storage", server.url,
                        "--storage-password-env", "PGPASS_SWEEP")
    env = sweep_env(tmp_path, PGPASS_SWEEP=server.password)
    proc = subprocess.Popen(command, env=env, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    return proc, command, env


def trials(tmp_path: Path, server, name: str) -> list[optuna.trial.FrozenTrial]:
    try:
        return load(tmp_path, name, storage=secret_url(server)).trials
    except KeyError:  # not created yet
        return []


def poller(server, name: str):
    """The study's trials as they are now, through one kept connection (polled every 0.2 s while the
    sweep runs; dropped by the server's stop)."""
    storage = optuna.storages.RDBStorage(secret_url(server))

    def now() -> list[optuna.trial.FrozenTrial]:
        try:
            return optuna.load_study(study_name=f"{name}-w16-mup", storage=storage).get_trials(deepcopy=False)
        except KeyError:  # not created yet
            return []

    return now


def assert_password_nowhere(tmp_path: Path, server, name: str, *outputs: str) -> None:
    secret = server.password
    assert not any(secret in text for text in outputs)
    files = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert files and not [p for p in files if secret.encode() in p.read_bytes()]
    for t in trials(tmp_path, server, name):
        assert secret not in json.dumps(t.user_attrs) + json.dumps(t.system_attrs)


def test_the_retry_waits_double_from_half_a_second_up_to_ten():
    assert [backoff(i) for i in range(8)] == [0.5, 1, 2, 4, 8, 10, 10, 10]


def test_a_worker_waits_for_an_unreachable_storage_until_the_bound_and_the_command_itself_does_not(tmp_path):
    url = storage_url(f"postgresql://sweep@127.0.0.1:{free_port()}/sweep", None, tmp_path / "x.db", retry_s=2)
    started = time.monotonic()
    with pytest.raises(EnvironmentFault) as fault:
        open_storage(url, wait=True)
    waited = time.monotonic() - started
    assert 2 <= waited < 3.5  # tries at 0, 0.5, 1.5 and 2 s (the bound); the next would have been at 3.5 s
    assert str(fault.value).startswith(f"storage {url.redacted}: unreachable for 2 s "
                                       "(storage_retry_s; OperationalError")
    started = time.monotonic()
    with pytest.raises(InputError, match="storage: cannot open"):
        open_storage(url)
    assert time.monotonic() - started < 1.5


def test_postgresql_stopped_and_started_again_mid_sweep_loses_nothing(tmp_path, server):
    spec = write_spec(tmp_path, name="outage", trials=2, storage_retry_s=120, run=RUN)
    proc, _, _ = start_sweep(tmp_path, server, spec)
    now = poller(server, "outage")
    try:
        def both_running():  # from then on neither trial can report nor finish without the database
            running = [t.number for t in now() if t.state == TrialState.RUNNING]
            return len(running) == 2 and running
        training = wait_for(both_running, 180, "a trial running in each worker")
        server.stop()
        time.sleep(OUTAGE_S)
        assert proc.poll() is None  # waiting, not failed
        restarted = datetime.datetime.now()
        server.start()
        out, err = proc.communicate(timeout=240)
    finally:
        proc.kill()
    assert proc.returncode == 0, out + err
    assert err.strip() == ""
    study = load(tmp_path, "outage", storage=secret_url(server))
    assert sum(map(counts, study.trials)) == 2
    # the trials running at the stop finished in place (not failed, not retried), each evaluation reported
    # once; the ones the stop caught before their end (all but in a photo finish) finished after the restart
    assert [(t.number, t.state) for t in study.trials] == [(n, TrialState.COMPLETE) for n in sorted(training)]
    assert all(sorted(t.intermediate_values) == list(range(10, 101, 10)) for t in study.trials)
    assert any(t.datetime_complete > restarted for t in study.trials)
    assert_password_nowhere(tmp_path, server, "outage", out, err)


def test_postgresql_down_past_the_bound_stops_the_workers_with_one_line_and_the_rerun_completes(tmp_path, server):
    retry_s = 3
    spec = write_spec(tmp_path, name="outage-bound", trials=3, storage_retry_s=retry_s, run=RUN)
    proc, command, env = start_sweep(tmp_path, server, spec)
    now = poller(server, "outage-bound")
    try:
        def complete_and_running():
            now_trials = now()
            states = [t.state for t in now_trials]
            return TrialState.COMPLETE in states and TrialState.RUNNING in states and now_trials
        trials = wait_for(complete_and_running, 180, "a trial complete, one running")
        before = {t.number: (t.params, t.value) for t in trials if t.state == TrialState.COMPLETE}
        stopped = time.monotonic()
        server.stop()
        out, err = proc.communicate(timeout=120)
        waited = time.monotonic() - stopped
    finally:
        proc.kill()
    assert proc.returncode == 1, out + err
    assert waited >= retry_s  # retried for the bound first
    lines = err.strip().splitlines()
    assert lines and all(line.startswith(f"error: storage {server.url}: unreachable for {retry_s} s (storage_retry_s; ")
                         and line.endswith("the same command resumes once it is back") for line in lines), err

    server.start()
    again = run_sweep(tmp_path, *command[3:], env=env, cwd=tmp_path)
    assert again.returncode == 0, again.stdout + again.stderr
    study = load(tmp_path, "outage-bound", storage=secret_url(server))
    assert sum(map(counts, study.trials)) == 3
    assert {n: (study.trials[n].params, study.trials[n].value) for n in before} == before
    assert_password_nowhere(tmp_path, server, "outage-bound", out, err, again.stdout, again.stderr)
