"""Linux process plumbing shared by sweep workers and full runs: which process on which machine, a child that
dies with its parent, and a session whose every process can be found and ended, even when the process that
owns it is killed with SIGKILL.

- `machine_id`, `process_start`: a process is (machine, pid, start time), so a reused pid or a process on
  another machine (or container) is told apart; `this_process` records one, `process_alive` asks after it.

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
import socket
import time
from collections.abc import Callable
from pathlib import Path

PR_SET_PDEATHSIG, PR_SET_CHILD_SUBREAPER = 1, 36


def machine_id() -> str:
    """Host name, boot id and pid namespace: two containers on one kernel share a boot id, not a namespace."""
    boot = Path("/proc/sys/kernel/random/boot_id")
    boot_id = boot.read_text().strip()[:8] if boot.exists() else "-"
    try:
        namespace = os.readlink("/proc/self/ns/pid")
    except OSError:
        namespace = "-"
    return f"{socket.gethostname()}/{boot_id}/{namespace}"


def process_start(pid: int) -> str | None:
    """The process's start time in clock ticks since boot (tells a reused pid apart), None if gone.

    A zombie is gone: it has exited and waits only to be reaped, which PID 1 of some containers never does.
    """
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat.rsplit(")", 1)[1].split()  # fields 3, 4, … counted after the command name
    return None if fields[0] == "Z" else fields[19]  # field 3: the state; field 22: the start time


def this_process(pid: int) -> dict:
    return {"machine": machine_id(), "pid": pid, "start": process_start(pid)}


def process_alive(process: dict) -> bool | None:
    """Whether a recorded process still runs; None when it ran on another machine (unknown from here)."""
    if process["machine"] != machine_id():
        return None
    return process_start(process["pid"]) == process["start"]


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
