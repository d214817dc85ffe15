"""Real services for the tests: a throwaway PostgreSQL server on loopback, a single-node SLURM cluster.

One of each for the whole test run, however many pytest-xdist workers share it: `shared(name, start)` starts a
service in the first worker that asks (under a file lock in the run's folder, `SWEEP_TEST_RUN`, made by the
controller in conftest.py) and records how to reach it there; the other workers read the record, and the
controller stops what was recorded when the run ends (`stop_shared`).

A missing component skips a test only outside CI; with CI set, it is a failure (`.ci/run` installs
Debian's postgresql, slurm-wlm, munge, slurmdbd, mariadb-server and chromium, so CI always has them).
"""
from __future__ import annotations

import fcntl
import glob
import json
import os
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path

import pytest

RUN_ENV = "SWEEP_TEST_RUN"  # the test run's folder: service records and their lock, shared by its workers


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

    @classmethod
    def from_record(cls, record: dict) -> Postgres:
        return cls(**{**record, "data": Path(record["data"])})

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


def new_postgres() -> Postgres:
    """A server in a folder of its own outside pytest's private tmp tree, which the server's own user could not
    enter (`Postgres.stop` and removing `data.parent` end it)."""
    folder = Path(tempfile.mkdtemp(prefix="sweep-postgres-"))
    try:
        return start_postgres(folder)
    except BaseException:
        shutil.rmtree(folder, ignore_errors=True)
        raise


def end_postgres(server: Postgres) -> None:
    server.stop()
    shutil.rmtree(server.data.parent, ignore_errors=True)


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


def chromium_command(profile: Path) -> list[str]:
    """Headless Chromium's command line up to the page, with `profile` as its profile folder (each worker its own:
    browsers of two workers share no state, whatever the browser's default)."""
    chromium = shutil.which("chromium")
    if chromium is None:
        missing("chromium (Debian's package; scripts/test-services.sh installs it)")
    return [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--virtual-time-budget=10000",
            f"--user-data-dir={profile}"]


SLURM_SCRIPT = Path(__file__).resolve().parent.parent / "scripts" / "slurm-test-cluster.sh"


def start_slurm() -> tuple[str, bool]:
    """Start the test cluster unless it runs (`shared("slurm", …)`: once per test run); returns (its SLURM_CONF,
    whether this call started it)."""
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


def run_folder() -> Path:
    """The test run's folder (conftest.py's controller makes it; a process outside such a run gets its own)."""
    if RUN_ENV not in os.environ:
        os.environ[RUN_ENV] = tempfile.mkdtemp(prefix="sweep-tests-")
    return Path(os.environ[RUN_ENV])


@contextmanager
def run_lock() -> Iterator[None]:
    """The run's one lock: held while a service starts, so the workers that ask at once start it once."""
    with open(run_folder() / "services.lock", "a") as file:
        fcntl.flock(file, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(file, fcntl.LOCK_UN)


def shared(name: str, start: Callable[[], dict]) -> dict:
    """The record of the run's `name` service: read when a worker started it already, else `start()`ed here and
    written for the others (a failed start leaves no record: the next test to ask tries again, and fails alike)."""
    record = run_folder() / f"{name}.json"
    with run_lock():
        if not record.exists():
            found = start()
            tmp = record.with_suffix(".partial")
            tmp.write_text(json.dumps(found))
            tmp.replace(record)
        return json.loads(record.read_text())


def shared_postgres() -> Postgres:
    """The run's PostgreSQL server (`new_postgres`)."""
    def start() -> dict:
        server = new_postgres()
        return {**asdict(server), "data": str(server.data)}

    return Postgres.from_record(shared("postgres", start))


def shared_slurm() -> str:
    """The run's SLURM cluster (`start_slurm`); its SLURM_CONF, also set in this process's environment for its
    squeue/scontrol and the sweeps it starts."""
    record = shared("slurm", lambda: dict(zip(("conf", "started"), start_slurm(), strict=True)))
    os.environ["SLURM_CONF"] = record["conf"]
    return record["conf"]


def stop_shared() -> None:
    """At the end of the run (its controller): stop the services its workers started, remove the run's folder."""
    folder = run_folder()
    if (record := folder / "postgres.json").exists():
        end_postgres(Postgres.from_record(json.loads(record.read_text())))
    if (record := folder / "slurm.json").exists() and json.loads(record.read_text())["started"]:
        subprocess.run(["bash", str(SLURM_SCRIPT), "stop"], capture_output=True, timeout=120)
    shutil.rmtree(folder, ignore_errors=True)
