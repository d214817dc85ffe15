"""Ctrl-C at any moment of `sweep proxy`: one line on stderr, exit 130, never a traceback, the study exists whole
(its queued grid and its attributes) or not at all, and the same command then finishes it.

The moments are states, not delays: the storage file appearing (the study being created), a worker process
started (still importing), and the first trial's checkpoint. The signal goes to the whole process group, as a
terminal's Ctrl-C does.
"""

import os
import signal
import subprocess
import time
from pathlib import Path

import optuna
import pytest

from sweep.errors import INTERRUPTED_LINE as LINE
from sweep.errors import TERMINATED_LINE
from tests.sweep_helpers import load, run_sweep, states, sweep_cmd, sweep_env, write_spec

GRID = {"optimizer.lr": {"choices": [0.001, 0.003, 0.01]}}


def wait_for(predicate, proc: subprocess.Popen, what: str):
    """Poll until `predicate()` holds; the command ending first is a failure (the moment was missed)."""
    while not (value := predicate()):
        assert proc.poll() is None, f"sweep proxy ended before {what}: {proc.communicate()}"
        time.sleep(0.02)
    return value


def children(pid: int) -> list[int]:
    path = Path(f"/proc/{pid}/task/{pid}/children")
    return [int(p) for p in path.read_text().split()] if path.exists() else []


MOMENTS = {
    "study-being-created": lambda root: (root / "tiny" / "optuna.db").exists(),
    "worker-starting": None,  # a worker process exists (set in the test: it needs the command's pid)
    "first-checkpoint": lambda root: list(
        (root / "tiny" / "runs" / "w16-mup-t00000-s0" / "checkpoints").glob("step-*.pt")
    ),
}


@pytest.mark.parametrize("moment", MOMENTS)
def test_ctrl_c_at_any_moment_is_one_line_exit_130_a_whole_study_or_none_and_the_same_command_finishes_it(
    tmp_path, moment
):
    spec = write_spec(
        tmp_path,
        trials=3,
        search=GRID,
        sampler={"name": "grid"},
        run={"steps": 30, "checkpoint": {"every": 5, "keep": 1}},
    )
    proc = subprocess.Popen(
        sweep_cmd("proxy", spec, "--width", "16"),
        env=sweep_env(tmp_path),
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    ready = MOMENTS[moment] or (lambda root: children(proc.pid))
    wait_for(lambda: ready(tmp_path), proc, moment)
    os.killpg(proc.pid, signal.SIGINT)
    out, err = proc.communicate(timeout=120)

    assert proc.returncode == 130, (out, err)
    assert err == LINE + "\n", err  # one line, and no worker's traceback beside it
    try:
        study = load(tmp_path)
    except (KeyError, optuna.exceptions.StorageInternalError, ValueError):
        study = None  # interrupted before the study was made: none at all is whole too
    if study is not None:
        assert study.user_attrs["spec_hash"] and len(study.trials) >= 3  # every grid point queued, attributes set
    resumed = run_sweep(tmp_path, "proxy", spec, "--width", "16", timeout=600)
    assert resumed.returncode == 0, resumed.stderr
    finished = load(tmp_path)
    assert states(finished).get("COMPLETE") == 3
    assert sorted(t.params["optimizer.lr"] for t in finished.trials if t.state.name == "COMPLETE") == [
        0.001,
        0.003,
        0.01,
    ]


def test_a_worker_interpreter_starts_with_ctrl_c_held(tmp_path):
    """The classic bug: multiprocessing starts its resource tracker on the first spawn and unblocks SIGINT as it
    does, undoing the launch's block; a Ctrl-C then lands in a worker importing `site` (a fatal error on stderr).
    A `sitecustomize` records each interpreter's blocked signals as it starts."""
    hooks, masks = tmp_path / "hooks", tmp_path / "masks"
    hooks.mkdir()
    masks.mkdir()
    (hooks / "sitecustomize.py").write_text(
        "import os\n"
        "blocked = next(l.split()[1] for l in open('/proc/self/status') if l.startswith('SigBlk'))\n"
        f"path = os.path.join({str(masks)!r}, str(os.getpid()))\n"
        "import sys; open(path + '.tmp', 'w').write(f'{os.getppid()} {blocked} {sys.argv}')\n"  # argv: for the failure
        "os.replace(path + '.tmp', path)\n"
    )
    spec = write_spec(tmp_path, trials=1, search=GRID, sampler={"name": "grid"}, run={"steps": 2})
    path = os.pathsep.join(filter(None, [str(hooks), os.environ.get("PYTHONPATH")]))
    proc = subprocess.Popen(sweep_cmd("proxy", spec, "--width", "16"), env=sweep_env(tmp_path, PYTHONPATH=path),
                            cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)

    def workers() -> list[int]:
        found = [f.read_text().split()[:2] for f in masks.iterdir() if f.suffix != ".tmp"]
        return [int(blocked, 16) for parent, blocked in found if int(parent) == proc.pid and int(blocked, 16)
                != 1 << (signal.SIGINT - 1) | 1 << (signal.SIGTERM - 1)]  # not the resource tracker's

    try:
        started = wait_for(workers, proc, "a worker started")
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    assert all(blocked & 1 << (signal.SIGINT - 1) for blocked in started), [f.read_text() for f in masks.iterdir()]


def test_a_worker_releasing_its_trial_ignores_a_second_ctrl_c_and_then_gives_the_caller_its_own_back():
    """A worker ignored SIGINT for its release and left it so: a caller in the same process (a test, a library
    user) lost Ctrl-C for good, and every command it started later inherited the ignored signal and ran deaf to
    it (3 Ctrl-C tests of a loaded `make test` ran to the end with exit 0)."""
    from sweep.study.worker import no_ctrl_c

    before = signal.getsignal(signal.SIGINT)
    with no_ctrl_c():
        assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
        os.kill(os.getpid(), signal.SIGINT)  # ignored: no KeyboardInterrupt here
    assert signal.getsignal(signal.SIGINT) is before


def test_sigterm_to_a_sweep_following_its_workers_releases_their_trials_in_one_line_exit_143_and_resumes(tmp_path):
    """Found by an outside tester: SIGTERM to `sweep proxy` alone (`kill PID`, a scheduler's time limit on the job
    running it) ended it at once, exit 143 and not a word, and its workers with it (SIGKILL, as they die with their
    parent), mid-step and without releasing their trials. Now it stops them as Ctrl-C does, says so, and the same
    command finishes the study."""
    spec = write_spec(tmp_path, trials=3, search=GRID, sampler={"name": "grid"},
                      run={"steps": 30, "checkpoint": {"every": 5, "keep": 1}})
    proc = subprocess.Popen(sweep_cmd("proxy", spec, "--width", "16"), env=sweep_env(tmp_path), cwd=tmp_path,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    wait_for(lambda: MOMENTS["first-checkpoint"](tmp_path), proc, "the first checkpoint")
    workers = [pid for pid in children(proc.pid) if "spawn_main" in cmdline(pid)]  # not the resource tracker
    assert workers
    proc.send_signal(signal.SIGTERM)  # the command alone, not its process group
    out, err = proc.communicate(timeout=120)

    assert proc.returncode == 143, (out, err)
    assert err == TERMINATED_LINE + "\n", err
    assert "stopped: running trials were released" in out
    assert not [pid for pid in workers if Path(f"/proc/{pid}").exists() and "Z" not in status(pid)]
    assert states(load(tmp_path)).get("RUNNING") is None  # released, not left to go stale
    resumed = run_sweep(tmp_path, "proxy", spec, "--width", "16", timeout=600)
    assert resumed.returncode == 0, resumed.stderr
    assert states(load(tmp_path)).get("COMPLETE") == 3


def cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return ""


def status(pid: int) -> str:
    try:
        return next(line for line in Path(f"/proc/{pid}/status").read_text().splitlines() if line.startswith("State"))
    except (FileNotFoundError, ProcessLookupError):
        return "Z (gone)"
