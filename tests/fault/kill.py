"""Fault injection for the fault suite: start a real `sweep` process, SIGKILL it at a chosen moment, and
check what it left.

- `fault_repeats(short, full)`: how often a fault is injected (SWEEP_FAULT_FULL=1 selects the full form).
- `running`: `python -m sweep ARGS…` in a session of its own, so its workers can be found (and none outlive it).
- `CreateWatch`: inotify on a folder tree; `kill_on_create` sends SIGKILL the moment a file whose name
  matches appears (a SQLite rollback journal, a journal-storage lock, a temp part or checkpoint), which
  lands inside a write a polling loop would almost always miss (`promptly`: at real-time priority when
  allowed). Given `inside`, the session is first stopped (SIGSTOP) and the kill sent only while the file
  is still there; a write that ended first is let go on (SIGCONT) and the next match is tried, so the
  kill lands inside a write however loaded the machine is. Whether it landed is read afterwards from
  what is left: a write killed midway leaves its journal or temp file behind.
- `wait_gone`, `wait_dead`, `descendants`: every process of the killed command has exited (no orphan
  goes on training or writing).
"""
from __future__ import annotations

import ctypes
import fnmatch
import os
import select
import signal
import struct
import subprocess
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TypeVar

from sweep.cluster.processes import process_start, session_members
from tests.sweep_helpers import sweep_cmd, sweep_env

IN_MOVED_TO, IN_CREATE, IN_DELETE, IN_ISDIR = 0x80, 0x100, 0x200, 0x40000000
T = TypeVar("T")
EVENT = struct.Struct("iIII")  # struct inotify_event: wd, mask, cookie, len; then len bytes of name


def fault_repeats(short: T, full: T) -> T:
    """The full form of a fault's repeats (a count, or a list of cases) when SWEEP_FAULT_FULL=1 (`make fault`),
    else the short form (the default CI run)."""
    return full if os.environ.get("SWEEP_FAULT_FULL") == "1" else short


@contextmanager
def running(root: Path, *args) -> Iterator[subprocess.Popen]:
    """`sweep ARGS…` with SWEEP_ROOT=root as the leader of a new session (its session id is its pid); whatever
    of it is still alive when the block ends (a test that failed before its kill) is killed."""
    proc = subprocess.Popen(sweep_cmd(*args), env=sweep_env(root), cwd=root, start_new_session=True,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        yield proc
    finally:
        if proc.poll() is None or session_members(proc.pid):
            kill_session(proc)


def signal_session(proc: subprocess.Popen, sig: int) -> None:
    """Send `sig` to `proc`'s process group in one call (the command and the workers it started), then to
    anything else of its session."""
    try:
        os.killpg(proc.pid, sig)
    except ProcessLookupError:  # the group is gone; a member may have left it
        pass
    for pid in session_members(proc.pid):
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            pass


def kill_session(proc: subprocess.Popen) -> None:
    """SIGKILL `proc`'s whole session, then reap it."""
    signal_session(proc, signal.SIGKILL)
    proc.wait()


def wait_gone(sid: int, timeout: float = 15) -> None:
    """Wait until no live process of session `sid` is left; fail naming the survivors."""
    wait_dead(lambda: session_members(sid), timeout)


def wait_dead(left: Callable[[], list[int]], timeout: float = 15) -> None:
    """Wait until `left()` (the processes still alive) is empty; fail naming the survivors."""
    deadline = time.monotonic() + timeout
    while (pids := left()) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not pids, f"processes {pids} of the killed command are still alive"


class CreateWatch:
    """inotify on `root` and every folder below it (folders created later included): names of files created."""

    def __init__(self, root: Path):
        self.libc = ctypes.CDLL("libc.so.6", use_errno=True)
        self.fd = self.libc.inotify_init1(os.O_CLOEXEC)
        if self.fd < 0:
            raise OSError(ctypes.get_errno(), "inotify_init1")
        self.folders: dict[int, Path] = {}
        self.pending: list[Path] = []  # files found by scanning a new folder (created before its watch)
        self.add(Path(root))

    def add(self, folder: Path) -> None:
        # deletions too, though unused: the kernel merges identical events in a row, and a file created,
        # deleted and created again before we read would otherwise count once
        wd = self.libc.inotify_add_watch(self.fd, str(folder).encode(), IN_CREATE | IN_MOVED_TO | IN_DELETE)
        if wd < 0:
            return  # gone already
        self.folders[wd] = folder
        for path in folder.iterdir():
            if path.is_dir():
                self.add(path)
            else:
                self.pending.append(path)

    def created(self, timeout: float) -> list[Path]:
        """The files created since the last call, waiting up to `timeout` s for one."""
        if self.pending:
            found, self.pending = self.pending, []
            return found
        ready, _, _ = select.select([self.fd], [], [], timeout)
        if not ready:
            return []
        data, found, offset = os.read(self.fd, 65536), [], 0
        while offset < len(data):
            wd, mask, _, length = EVENT.unpack_from(data, offset)
            name = data[offset + EVENT.size: offset + EVENT.size + length].rstrip(b"\0").decode()
            offset += EVENT.size + length
            if wd not in self.folders or mask & IN_DELETE:
                continue
            path = self.folders[wd] / name
            if mask & IN_ISDIR:
                self.add(path)
            else:
                found.append(path)
        found, self.pending = found + self.pending, []
        return found

    def close(self) -> None:
        os.close(self.fd)


def wait_created(proc: subprocess.Popen, watch: CreateWatch, pattern: str, timeout: float, nth: int = 1) -> Path | None:
    """The `nth` file whose path matches `pattern` (fnmatch: `*` spans folders) created under the watch, the
    moment it appears; None when there were fewer within `timeout` s, or `proc` ended first."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and proc.poll() is None:
        for path in watch.created(min(0.2, max(0.0, deadline - time.monotonic()))):
            if fnmatch.fnmatch(str(path), pattern) and (nth := nth - 1) == 0:
                return path
    return None


@contextmanager
def promptly() -> Iterator[None]:
    """Real-time priority (SCHED_FIFO) for the calling thread while it waits to kill, so the kill follows the
    event at once rather than after the writer's time slice on a busy machine. Best effort: without the
    privilege (CAP_SYS_NICE) it runs at normal priority."""
    try:
        os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(1))
    except OSError:
        yield
        return
    try:
        yield
    finally:
        os.sched_setscheduler(0, os.SCHED_OTHER, os.sched_param(0))


def kill_on_create(proc: subprocess.Popen, root: Path, pattern: str, timeout: float, nth: int = 1,
                   inside: Callable[[Path], bool] | None = None) -> Path | None:
    """SIGKILL `proc`'s whole session the moment the `nth` file whose path matches `pattern` appears under
    `root`; the path that triggered it, or None (nothing killed) as `wait_created`. With `inside` (is the
    write still under way, read from the file), the session is stopped first and killed only when
    `inside(path)`; otherwise it goes on and the next match is tried."""
    watch = CreateWatch(root)
    deadline = time.monotonic() + timeout
    try:
        with promptly():
            while (path := wait_created(proc, watch, pattern, deadline - time.monotonic(), nth)) is not None:
                if inside is None:
                    break
                signal_session(proc, signal.SIGSTOP)
                if inside(path):
                    break
                signal_session(proc, signal.SIGCONT)
                nth = 1
            if path is not None:
                kill_session(proc)
        return path
    finally:
        watch.close()


def descendants(pid: int) -> list[int]:
    """The live processes started by `pid`, and by them, in any session (torchrun starts its workers in
    sessions of their own)."""
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if fields[0] != "Z":
            children.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    found, todo = [], list(children.get(pid, []))
    while todo:
        found.append(child := todo.pop())
        todo += children.get(child, [])
    return found


def alive(pids: list[int]) -> list[int]:
    """Those of `pids` still running (zombies are dead)."""
    return [pid for pid in pids if process_start(pid) is not None]
