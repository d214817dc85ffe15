"""Real services for the tests: a throwaway PostgreSQL server on loopback, a single-node SLURM cluster.

A missing component skips a test only outside CI; with CI set, it is a failure (`.ci/run` installs
Debian's postgresql, slurm-wlm, munge, slurmdbd, mariadb-server and chromium, so CI always has them).
"""
from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest


def missing(what: str) -> None:
    """Skip for a missing component, except in CI where it is a failure."""
    if os.environ.get("CI"):
        pytest.fail(f"{what} is missing in CI (.ci/run installs it)")
    pytest.skip(f"{what} is not installed")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def postgres_bin(name: str) -> str | None:
    found = shutil.which(name) or sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"))
    return found if isinstance(found, str) else (found[-1] if found else None)


@dataclass
class Postgres:
    port: int
    user: str
    password: str
    database: str
    data: Path
    pg_ctl: str
    run_as: list[str]

    @property
    def url(self) -> str:  # no password: it comes from the environment
        return f"postgresql://{self.user}@127.0.0.1:{self.port}/{self.database}"

    def stop(self) -> None:
        subprocess.run([*self.run_as, self.pg_ctl, "-D", str(self.data), "-m", "fast", "-w", "stop"],
                       capture_output=True, timeout=60)

    def running(self) -> bool:
        return subprocess.run([*self.run_as, self.pg_ctl, "-D", str(self.data), "status"], capture_output=True,
                              timeout=60).returncode == 0

    def admin(self, statement: str) -> None:
        """Run one SQL statement as the server's superuser (over its local socket)."""
        psql = shutil.which("psql") or postgres_bin("psql")
        subprocess.run([*self.run_as, psql, "-h", str(self.data), "-p", str(self.port), "-U", "postgres", "-v",
                        "ON_ERROR_STOP=1", "-c", statement], check=True, capture_output=True, timeout=60)

    def start(self) -> None:
        options = f"-p {self.port} -k {self.data} -c listen_addresses=127.0.0.1"
        subprocess.run([*self.run_as, self.pg_ctl, "-D", str(self.data), "-o", options, "-l",
                        str(self.data / "server.log"), "-w", "start"], check=True, capture_output=True, timeout=60)


def start_postgres(folder: Path) -> Postgres:
    initdb, pg_ctl, psql = postgres_bin("initdb"), postgres_bin("pg_ctl"), shutil.which("psql") or postgres_bin("psql")
    if not (initdb and pg_ctl and psql):
        missing("PostgreSQL (Debian's postgresql)")
    run_as = []
    if os.geteuid() == 0:  # initdb refuses root: run the server as the postgres user
        run_as = ["runuser", "-u", "postgres", "--"]
        folder.chmod(0o755)
    data = folder / "pgdata"
    data.mkdir()
    if run_as:
        shutil.chown(data, "postgres", "postgres")
    subprocess.run([*run_as, initdb, "-D", str(data), "-U", "postgres", "--auth-local=trust",
                    "--auth-host=scram-sha-256"], check=True, capture_output=True, timeout=120)
    server = Postgres(free_port(), "sweep", "pw-Z7q!x9", "sweep", data, pg_ctl, run_as)
    server.start()
    server.admin(f"CREATE ROLE sweep LOGIN PASSWORD '{server.password}'")
    server.admin("CREATE DATABASE sweep OWNER sweep")
    return server


SLURM_SCRIPT = Path(__file__).resolve().parent.parent / "scripts" / "slurm-test-cluster.sh"


def start_slurm() -> tuple[str, bool]:
    """Start the test cluster unless it runs; returns (its SLURM_CONF, whether this call started it)."""
    if os.geteuid() != 0 or not all(shutil.which(c) for c in ("slurmctld", "slurmd", "slurmdbd", "munged", "mariadbd")):
        missing("SLURM test cluster (as root: slurm-wlm munge slurmdbd mariadb-server)")
    status = subprocess.run(["bash", str(SLURM_SCRIPT), "status"], capture_output=True, text=True, timeout=60)
    if status.returncode != 0:
        started = subprocess.run(["bash", str(SLURM_SCRIPT), "start"], capture_output=True, text=True, timeout=300)
        if started.returncode != 0:
            pytest.fail(f"{SLURM_SCRIPT.name} start failed: {started.stderr.strip()}")
    conf = next(line.split("=", 1)[1] for line in subprocess.run(
        ["bash", str(SLURM_SCRIPT), "status"], check=True, capture_output=True, text=True).stdout.splitlines()
        if line.startswith("export SLURM_CONF="))
    os.environ["SLURM_CONF"] = conf  # for this process's squeue/scontrol and the sweeps it starts
    return conf, status.returncode != 0
