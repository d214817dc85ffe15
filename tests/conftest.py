"""Shared test helpers; the run's services (tests/services.py) and the groups its parallel workers keep."""
import os
import signal
import sys
import tempfile

import pytest

from sweep.cli import main
from tests.services import RUN_ENV, stop_shared


@pytest.fixture
def run_cli(capsys, monkeypatch):
    """Run `sweep ARGS…` in this process; returns (exit code, stdout, stderr)."""

    def run(*args: str) -> tuple[int, str, str]:
        monkeypatch.setattr(sys, "argv", ["sweep", *map(str, args)])
        capsys.readouterr()
        with pytest.raises(SystemExit) as exit_info:
            main()
        out, err = capsys.readouterr()
        return exit_info.value.code, out, err

    return run


@pytest.fixture(scope="session")
def postgres():
    """The test run's PostgreSQL server on loopback, with a password-protected `sweep` role and database: one for
    every pytest-xdist worker (tests/services.py), stopped when the run ends."""
    from tests.services import shared_postgres

    return shared_postgres()


@pytest.fixture(scope="session")
def slurm_cluster():
    """The single-node SLURM cluster of scripts/slurm-test-cluster.sh (root only), one for every worker; stopped
    when the run ends if this run started it. Returns the SLURM_CONF path the clients need (also set in this
    process's environment)."""
    from tests.services import shared_slurm

    return shared_slurm()


@pytest.fixture(scope="session")
def browser(tmp_path_factory):
    """Headless Chromium's command line up to the page (its profile this worker's own: tests/services.py)."""
    from tests.services import chromium_command

    return chromium_command(tmp_path_factory.mktemp("chromium"))


def pytest_configure(config):
    """The controller (or a run without workers) makes the run's folder and sets the torch threads; its workers
    inherit both."""
    if not hasattr(config, "workerinput"):
        os.environ[RUN_ENV] = tempfile.mkdtemp(prefix="sweep-tests-")
        # one torch thread per process unless the user chose: 4 workers on 2 cores, each training with 2 threads,
        # oversubscribed them (test_verify + test_fidelity under -n 4: 123 s → 113 s)
        os.environ.setdefault("OMP_NUM_THREADS", "1")


def pytest_unconfigure(config):
    if not hasattr(config, "workerinput"):
        stop_shared()


@pytest.fixture(autouse=True)
def ctrl_c_as_a_terminal_gives_it():
    """Each test starts, and each command it starts inherits, SIGINT as a terminal's foreground job has it: handled
    by Python, not blocked. A test that ran a command in this process can leave it ignored or blocked (a Ctrl-C
    test's command then starts deaf to it and runs to the end: 3 failures of a loaded `make test`)."""
    as_a_terminal()
    yield
    as_a_terminal()


def as_a_terminal() -> None:
    if signal.getsignal(signal.SIGINT) in (signal.SIG_IGN, signal.SIG_DFL, None):
        signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})


# a test using one of these runs in that group, on one worker, one test of the group at a time (`--dist loadgroup`)
SERIAL = {
    # the SLURM cluster runs 2 CPUs of tasks, and the tests find their jobs by name (the tiny study's); `no_ray_left`
    # counts every Ray process on the machine, and the local → Ray → SLURM test starts one
    "slurm_cluster": "cluster",
    "no_ray_left": "cluster",
}


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist reads the groups
def pytest_collection_modifyitems(config, items):
    """Groups for pytest-xdist's `--dist loadgroup` (`make test`): each group runs on one worker. The tests of a
    service that takes one test at a time (`SERIAL`), and the tests of one module sharing
    a module-scoped fixture (a trained pipeline, a server, reference runs), so that it is built once, not once per
    worker."""
    for item in items:
        group = next((SERIAL[name] for name in item.fixturenames if name in SERIAL), None)
        if group is None and uses_module_fixture(item):
            group = item.nodeid.split("::")[0]
        if group is not None:
            item.add_marker(pytest.mark.xdist_group(group))


def uses_module_fixture(item) -> bool:
    definitions = getattr(item, "_fixtureinfo", None)
    return definitions is not None and any(
        fixture.scope in ("module", "class", "package")
        for name in item.fixturenames for fixture in definitions.name2fixturedefs.get(name, ()))
