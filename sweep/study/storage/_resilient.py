"""An Optuna storage that outlives a database outage for a bounded time and names a full disk.

Every call of Optuna's storage interface goes through `ResilientStorage.call`, and a worker joining
a running sweep opens the storage through `retrying` too:
- a call that cannot reach the database (SQLAlchemy's OperationalError: a refused, dropped or
  timed-out connection; SQLite's "database is locked") is made again after `backoff(0)`,
  `backoff(1)`, … seconds (0.5, 1, 2, 4, 8, then every 10 s), the last try at `retry_s` (the
  spec's `storage_retry_s`) after the call's first failure; then it raises an EnvironmentFault
  naming the storage (redacted) and the driver's reason.
- a full or read-only disk under a SQLite or journal file is an EnvironmentFault at once, naming
  the file's folder (SQLite says "database or disk is full").
Each Optuna storage call is one transaction, so a call that failed wrote nothing and is safe to
make again; not covered: a commit whose answer was lost on the way back, which the next try meets
as a conflict (the trial already finished) and raises.
"""
from __future__ import annotations

import abc
import errno
import logging
import os
import sqlite3
import time
from collections.abc import Callable
from typing import TypeVar

import optuna
import sqlalchemy.exc

from sweep.errors import DISK_ERRNOS, EnvironmentFault, as_fault
from sweep.study.storage._url import StorageURL
from trainer.atomic import causes

# Optuna's RDB storage warns (its one warning, several lines with the SQL) when a read fails and it falls back
# to a slower query; in an outage the fallback fails too and `retrying` handles it: there it is noise.
logging.getLogger("optuna.storages._rdb.storage").setLevel(logging.ERROR)
RETRY_FIRST_S, RETRY_CAP_S = 0.5, 10.0
T = TypeVar("T")
SQLITE_ERRNOS = {sqlite3.SQLITE_FULL: errno.ENOSPC, sqlite3.SQLITE_READONLY: errno.EROFS}


def backoff(attempt: int) -> float:
    """Seconds to wait before try `attempt + 2` of a call: RETRY_FIRST_S × 2^attempt, capped at RETRY_CAP_S."""
    return min(RETRY_FIRST_S * 2 ** attempt, RETRY_CAP_S)


def disk_errno(err: BaseException) -> int | None:
    """ENOSPC, EDQUOT or EROFS when a full, over-quota or read-only disk caused `err`, else None."""
    for e in causes(err):
        if isinstance(e, OSError) and e.errno in DISK_ERRNOS:
            return e.errno
        if isinstance(e, sqlite3.Error):  # sqlite_errorcode from Python 3.11; before it, the message
            code = getattr(e, "sqlite_errorcode", sqlite3.SQLITE_FULL if "disk is full" in str(e) else 0)
            return SQLITE_ERRNOS.get(code & 0xFF)
    return None


def disk_fault(err: BaseException, url: StorageURL) -> EnvironmentFault | None:
    """A full or read-only disk under the storage's file, as an EnvironmentFault naming its folder; else None."""
    code = disk_errno(err)
    return None if code is None else as_fault(OSError(code, os.strerror(code), str(url.file() or "")))


def unreachable(err: BaseException) -> bool:
    """Whether `err` means the database could not be reached (worth retrying), not a bad request or a full disk."""
    return disk_errno(err) is None and any(
        isinstance(e, sqlalchemy.exc.OperationalError)
        or (isinstance(e, sqlalchemy.exc.DBAPIError) and e.connection_invalidated) for e in causes(err))


def retrying(call: Callable[[], T], url: StorageURL) -> T:
    """`call()`, made again after backoff(0), backoff(1), … s (the last wait cut to end at the bound) while
    it fails because the database cannot be reached, until `url.retry_s` seconds after its first
    failure; then an EnvironmentFault naming the storage (redacted) and the driver's reason."""
    first_failure, attempt = None, 0
    while True:
        try:
            return call()
        except Exception as err:
            if not unreachable(err):
                raise
            first_failure = time.monotonic() if first_failure is None else first_failure
            waited = time.monotonic() - first_failure
            if waited >= url.retry_s:
                driver = next((e.orig for e in causes(err) if isinstance(e, sqlalchemy.exc.DBAPIError)), err)
                reason = url.redact(f"{type(driver).__name__}: {(str(driver).strip().splitlines() or [''])[0]}")[:200]
                raise EnvironmentFault(f"storage {url.redacted}: unreachable for {url.retry_s:g} s (storage_retry_s; "
                                       f"{reason}); the same command resumes once it is back") from None
            time.sleep(min(backoff(attempt), url.retry_s - waited))
            attempt += 1


class ResilientStorage(optuna.storages.BaseStorage):
    """`inner` (an Optuna storage opened from `url`) with every call retried through an outage (module doc)."""

    def __init__(self, inner: optuna.storages.BaseStorage, url: StorageURL):
        self.inner, self.url = inner, url

    def call(self, method: str, *args, **kwargs):
        try:
            return retrying(lambda: getattr(self.inner, method)(*args, **kwargs), self.url)
        except Exception as err:
            fault = None if isinstance(err, EnvironmentFault) else disk_fault(err, self.url)
            if fault is None:
                raise
            raise fault from err


def _forward(method: str):
    def forwarded(self: ResilientStorage, *args, **kwargs):
        return self.call(method, *args, **kwargs)

    forwarded.__name__ = method
    return forwarded


for _name, _value in list(vars(optuna.storages.BaseStorage).items()):  # the whole interface, abstract or not
    if callable(_value) and not _name.startswith("_"):
        setattr(ResilientStorage, _name, _forward(_name))
abc.update_abstractmethods(ResilientStorage)
