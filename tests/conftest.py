"""Shared test helpers."""
import sys

import pytest

from sweep.cli import main


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
    """A PostgreSQL server on loopback with a password-protected `sweep` role and database.

    Its folder is outside pytest's private tmp tree, which the server's own user could not enter.
    """
    import shutil
    import tempfile
    from pathlib import Path

    from tests.services import start_postgres

    folder = Path(tempfile.mkdtemp(prefix="sweep-postgres-"))
    try:
        server = start_postgres(folder)
        yield server
        server.stop()
    finally:
        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(scope="session")
def slurm_cluster():
    """The single-node SLURM cluster of scripts/slurm-test-cluster.sh (root only); stopped at the end if
    this session started it. Yields the SLURM_CONF path the clients need."""
    from tests.services import start_slurm

    conf, started = start_slurm()
    yield conf
    if started:
        import subprocess

        subprocess.run(["bash", "scripts/slurm-test-cluster.sh", "stop"], capture_output=True, timeout=120)
