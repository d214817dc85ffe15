"""Opening a storage: a journal file, or SQLAlchemy (SQLite, PostgreSQL, …), wrapped in a `ResilientStorage`.

Read-only (`sql`, `results`, `report`, `export`, `compare`, `transfer`) opens without creating or migrating anything:
a missing file is refused before any driver runs; SQLite is opened with `mode=ro` and PostgreSQL in read-only
transactions, so the database itself refuses a write; Optuna's table creation is skipped, and a database without
Optuna's tables (a SQLite file that is not Optuna's, an empty one) or with an older schema is one line.
"""
from __future__ import annotations

import importlib.util
import sqlite3
from urllib.parse import quote

import optuna
import sqlalchemy
import sqlalchemy.exc
from optuna.storages.journal import JournalFileBackend, JournalStorage

from sweep.errors import EnvironmentFault, InputError
from sweep.study.storage._resilient import ResilientStorage, disk_fault, retrying
from sweep.study.storage._url import StorageURL
from trainer.atomic import causes

SQLITE_TIMEOUT_S = 60
CONNECT_TIMEOUT_S = 10  # a database host that drops packets is an outage after this, not after the OS's minutes
OPTUNA_TABLES = {"studies", "trials", "version_info", "alembic_version"}


def open_storage(url: StorageURL, wait: bool = False, read_only: bool = False) -> ResilientStorage:
    """Open (creating if needed, unless `read_only`) the storage; an unreachable or unusable one is an InputError,
    unless `wait` (a worker joining a running sweep): then an outage is waited out as by every later call."""
    path = url.file()
    if read_only and path is not None and not path.is_file():
        raise InputError(f"storage: {url.redacted} does not exist")
    if url.is_journal:
        return ResilientStorage(open_journal(url, read_only), url)
    resolved = with_installed_driver(url.resolved()).replace("{", "{{").replace("}", "}}")  # Optuna .format()s it
    kwargs: dict = {"pool_pre_ping": True}
    if path is not None:
        kwargs = {"connect_args": {"timeout": SQLITE_TIMEOUT_S}}
        if not read_only:
            path.parent.mkdir(parents=True, exist_ok=True)
        else:
            kwargs["creator"] = lambda: sqlite3.connect(f"file:{quote(str(path.resolve()))}?mode=ro", uri=True,
                                                        timeout=SQLITE_TIMEOUT_S, check_same_thread=False)
    elif resolved.startswith("postgresql"):
        options = {"options": "-c default_transaction_read_only=on"} if read_only else {}
        kwargs["connect_args"] = {"connect_timeout": CONNECT_TIMEOUT_S, **options}

    def connect() -> optuna.storages.RDBStorage:
        if read_only:
            check_optuna_tables(url, resolved, kwargs)
        try:
            return optuna.storages.RDBStorage(resolved, engine_kwargs=kwargs, skip_table_creation=read_only)
        except sqlalchemy.exc.IntegrityError:  # workers creating a fresh PostgreSQL schema at once: one's CREATE TYPE
            # lost to the other's (UniqueViolation on pg_type, seen in CI); the schema is there now, so open it again
            return optuna.storages.RDBStorage(resolved, engine_kwargs=kwargs, skip_table_creation=read_only)

    try:
        rdb = retrying(connect, url) if wait else connect()
    except (EnvironmentFault, InputError):  # waited url.retry_s in vain; not an Optuna storage
        raise
    except Exception as err:  # the driver's own errors: unreachable host, bad credentials, unknown dialect, old schema
        fault = disk_fault(err, url)
        if fault is not None:
            raise fault from err
        # the driver's own error, not SQLAlchemy's
        driver = next((e.orig for e in causes(err) if isinstance(e, sqlalchemy.exc.DBAPIError)), err)
        raise InputError(f"storage: cannot open {url.redacted} ({type(driver).__name__}: "
                         f"{url.redact(str(driver))[:300]})") from None
    if rdb.engine.name == "sqlite" and not read_only:
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


def check_optuna_tables(url: StorageURL, resolved: str, kwargs: dict) -> None:
    """Refuse (one line) a database that lacks Optuna's tables or their version rows, before Optuna would add them."""
    engine = sqlalchemy.create_engine(resolved, **kwargs)
    try:
        with engine.connect() as con:
            missing = OPTUNA_TABLES - set(sqlalchemy.inspect(con).get_table_names())
            empty = not missing and not all(con.execute(sqlalchemy.text(f"SELECT 1 FROM {t} LIMIT 1")).first()
                                            for t in ("version_info", "alembic_version"))
    finally:
        engine.dispose()
    if missing or empty:
        lacks = f"no table {', '.join(sorted(missing))}" if missing else "no schema version recorded"
        raise InputError(f"storage: {url.redacted} is not an Optuna storage ({lacks}); a read-only command "
                         "creates nothing: give the storage a sweep wrote")


def open_journal(url: StorageURL, read_only: bool) -> JournalStorage:
    """Optuna's JournalStorage on the file; a file that is not a journal is one line."""
    path = url.journal_path()
    if not read_only:
        path.parent.mkdir(parents=True, exist_ok=True)
    try:
        return JournalStorage(JournalFileBackend(str(path)))
    except (ValueError, KeyError, TypeError, UnicodeDecodeError, IsADirectoryError) as err:  # JSONDecodeError is one
        raise InputError(f"storage: {url.redacted} is not an Optuna journal ({type(err).__name__})") from None


def with_installed_driver(url: str) -> str:
    """`postgresql://` means psycopg2 to SQLAlchemy; use psycopg (3) when that is the driver installed."""
    if url.startswith("postgresql://") and importlib.util.find_spec("psycopg2") is None \
            and importlib.util.find_spec("psycopg") is not None:
        return "postgresql+psycopg://" + url.removeprefix("postgresql://")
    return url
