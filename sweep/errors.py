"""What stops a command, as one line on stderr.

Bad input (InputError and the like): the line names the field and what is allowed; exit code 2.
A fault of the machine (EnvironmentFault): a full, over-quota or read-only disk met mid-run, or a
storage that stays unreachable; the line names the folder or the storage (redacted); exit code 1.
The trial in flight is not failed for good: the next run retries it from its last checkpoint, so
the same command resumes once the fault is fixed.
Ctrl-C: one line and exit code 130 (below: `watch`, `held`). SIGTERM while a command follows its workers: one
line and exit code 143 (`sigterm_stops`).
"""
from __future__ import annotations

import errno
import os
import re
import signal
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from rich.text import Text

from trainer.atomic import os_error_behind
from trainer.secret_text import holds_secret


def mask_secrets(text: str) -> str:
    """`text` with every whitespace-separated word that may hold a password shown as `***`: for messages that
    echo what a user typed (click's usage errors, a value quoted back). A word whose passwords are all redacted
    already stays, so a redacted storage URL still names its host."""
    def masked(word: re.Match) -> str:
        unredacted = word[0].replace(":***@", "@").replace("=***", "")  # what is shown as *** already stays
        return "***" if holds_secret(unredacted) else word[0]

    return re.sub(r"\S+", masked, text)  # the spacing kept as it was


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


def printable(text: str) -> str:
    """`text` with every character that is not printable (a newline, a terminal escape, a NUL) written as its
    Python escape: a line made from a file's contents stays one line and cannot drive the user's terminal."""
    return "".join(c if c.isprintable() else ascii(c)[1:-1] for c in text)


def plain_text(value: object) -> Text:
    """A text to show in a Rich table, read as no markup (a stored `[/x]` is shown, not parsed) and `printable` (a
    stored terminal escape or newline is shown as its escape): text read back never drives the terminal."""
    return Text(printable("" if value is None else str(value)))


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


# Ctrl-C at any moment: one line on stderr and exit code 130, never taken for success, nothing half-made.
#
# `watch()` (called first by `sweep.cli.main`) makes SIGINT both raise KeyboardInterrupt, as Python's own handler
# does, and set a flag that nothing can swallow: a KeyboardInterrupt caught by a library, lost in a finalizer or
# turned into another exit code still ends the command with 130. `held()` keeps a Ctrl-C out of a block whose
# writes belong together (a study's creation with its queued grid and attributes) and raises it at its end. A
# process started with SIGINT ignored (a background job of a script) keeps ignoring it.
INTERRUPTED = threading.Event()
INTERRUPTED_LINE = "error: interrupted (Ctrl-C); what finished is kept, and the same command resumes"


def _interrupt(signum, frame) -> None:
    INTERRUPTED.set()
    raise KeyboardInterrupt


def in_main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()


def watch() -> None:
    """From now on a Ctrl-C sets INTERRUPTED and raises KeyboardInterrupt (unless SIGINT is ignored)."""
    if in_main_thread() and signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        signal.signal(signal.SIGINT, _interrupt)


# SIGTERM (`kill PID`, a scheduler's time limit on a job running `sweep proxy`) to a command following its workers:
# by default the command died at once, silently, and its workers with it (SIGKILL by PDEATHSIG, mid-step and without
# a release). Inside `sigterm_stops()` it stops them as Ctrl-C does: each releases its trial for a retry.
TERMINATED = threading.Event()
TERMINATED_LINE = "error: terminated (SIGTERM); running trials were released, and the same command resumes"


def _terminate(signum, frame) -> None:
    TERMINATED.set()
    raise KeyboardInterrupt


@contextmanager
def sigterm_stops() -> Iterator[None]:
    """In the block (main thread; a SIGTERM left at its default), SIGTERM sets TERMINATED and raises
    KeyboardInterrupt, so the block's Ctrl-C path runs; then the handler is as it was."""
    if not in_main_thread() or signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL:
        yield
        return
    signal.signal(signal.SIGTERM, _terminate)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)


@contextmanager
def held() -> Iterator[None]:
    """Run the block whole: a Ctrl-C inside it is raised when it ends (in the main thread; elsewhere no signal
    lands anyway)."""
    if not in_main_thread():
        yield
        return
    caught: list[int] = []
    previous = signal.signal(signal.SIGINT, lambda signum, frame: caught.append(signum))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
        if caught and callable(previous):
            previous(signal.SIGINT, None)
