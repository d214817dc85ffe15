"""Where a study's trials live: an Optuna storage named by a URL.

- default `sqlite:///ROOT/NAME/optuna.db`: one machine; local workers share it (60 s lock timeout).
- `journal:PATH` (or a PATH ending in .log or .jsonl): Optuna's JournalStorage on a file, for many
  processes on one machine or on a shared filesystem with file locks; the fastest for local workers.
- any SQLAlchemy URL (`postgresql://user@host:5432/db`, …): many machines.

A password never appears in the URL the sweep is given: it comes from the environment when the
storage is opened, in the process that opens it, either as `${VAR}` inside the URL or through
`password_env` (`--storage-password-env VAR`). `StorageURL.redacted` (never holding a password)
is the only form that is printed, logged or recorded.

Every opened storage is a `ResilientStorage` (sweep/study/resilient.py): a call that cannot reach
the database is retried for `retry_s` seconds (the spec's `storage_retry_s`), and a full disk under
a SQLite or journal file is one line naming its folder.
"""
from __future__ import annotations

import importlib.util
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Optional
from urllib.parse import quote

import optuna
from optuna.storages.journal import JournalFileBackend, JournalStorage

from sweep.errors import EnvironmentFault, InputError
from sweep.study.resilient import ResilientStorage, disk_fault, retrying

ENV_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
JOURNAL_SUFFIXES = (".log", ".jsonl")
SQLITE_TIMEOUT_S = 60
CONNECT_TIMEOUT_S = 10  # a database host that drops packets is an outage after this, not after the OS's minutes
FORMS = "sqlite:///PATH, journal:PATH, or a SQLAlchemy URL such as postgresql://USER@HOST:PORT/DB"
STORAGE_RETRY_S = 300.0


@dataclass(frozen=True)
class StorageURL:
    url: str  # as given: may hold ${VAR}, never a literal password
    password_env: Optional[str] = None
    retry_s: float = STORAGE_RETRY_S  # how long a call waits for an unreachable database

    @property
    def is_journal(self) -> bool:
        return self.url.startswith("journal:") or ("://" not in self.url and self.url.endswith(JOURNAL_SUFFIXES))

    @property
    def redacted(self) -> str:
        return ENV_VAR.sub("***", self.url)

    def journal_path(self) -> Path:
        return Path(self.url.removeprefix("journal:"))

    def file(self) -> Optional[Path]:
        """The file holding the storage (SQLite or journal), None for a database server."""
        if self.is_journal:
            return self.journal_path()
        return Path(self.url.removeprefix("sqlite:///")) if self.url.startswith("sqlite:///") else None

    def redact(self, message: str) -> str:
        """`message` on one line, with the password this URL names replaced by ***."""
        message = " ".join(message.split())
        names = ENV_VAR.findall(self.url) + ([self.password_env] if self.password_env else [])
        for secret in (os.environ[name] for name in names if os.environ.get(name)):
            message = message.replace(secret, "***")
        return message

    def resolved(self) -> str:
        """The URL with its password filled in from the environment (never print or store this)."""
        url = ENV_VAR.sub(lambda m: env_value(m.group(1)), self.url)
        if self.password_env:
            scheme, sep, rest = url.partition("://")
            userinfo, at, host = rest.partition("@")
            if not at or ":" in userinfo:
                raise InputError(f"storage: {self.redacted} needs a user and no password (USER@HOST) for --storage-password-env")
            url = f"{scheme}{sep}{userinfo}:{quote(env_value(self.password_env), safe='')}@{host}"
        return url


def env_value(name: str) -> str:
    value = os.environ.get(name)
    if value is None:
        raise InputError(f"storage: the environment variable {name} (the storage password) is not set")
    return value


def storage_url(given: str | None, password_env: str | None, default_sqlite: Path,
                retry_s: float = STORAGE_RETRY_S) -> StorageURL:
    """Check a storage URL's form without connecting; the default is a SQLite file in the study folder."""
    if not given:
        return StorageURL(f"sqlite:///{default_sqlite}", None, retry_s)
    url = StorageURL(given, password_env, retry_s)
    if url.is_journal:
        if password_env:
            raise InputError("--storage-password-env: a journal file has no password")
        return url
    scheme, sep, rest = given.partition("://")
    if not sep or not re.fullmatch(r"[a-z][a-z0-9+]*", scheme):
        raise InputError(f"storage: {given!r} is not a storage URL ({FORMS})")
    userinfo = rest.partition("@")[0] if "@" in rest else ""
    if ":" in userinfo and not ENV_VAR.fullmatch(userinfo.partition(":")[2]):
        raise InputError("storage: a password in the URL would be recorded; "
                         "give it as ${VAR} in the URL or with --storage-password-env VAR")
    return url


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
    return ResilientStorage(optuna.storages.get_storage(rdb), url)  # Optuna's cache of finished trials inside


def with_installed_driver(url: str) -> str:
    """`postgresql://` means psycopg2 to SQLAlchemy; use psycopg (3) when that is the driver installed."""
    if url.startswith("postgresql://") and importlib.util.find_spec("psycopg2") is None \
            and importlib.util.find_spec("psycopg") is not None:
        return "postgresql+psycopg://" + url.removeprefix("postgresql://")
    return url
