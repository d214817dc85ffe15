"""Ctrl-C at any moment: one line on stderr and exit code 130, never taken for success, nothing half-made.

`watch()` (called first by `sweep.cli.main`) makes SIGINT both raise KeyboardInterrupt, as Python's own handler
does, and set a flag that nothing can swallow: a KeyboardInterrupt caught by a library, lost in a finalizer or
turned into another exit code still ends the command with 130. `held()` keeps a Ctrl-C out of a block whose
writes belong together (a study's creation with its queued grid and attributes) and raises it at its end. A
process started with SIGINT ignored (a background job of a script) keeps ignoring it.
"""
from __future__ import annotations

import signal
import threading
from contextlib import contextmanager
from typing import Iterator

INTERRUPTED = threading.Event()
LINE = "error: interrupted (Ctrl-C); what finished is kept, and the same command resumes"


def _interrupt(signum, frame) -> None:
    INTERRUPTED.set()
    raise KeyboardInterrupt


def in_main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()


def watch() -> None:
    """From now on a Ctrl-C sets INTERRUPTED and raises KeyboardInterrupt (unless SIGINT is ignored)."""
    if in_main_thread() and signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        signal.signal(signal.SIGINT, _interrupt)


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
