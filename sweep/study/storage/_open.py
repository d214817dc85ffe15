"""Opening a storage: a journal file, or SQLAlchemy (SQLite, PostgreSQL, …), wrapped in a `ResilientStorage`."""
from __future__ import annotations

import importlib.util
from pathlib import Path

import optuna
import sqlalchemy
from optuna.storages.journal import JournalFileBackend, JournalStorage

from sweep.errors import EnvironmentFault, InputError
from sweep.study.storage._resilient import ResilientStorage, disk_fault, retrying
from sweep.study.storage._url import StorageURL

SQLITE_TIMEOUT_S = 60
CONNECT_TIMEOUT_S = 10  # a database host that drops packets is an outage after this, not after the OS's minutes


def open_storage(url: StorageURL, wait: bool = False) -> ResilientStorage:
    """Open (creating if needed) the storage; an unreachable or unusable one is an InputError, unless
    `wait` (a worker joining a running sweep): then an outage is waited out as by every later call."""
    if url.is_journal:
        path = url.journal_path()
        path.parent.mkdir(parents=True, exist_ok=True)
        return ResilientStorage(JournalStorage(JournalFileBackend(str(path))), url)
    resolved = with_installed_driver(url.resolved())
    kwargs: dict = {"pool_pre_ping": True}
    if resolved.startswith("sqlite:///"):
        Path(resolved.removeprefix("sqlite:///")).parent.mkdir(parents=True, exist_ok=True)
        kwargs = {"connect_args": {"timeout": SQLITE_TIMEOUT_S}}
    elif resolved.startswith("postgresql"):
        kwargs["connect_args"] = {"connect_timeout": CONNECT_TIMEOUT_S}

    def connect() -> optuna.storages.RDBStorage:
        return optuna.storages.RDBStorage(resolved, engine_kwargs=kwargs)

    try:
        rdb = retrying(connect, url) if wait else connect()
    except EnvironmentFault:  # waited url.retry_s in vain
        raise
    except Exception as err:  # the driver's own errors: unreachable host, bad credentials, unknown dialect
        fault = disk_fault(err, url)
        if fault is not None:
            raise fault from err
        raise InputError(f"storage: cannot open {url.redacted} ({type(err).__name__}: {url.redact(str(err))[:300]})") from None
    if rdb.engine.name == "sqlite":
        serialize_sqlite(rdb.engine)
    return ResilientStorage(optuna.storages.get_storage(rdb), url)  # Optuna's cache of finished trials inside


def serialize_sqlite(engine: sqlalchemy.engine.Engine) -> None:
    """Make every SQLite transaction begin with `BEGIN IMMEDIATE`, so that Optuna's read-then-write calls are
    claims only one process can win.

    Python's sqlite3 driver begins a transaction only at the first write, so Optuna's `SELECT … FOR UPDATE`
    (a no-op on SQLite) reads outside any transaction: two workers popping the same WAITING trial both read
    it WAITING and both set it RUNNING (a grid point trained twice), and two workers failing the same stale
    trial both enqueue its retry. With the driver in autocommit and SQLAlchemy emitting `BEGIN IMMEDIATE`
    (SQLAlchemy's documented pysqlite recipe), the read and the write hold the database's write lock
    together; the second worker waits (SQLITE_TIMEOUT_S), then reads the trial RUNNING and moves on.
    PostgreSQL's FOR UPDATE and the journal's ordered log are atomic already.
    """

    @sqlalchemy.event.listens_for(engine, "connect")
    def driver_autocommit(dbapi_connection, _record) -> None:
        dbapi_connection.isolation_level = None  # SQLAlchemy's begin event, not the driver, starts transactions

    @sqlalchemy.event.listens_for(engine, "begin")
    def begin_immediate(connection) -> None:
        connection.exec_driver_sql("BEGIN IMMEDIATE")

    engine.dispose()  # connections pooled while Optuna set up its tables predate the listeners


def with_installed_driver(url: str) -> str:
    """`postgresql://` means psycopg2 to SQLAlchemy; use psycopg (3) when that is the driver installed."""
    if url.startswith("postgresql://") and importlib.util.find_spec("psycopg2") is None \
            and importlib.util.find_spec("psycopg") is not None:
        return "postgresql+psycopg://" + url.removeprefix("postgresql://")
    return url
