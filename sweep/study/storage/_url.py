"""A storage URL: its forms, checked without connecting, its password from the environment, its redacted form."""
from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

from sweep.errors import InputError

ENV_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
JOURNAL_SUFFIXES = (".log", ".jsonl")
FORMS = "sqlite:///PATH, journal:PATH, or a SQLAlchemy URL such as postgresql://USER@HOST:PORT/DB"
STORAGE_RETRY_S = 300.0


@dataclass(frozen=True)
class StorageURL:
    url: str  # as given: may hold ${VAR}, never a literal password
    password_env: str | None = None
    retry_s: float = STORAGE_RETRY_S  # how long a call waits for an unreachable database

    @property
    def is_journal(self) -> bool:
        return self.url.startswith("journal:") or ("://" not in self.url and self.url.endswith(JOURNAL_SUFFIXES))

    @property
    def redacted(self) -> str:
        return ENV_VAR.sub("***", self.url)

    def journal_path(self) -> Path:
        return Path(self.url.removeprefix("journal:"))

    def file(self) -> Path | None:
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
                raise InputError(f"storage: {self.redacted} needs a user and no password (USER@HOST) "
                                 "for --storage-password-env")
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
