"""Linux process plumbing for the backends: a child that dies with its parent, and a session whose every
process can be found and ended, even when the process that owns it is killed with SIGKILL.

- `die_with_parent`: prctl(PR_SET_PDEATHSIG, SIGKILL), the kernel kills the caller when its parent exits.
- A session (setsid) groups a process with everything it starts that does not leave it; members are read
  from /proc/PID/stat (field 6, the session id). Zombies are not members: they are dead, only unreaped.
- `become_subreaper`: prctl(PR_SET_CHILD_SUBREAPER), orphans of the caller's descendants become its
  children instead of PID 1's, so the caller can reap them (PID 1 in some containers never does).
- `start_reaper`: a forked process that waits on a pipe only its parent writes to; end of file means the
  parent is gone, however it died, and the reaper then ends the rest of the session.
Elsewhere than Linux these do nothing (no /proc, no prctl).
"""
from __future__ import annotations

import ctypes
import os
import signal
import time
from pathlib import Path
from typing import Callable

PR_SET_PDEATHSIG, PR_SET_CHILD_SUBREAPER = 1, 36


def prctl(option: int, value: int) -> bool:
    try:
        libc = ctypes.CDLL("libc.so.6", use_errno=True)
    except OSError:
        return False
    return libc.prctl(option, value) == 0


def die_with_parent() -> None:
    """Ask Linux to SIGKILL this process when its parent exits (no-op elsewhere)."""
    if prctl(PR_SET_PDEATHSIG, signal.SIGKILL) and os.getppid() == 1:  # the parent died before the request
        os._exit(1)


def become_subreaper() -> None:
    """Orphaned descendants of this process become its children (to be reaped by `reap_children`)."""
    prctl(PR_SET_CHILD_SUBREAPER, 1)


def session_members(sid: int) -> list[int]:
    """The live (not zombie) processes of session `sid`, its leader included."""
    members = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()  # fields 3, 4, … counted after the command name
        except OSError:
            continue
        if fields[0] != "Z" and int(fields[3]) == sid:
            members.append(int(stat.parent.name))
    return members


def end_session(sid: int, timeout: float, spare: tuple[int, ...] = ()) -> list[int]:
    """SIGKILL every process of session `sid` but `spare` until none is left or `timeout` s passed;
    returns those still alive then (a process in uninterruptible sleep can outlast a SIGKILL a while)."""
    deadline = time.monotonic() + timeout
    while True:
        left = [pid for pid in session_members(sid) if pid not in spare]
        if not left or time.monotonic() >= deadline:
            return left
        for pid in left:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        time.sleep(0.05)


def reap_children() -> None:
    """Collect the exit status of every child of this process that has ended (no zombies left behind)."""
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def start_reaper(on_parent_gone: Callable[[], None]) -> None:
    """Fork a process that calls `on_parent_gone` once this process has exited, however it died.

    Call it early, before this process starts threads (a fork copies only the calling thread). The
    pipe's write end is close-on-exec, so only this process holds it and its exit closes the pipe.
    """
    read_end, write_end = os.pipe()
    if os.fork() == 0:
        os.close(write_end)
        try:
            os.read(read_end, 1)  # b"" at end of file: the parent is gone
            on_parent_gone()
        finally:
            os._exit(0)
    os.close(read_end)
