"""Where a study's trials live: an Optuna storage named by a URL.

- default `sqlite:///ROOT/NAME/optuna.db`: one machine; local workers share it (60 s lock timeout).
- `journal:PATH` (or a PATH ending in .log or .jsonl): Optuna's JournalStorage on a file, for many
  processes on one machine or on a shared filesystem with file locks; the fastest for local workers.
- any SQLAlchemy URL (`postgresql://user@host:5432/db`, …): many machines.

A password never appears in the URL the sweep is given: it comes from the environment when the
storage is opened, in the process that opens it, either as `${VAR}` inside the URL or through
`password_env` (`--storage-password-env VAR`). `StorageURL.redacted` (never holding a password)
is the only form that is printed, logged or recorded.

Every opened storage is a `ResilientStorage` (`_resilient.py`): a call that cannot reach
the database is retried for `retry_s` seconds (the spec's `storage_retry_s`), and a full disk under
a SQLite or journal file is one line naming its folder.
"""
from sweep.study.storage._open import open_storage
from sweep.study.storage._resilient import ResilientStorage
from sweep.study.storage._url import STORAGE_RETRY_S, StorageURL, storage_url

__all__ = ["STORAGE_RETRY_S", "ResilientStorage", "StorageURL", "open_storage", "storage_url"]
