"""Reading back a file the tool wrote: a damaged one is one line naming it, never the reader's traceback.

Curve parts, result.json, launch.json and the checkpoints folder are written whole (trainer.atomic), so a damaged
one was cut by a full disk on another machine, edited, or replaced: a truncated Parquet part, JSON that is not the
object written, a field missing or of another type, a file where a folder goes. `reading` turns what the library
raises then (pyarrow's ArrowInvalid is a ValueError, its ArrowIOError an OSError, json's errors ValueErrors, a
missing key a KeyError) into a DamagedFile: bad input (exit 2) whose line names the file and what to do.
"""
from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from trainer.config import ConfigError

DAMAGE = (OSError, ValueError, KeyError, TypeError, IndexError, RecursionError, EOFError)


class DamagedFile(ConfigError):
    """A file the tool wrote that cannot be read back as written."""


@contextmanager
def reading(path: str | Path, what: str) -> Iterator[None]:
    """Run the block that reads `path`; whatever its damage raises is a DamagedFile naming it (a missing file
    stays FileNotFoundError: the callers know what its absence means)."""
    try:
        yield
    except FileNotFoundError:
        raise
    except DAMAGE as err:
        found = " ".join(str(err).split())[:160]
        raise DamagedFile(f"{what}: {path} is damaged ({type(err).__name__}: {found}); the tool wrote it whole, "
                          "so restore it or move it away") from None


def read_object(path: str | Path, what: str, fields: dict[str, type]) -> dict | None:
    """The JSON object in `path` with each of `fields` present and of its type; None when there is no file."""
    path = Path(path)
    if not path.exists():
        return None
    with reading(path, what):
        value = json.loads(path.read_text())
        check_fields(value, fields)
    return value


def check_fields(value: object, fields: dict[str, type]) -> None:
    """A TypeError unless `value` is an object holding each of `fields` with its type (no field is a boolean)."""
    if not isinstance(value, dict):
        raise TypeError(f"holds a {type(value).__name__}, not an object")
    for name, kind in fields.items():
        if isinstance(value.get(name), bool) or not isinstance(value.get(name), kind):
            raise TypeError(f"field {name!r} is missing or not a {kind.__name__}")
