"""A Ray driver from this command: a spawned child process in its own session that joins a cluster or starts a
private local instance, and whose every process (Ray's included) ends with it, even when this command is killed.

The driver is a child process in its own session, so every process the local Ray instance starts can be found
and killed when it ends: none outlives the command. Three paths end them: the driver itself after ray.shutdown
(`leave_driver`); this command after the driver exits (`Driver.end`); and, when this command is killed with
SIGKILL (Linux then kills the driver, see `die_with_parent`), a reaper forked by the driver that outlives it.
A private instance's session files and auth token go to a temp dir removed afterwards, never to /tmp/ray or
~/.ray. Used by the sweep's Ray backend (`sweep.backends.ray`) and by `sweep launch --backend ray`.
"""
from __future__ import annotations

import multiprocessing as mp
import os
import secrets
import shutil
import socket
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from sweep.cluster.processes import become_subreaper, die_with_parent, end_session, reap_children, start_reaper
from sweep.errors import InputError

STOP_TIMEOUT_S = 60.0


def check_address(address: str) -> None:
    """A cluster address must be HOST:PORT or ray://HOST:PORT, and answer (`auto` is Ray's own lookup)."""
    if address == "auto":
        return
    host, _, port = address.removeprefix("ray://").rpartition(":")
    if not host or not port.isdigit():
        raise InputError(f"--address: {address!r} is not HOST:PORT, ray://HOST:PORT or auto")
    try:
        socket.create_connection((host, int(port)), timeout=5).close()
    except OSError as err:
        raise InputError(f"--address: cannot reach the Ray cluster at {address} ({err.strerror or err})") from None


@dataclass
class Driver:
    """A started driver process and the temp dir of its instance."""
    process: mp.Process
    temp_dir: str

    def end(self) -> None:
        """Kill the driver if it still runs, end what its session left, remove the temp dir."""
        if self.process.is_alive():
            self.process.kill()
        self.process.join()
        end_session(self.process.pid, STOP_TIMEOUT_S)
        shutil.rmtree(self.temp_dir, ignore_errors=True)


def start_driver(target: Callable, name: str, args: tuple, log: Path) -> Driver:
    """Spawn `target(*args, temp_dir, log)` as the driver, with a fresh temp dir; `log` gets its output."""
    temp_dir = tempfile.mkdtemp(prefix="sweep-ray-")
    log.parent.mkdir(parents=True, exist_ok=True)
    process = mp.get_context("spawn").Process(target=target, name=name, args=(*args, temp_dir, str(log)))
    process.start()
    return Driver(process, temp_dir)


def end_driver_session(temp_dir: str) -> None:
    """In the reaper, once the driver is gone: end the rest of its session and remove the temp dir."""
    end_session(os.getsid(0), STOP_TIMEOUT_S, spare=(os.getpid(),))
    shutil.rmtree(temp_dir, ignore_errors=True)


def enter_driver(temp_dir: str, log: str, address: str | None) -> None:
    """The start of a Ray driver process: its own session (Ray's processes join it), dying with its parent,
    a reaper that ends the session however the driver dies, its output to `log`, and for a private
    instance (no `address`) a fresh auth token in the temp dir."""
    os.setsid()
    die_with_parent()
    become_subreaper()  # Ray's processes orphaned by the shutdown are reaped here, not left as zombies
    start_reaper(lambda: end_driver_session(temp_dir))
    with open(log, "a") as out:
        os.dup2(out.fileno(), 1)
        os.dup2(out.fileno(), 2)
    if address is None:
        token = Path(temp_dir) / "auth_token"
        token.write_text(secrets.token_hex(32))
        token.chmod(0o600)
        os.environ["RAY_AUTH_TOKEN_PATH"] = str(token)
    os.environ.setdefault("RAY_AIR_NEW_OUTPUT", "0")


def init_ray(address: str | None, temp_dir: str, runtime_env: dict | None = None) -> None:
    """Join the cluster at `address`, or start a private instance with every CPU, its session files in `temp_dir`."""
    import ray

    if address is None:
        ray.init(num_cpus=os.cpu_count(), _temp_dir=temp_dir, include_dashboard=False, log_to_driver=False,
                 runtime_env=runtime_env)
    else:
        ray.init(address=address, log_to_driver=False, runtime_env=runtime_env)


def leave_driver() -> None:
    """Shut Ray down and end what the shutdown left in the driver's session (the reaper too)."""
    import ray

    ray.shutdown()
    end_session(os.getpid(), STOP_TIMEOUT_S, spare=(os.getpid(),))
    reap_children()
