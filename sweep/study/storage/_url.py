"""A storage URL: parsed once and checked without connecting; its password only from the environment; its redacted form.

A password may reach the database only from the environment: `USER:${VAR}@HOST` or `--storage-password-env VAR`.
Every other place a driver would take one from is refused, after percent-decoding (repeated, as a nested URL or
conninfo string is decoded again by the driver): a literal password in the user info, a query parameter named
like a secret (libpq's `password`, `sslpassword`, `passfile`, MySQL's `passwd`, … in any case), and a conninfo
string or URL with a password inside a query value or the database name (libpq's `dbname=…`, `options=…`).
The environment's value replaces the password of the parsed URL (quoted when rendered), so no character in it
can change the host, port or database. Nothing the user gave is echoed before it is known to hold no secret.
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import quote, quote_plus

from sqlalchemy.engine import URL, make_url

from sweep.errors import InputError
from trainer.folders import check_path_length
from trainer.secret_text import decoded, holds_secret

ENV_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
JOURNAL_SUFFIXES = (".log", ".jsonl")
FORMS = "sqlite:///PATH, journal:PATH, or a SQLAlchemy URL such as postgresql://USER@HOST:PORT/DB"
STORAGE_RETRY_S = 300.0
SECRET_KEY = re.compile(r"pass|pwd|secret|token", re.IGNORECASE)  # password, passwd, passfile, sslpassword, …
FROM_THE_ENVIRONMENT = "give it as USER:${VAR}@HOST in the URL or with --storage-password-env VAR"


@dataclass(frozen=True)
class StorageURL:
    url: str  # as given: may hold ${VAR} as its password, never a literal password
    password_env: str | None = None
    retry_s: float = STORAGE_RETRY_S  # how long a call waits for an unreachable database
    parsed: URL | None = field(init=False, repr=False, compare=False)  # None for a journal file

    def __post_init__(self):
        object.__setattr__(self, "parsed", None if self.is_journal else parse(self.url, self.password_env))

    @classmethod
    def sqlite(cls, path: Path, retry_s: float = STORAGE_RETRY_S) -> StorageURL:
        """The SQLite file at `path` (any characters in it quoted)."""
        return cls(URL.create("sqlite", database=str(path)).render_as_string(), None, retry_s)

    @property
    def is_journal(self) -> bool:
        return self.url.startswith("journal:") or ("://" not in self.url and self.url.endswith(JOURNAL_SUFFIXES))

    @property
    def redacted(self) -> str:
        """The URL as it may be printed or recorded: its password (from the environment) shown as ***."""
        return self.url if self.parsed is None else self.parsed.render_as_string(hide_password=True)

    def journal_path(self) -> Path:
        return Path(self.url.removeprefix("journal:"))

    def file(self) -> Path | None:
        """The file holding the storage (SQLite or journal), None for a database server."""
        if self.is_journal:
            return self.journal_path()
        sqlite = self.parsed.get_backend_name() == "sqlite" and self.parsed.database not in (None, "", ":memory:")
        return Path(self.parsed.database) if sqlite else None

    def secrets(self) -> list[str]:
        """The password this URL names, as it may appear in a message: raw and URL-quoted."""
        names = ENV_VAR.findall(self.url) + ([self.password_env] if self.password_env else [])
        values = [os.environ[name] for name in names if os.environ.get(name)]
        return sorted({form for v in values for form in (v, quote(v, safe=""), quote_plus(v))}, key=len, reverse=True)

    def redact(self, message: str) -> str:
        """`message` on one line, with the password this URL names replaced by ***."""
        message = " ".join(message.split())
        for secret in self.secrets():
            message = message.replace(secret, "***")
        return message

    def resolved(self) -> str:
        """The URL with its password filled in from the environment (never print or store this)."""
        template = ENV_VAR.fullmatch(self.parsed.password or "")
        name = template.group(1) if template else self.password_env
        url = self.parsed if name is None else self.parsed.set(password=env_value(name))
        return url.render_as_string(hide_password=False)


def env_value(name: str) -> str:
    value = os.environ.get(name)
    if value is None:
        raise InputError(f"storage: the environment variable {name} (the storage password) is not set")
    return value


def parse(given: str, password_env: str | None) -> URL:
    """The URL parsed by SQLAlchemy, refused (an InputError that echoes nothing given) when a password is anywhere
    in it but `USER:${VAR}@`, or ${VAR} stands anywhere else."""
    scheme, sep, _ = given.partition("://")
    try:
        url = make_url(given) if sep and re.fullmatch(r"[a-z][a-z0-9+]*", scheme) else None
    except Exception:  # SQLAlchemy's ArgumentError, or a ValueError from a port that is no number
        url = None
    if url is None:
        raise InputError(f"storage: the value given is not a storage URL ({FORMS})")
    if url.password is not None and not ENV_VAR.fullmatch(url.password):
        raise InputError(f"storage: a password in the URL would be recorded; {FROM_THE_ENVIRONMENT}")
    if url.password is not None and password_env:
        raise InputError("storage: the URL has a password (${VAR}) and --storage-password-env names another; give one")
    if password_env and not url.username:
        raise InputError("storage: --storage-password-env needs a user in the URL (USER@HOST)")
    if any(SECRET_KEY.search(decoded(key)) for key in url.query):
        raise InputError(f"storage: the URL's query names a password (or where one is kept: password, passfile, "
                         f"sslpassword, …) that would be recorded; {FROM_THE_ENVIRONMENT}")
    parts = [url.username or "", url.host or "", url.database or ""]
    parts += [text for key, values in url.query.items() for text in (key, *([values] if isinstance(values, str)
                                                                           else values))]
    if any(holds_secret(part) for part in parts) or ":" in decoded(url.username or ""):
        raise InputError(f"storage: the URL holds a password inside its user, database or query (a conninfo string "
                         f"or a nested URL) that would be recorded; {FROM_THE_ENVIRONMENT}")
    if any("${" in decoded(part) for part in parts):
        raise InputError("storage: ${VAR} stands only for the password (USER:${VAR}@HOST)")
    return url


def storage_url(given: str | None, password_env: str | None, default_sqlite: Path,
                retry_s: float = STORAGE_RETRY_S) -> StorageURL:
    """Check a storage URL's form without connecting; the default is a SQLite file in the study folder."""
    url = StorageURL(given, password_env, retry_s) if given else StorageURL.sqlite(default_sqlite, retry_s)
    if url.is_journal and password_env:
        raise InputError("--storage-password-env: a journal file has no password")
    if not url.is_journal and url.parsed.get_backend_name() == "sqlite" and url.file() is None:
        raise InputError(f"storage: {url.redacted} is a SQLite database in memory: it ends with this process, so no "
                         "worker can share it and no command can resume it; give sqlite:///PATH")
    if url.file() is not None:
        check_path_length(url.file(), "storage")  # the file system's limits: one line, not OSError ENAMETOOLONG
    return url
