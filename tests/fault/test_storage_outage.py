"""The storage unreachable mid-sweep: PostgreSQL stopped under a 2-worker `sweep proxy`, then started again.

- Back within `storage_retry_s`: every storage call waits it out (retries with backoff), the trials
  that were training finish after the restart, nothing is lost and the count is exact.
- Down past `storage_retry_s`: the workers stop, each with one line naming the storage (redacted),
  exit 1; once the server is back the same command completes the study, earlier trials kept.
- The password never appears in the output, the study folder or the storage's attributes.
- The retry schedule (sweep/study/resilient.py): 0.5 s doubling, capped at 10 s, given up when the
  next try would start past the bound; the command's own up-front open does not wait (bad input).
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
from sweep.study.resilient import backoff
from sweep.study.storage import open_storage, storage_url
from sweep.study.study import counts
from tests.services import free_port
from tests.sweep_helpers import load, run_sweep, sweep_cmd, sweep_env, wait_for, write_spec

RUN = {"steps": 40, "log_every": 5, "eval": {"every": 10}, "checkpoint": {"every": 20, "keep": 2}}
OUTAGE_S = 5.0


@pytest.fixture
def server(postgres):
    """The session's PostgreSQL, running again after the test whatever happened."""
    yield postgres
    if not postgres.running():
        postgres.start()


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
    assert 1.5 <= waited < 3.5  # tries at 0, 0.5 and 1.5 s; the next (at 3.5 s) would start past the 2 s bound
    assert str(fault.value).startswith(f"storage {url.redacted}: unreachable for 2 s (storage_retry_s; OperationalError")
    started = time.monotonic()
    with pytest.raises(InputError, match="storage: cannot open"):
        open_storage(url)
    assert time.monotonic() - started < 1.5


def test_postgresql_stopped_and_started_again_mid_sweep_loses_nothing(tmp_path, server):
    spec = write_spec(tmp_path, name="outage", trials=4, storage_retry_s=120, run=RUN)
    proc, _, _ = start_sweep(tmp_path, server, spec)
    try:
        def both_training():
            running = [t for t in trials(tmp_path, server, "outage") if t.state == TrialState.RUNNING]
            return len(running) == 2 and all(t.intermediate_values for t in running) and [t.number for t in running]
        training = wait_for(both_training, 180, "both workers training")
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
    assert sum(map(counts, study.trials)) == 4
    assert all(t.state == TrialState.COMPLETE or t.user_attrs["reason"].startswith("surplus") for t in study.trials)
    # the trials training at the stop were neither failed nor retried: they finished in place, and the ones
    # still training at the restart (at least one: a trial cannot be told complete without the database)
    # finished after it, their curves reported at every evaluation once
    assert all(study.trials[n].state == TrialState.COMPLETE for n in training)
    assert any(study.trials[n].datetime_complete > restarted for n in training)
    for n in training:
        assert sorted(study.trials[n].intermediate_values) == list(range(10, 41, 10))
    assert_password_nowhere(tmp_path, server, "outage", out, err)


def test_postgresql_down_past_the_bound_stops_the_workers_with_one_line_and_the_rerun_completes(tmp_path, server):
    retry_s = 3
    spec = write_spec(tmp_path, name="outage-bound", trials=3, storage_retry_s=retry_s, run=RUN)
    proc, command, env = start_sweep(tmp_path, server, spec)
    try:
        def complete_and_running():
            states = [t.state for t in trials(tmp_path, server, "outage-bound")]
            return TrialState.COMPLETE in states and TrialState.RUNNING in states
        wait_for(complete_and_running, 180, "a trial complete and one running")
        before = {t.number: (t.params, t.value) for t in trials(tmp_path, server, "outage-bound")
                  if t.state == TrialState.COMPLETE}
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
