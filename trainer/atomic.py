"""Atomic file writes: write beside the target, then rename, so a killed process leaves no torn file.

A write that fails (a full disk, say) leaves no temp file and raises an OSError naming the target,
with the errno of the failure, even when the writer wrapped it (torch.save raises a RuntimeError).
"""
from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def atomic_path(target: str | Path) -> Iterator[Path]:
    """Yield a temporary path in the target's folder; on success it replaces `target` in one rename."""
    target = Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    os.close(fd)
    try:
        yield Path(tmp)
        os.replace(tmp, target)
    except BaseException as err:
        Path(tmp).unlink(missing_ok=True)
        cause = os_error_behind(err) if isinstance(err, Exception) else None  # Ctrl-C stays Ctrl-C
        if cause is not None and cause.errno and not cause.filename:
            raise OSError(cause.errno, os.strerror(cause.errno), str(target)) from err
        raise


def causes(err: BaseException | None) -> Iterator[BaseException]:
    """`err`, then what caused it (__cause__, else __context__), and so on."""
    seen: set[int] = set()
    while err is not None and id(err) not in seen:
        seen.add(id(err))
        yield err
        err = err.__cause__ or err.__context__


def os_error_behind(err: BaseException | None) -> OSError | None:
    """The OSError that caused `err`: itself, or the one a library wrapped (its __cause__ or __context__)."""
    return next((e for e in causes(err) if isinstance(e, OSError)), None)
