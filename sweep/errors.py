"""What stops a command, as one line on stderr.

Bad input (InputError and the like): the line names the field and what is allowed; exit code 2.
A fault of the machine (EnvironmentFault): a full, over-quota or read-only disk met mid-run, or a
storage that stays unreachable; the line names the folder or the storage (redacted); exit code 1.
The trial in flight is not failed for good: the next run retries it from its last checkpoint, so
the same command resumes once the fault is fixed.
"""
from __future__ import annotations

import errno
import os
import sys
from pathlib import Path

from trainer.atomic import os_error_behind


class InputError(ValueError):
    """A bad flag or spec value; str() is one line naming the field."""


class EnvironmentFault(RuntimeError):
    """The disk or the storage, not the input or the run, stopped the work; str() is one line naming it."""


# Bad input found below sweep, by the class's module and name: an error cannot be an instance of a class whose
# module was never imported, so this module (and a light command) imports neither torch nor the model zoo.
BAD_INPUT_BELOW = {"proxies.data": "DataError", "proxies.registry": "ModelError", "proxies.resources": "ResourceError",
                   "trainer.config": "ConfigError"}
DISK_ERRNOS = {errno.ENOSPC: "the disk is full (ENOSPC)", errno.EDQUOT: "the disk quota is exceeded (EDQUOT)",
               errno.EROFS: "the file system is read-only (EROFS)"}


def is_bad_input(err: BaseException) -> bool:
    """Whether `err` is bad input: an InputError, or a DataError, ModelError, ResourceError or ConfigError from
    below."""
    return isinstance(err, InputError) or any(isinstance(err, getattr(sys.modules[module], name))
                                              for module, name in BAD_INPUT_BELOW.items() if module in sys.modules)


def as_fault(err: BaseException) -> EnvironmentFault | None:
    """`err` as an EnvironmentFault when a full, over-quota or read-only disk caused it, naming the folder
    of the file being written; else None."""
    if isinstance(err, EnvironmentFault):
        return err
    cause = os_error_behind(err)
    if cause is None or cause.errno not in DISK_ERRNOS:
        return None
    where = f"{Path(os.fsdecode(cause.filename)).parent}: " if cause.filename else ""
    return EnvironmentFault(f"{where}{DISK_ERRNOS[cause.errno]}; the same command resumes once that is fixed")
