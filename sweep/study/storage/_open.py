"""Opening a storage: a journal file, or SQLAlchemy (SQLite, PostgreSQL, …), wrapped in a `ResilientStorage`."""
from __future__ import annotations

import importlib.util
from pathlib import Path

import optuna
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
        why = f"{type(err).__name__}: {url.redact(str(err))[:300]}"
        raise InputError(f"storage: cannot open {url.redacted} ({why})") from None
    return ResilientStorage(optuna.storages.get_storage(rdb), url)  # Optuna's cache of finished trials inside


def with_installed_driver(url: str) -> str:
    """`postgresql://` means psycopg2 to SQLAlchemy; use psycopg (3) when that is the driver installed."""
    if url.startswith("postgresql://") and importlib.util.find_spec("psycopg2") is None \
            and importlib.util.find_spec("psycopg") is not None:
        return "postgresql+psycopg://" + url.removeprefix("postgresql://")
    return url
