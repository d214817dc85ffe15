"""A grid point is claimed by one worker only, on every storage: K processes pop the same queue of WAITING
trials (the grid `open_study` enqueues) as fast as they can, study after study, and no trial is claimed
twice, no point completes twice, no worker crashes on a trial another one finished.

The classic bug it catches: Optuna pops a WAITING trial by reading it and then setting it RUNNING; on
SQLite the read ran outside the write's transaction, so two workers both won the same point (measured
before the fix: 5 points claimed twice and 3 of 4 workers crashed with "Cannot tell a COMPLETE trial" in
10 grids of 12 points). The workers train nothing (tests/fault/grid_claimer.py tells each trial at once),
so the race window is as wide as the claim itself; the grids with real training run in
tests/fault/test_concurrency.py and tests/test_sweep_proxy.py.
`make fault` (SWEEP_FAULT_FULL=1) repeats each case over many more grids.
"""
import subprocess
import sys
import time
import uuid
from collections import Counter
from pathlib import Path

import optuna
import pytest
from optuna.trial import TrialState

from sweep.study.storage import open_storage, storage_url
from tests.fault.kill import fault_repeats

GRIDS, POINTS = fault_repeats((2, 8), (40, 12))
PASSWORD_ENV = "PGPASS_SWEEP"


def make_grids(url: str, password_env: str | None, tag: str) -> list[str]:
    store = open_storage(storage_url(url, password_env, Path("unused.db")))
    names = []
    for g in range(GRIDS):
        study = optuna.create_study(storage=store, study_name=f"{tag}-grid{g}")
        study.set_user_attr("points", POINTS)
        for p in range(POINTS):
            study.enqueue_trial({"lr": 2.0 ** -p})
        names.append(study.study_name)
    return names


def run_claimers(tmp: Path, url: str, password_env: str | None, k: int, names: list[str]) -> Counter:
    """Start K claimers, wait until each has opened the storage, let them go together; every claim made."""
    cmd = [sys.executable, "-m", "tests.fault.grid_claimer", url, password_env or "-"]
    procs = [subprocess.Popen([*cmd, str(tmp / f"ready{i}"), str(tmp / "go"), *names], text=True,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=Path(__file__).parents[2])
             for i in range(k)]
    try:
        while not all((tmp / f"ready{i}").exists() for i in range(k)):
            assert all(p.poll() is None for p in procs), [p.communicate()[1][-2000:] for p in procs]
            time.sleep(0.05)
        (tmp / "go").touch()
        claims: Counter = Counter()
        for proc in procs:
            out, err = proc.communicate(timeout=600)
            assert proc.returncode == 0, err[-2000:]  # no UpdateFinishedTrialError: nobody finished its trial first
            claims.update(line for line in out.splitlines() if line)
        return claims
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()


def assert_each_point_once(url: str, password_env: str | None, names: list[str], claims: Counter) -> None:
    twice = {claim: n for claim, n in claims.items() if n > 1}
    assert not twice, f"trials claimed by more than one worker: {twice}"
    store = open_storage(storage_url(url, password_env, Path("unused.db")))
    for name in names:
        done = [t for t in optuna.load_study(study_name=name, storage=store).get_trials(deepcopy=False)
                if t.state == TrialState.COMPLETE]
        assert sorted(t.params["lr"] for t in done) == sorted(2.0 ** -p for p in range(POINTS)), name
    assert sum(claims.values()) == GRIDS * POINTS


def storage_for(kind: str, tmp: Path, request, monkeypatch) -> tuple[str, str | None]:
    """The storage URL and its password's environment variable (set here, so the claimers inherit it)."""
    if kind == "sqlite":
        return f"sqlite:///{tmp / 'optuna.db'}", None
    if kind == "journal":
        return f"journal:{tmp / 'optuna.log'}", None
    server = request.getfixturevalue("postgres")
    monkeypatch.setenv(PASSWORD_ENV, server.password)
    return server.url, PASSWORD_ENV


@pytest.mark.parametrize("k", [2, 4])
@pytest.mark.parametrize("kind", ["sqlite", "journal", "postgresql"])
def test_k_workers_popping_one_grid_never_claim_the_same_point(tmp_path, request, monkeypatch, kind, k):
    url, password_env = storage_for(kind, tmp_path, request, monkeypatch)
    # one PostgreSQL database holds every case's grids, of every pytest-xdist worker (their tmp_path names repeat)
    names = make_grids(url, password_env, tag=f"{kind}-{k}-{uuid.uuid4().hex[:8]}")
    claims = run_claimers(tmp_path, url, password_env, k, names)
    assert_each_point_once(url, password_env, names, claims)
