"""`--backend ray` on a real local Ray instance (2 CPUs): Tune runs the study's trials with an exact
count, a Ray worker killed mid-trial is retried from its checkpoint, and nothing of Ray outlives the
command, even one killed with SIGKILL, or writes to the user's home or /tmp/ray."""
import os
import signal
import subprocess
import time
from pathlib import Path

import pandas as pd
import pytest
from optuna.trial import TrialState

from sweep.study.study import counts
from tests.sweep_helpers import early_rows, kept, load, run_sweep, states, sweep_cmd, sweep_env, write_spec

TEMP = Path(os.environ.get("TMPDIR", "/tmp"))


def ray_processes() -> set[str]:
    """Live Ray processes, as "pid args" (zombies are dead, only unreaped, and not counted)."""
    out = subprocess.run(["ps", "-eo", "pid,stat,args"], capture_output=True, text=True).stdout
    return {f"{pid} {args}" for pid, stat, args in (line.split(None, 2) for line in out.splitlines()[1:])
            if not stat.startswith("Z") and any(name in args for name in ("raylet", "gcs_server", "ray::"))}


def ray_left(before: set[str]) -> tuple[set[str], set[Path]]:
    """Ray processes and sweep-ray temp dirs that were not there `before` (a set of both)."""
    return ray_processes() - before, set(TEMP.glob("sweep-ray-*")) - before


@pytest.fixture
def no_ray_left():
    """Ray processes and temp dirs of this test must be gone after it; ~/.ray and /tmp/ray must not appear."""
    existed = {p: p.exists() for p in (Path(os.path.expanduser("~/.ray")), Path("/tmp/ray"))}
    before = ray_processes() | set(TEMP.glob("sweep-ray-*"))
    yield before
    assert ray_left(before) == (set(), set())
    assert {p: p.exists() for p in existed} == existed


def test_ray_runs_a_4_trial_study_and_leaves_nothing_behind(tmp_path, no_ray_left):
    spec = write_spec(tmp_path, trials=4)
    # a relative storage path means the command's folder, also in Ray's workers (Tune's default is a trial folder)
    done = run_sweep(tmp_path, "proxy", spec, "--width", "16", "--backend", "ray", "--workers", "2",
                     "--cpus-per-trial", "1", "--storage", "journal:shared/tiny.log", timeout=400)
    assert done.returncode == 0, done.stderr
    assert "Ray Tune on a local Ray instance, 2 trial(s) at once" in done.stdout
    study = load(tmp_path, storage=f"journal:{tmp_path / 'shared' / 'tiny.log'}")
    assert states(study) == {"COMPLETE": 4}
    for t in study.trials:
        curve = pd.read_parquet(tmp_path / t.user_attrs["curves"])
        assert curve["step"].max() == 20 and curve["val_loss"].dropna().iloc[-1] == pytest.approx(t.value)


def trial_zero_worker(root: Path, proc: subprocess.Popen) -> int:
    """The pid of the worker that claimed trial 0, once one has."""
    deadline = time.time() + 240
    while True:
        assert time.time() < deadline and proc.poll() is None, "trial 0 was never claimed"
        try:
            return load(root).trials[0].system_attrs["sweep:worker"]["pid"]
        except Exception:  # no study yet (no database, or one half made), no trial, or not claimed
            time.sleep(0.2)


def kill_mid_run(worker: int, run: Path, proc: subprocess.Popen) -> None:
    """SIGKILL `worker` while `run` has a checkpoint and no result: the worker is stopped (SIGSTOP) before each look,
    so the run cannot finish between the look and the kill (under load trial 0 once finished first, and the test
    killed trial 1)."""
    deadline = time.time() + 240
    while True:
        assert time.time() < deadline and proc.poll() is None, "trial 0 never checkpointed"
        os.kill(worker, signal.SIGSTOP)
        assert not (run / "result.json").exists(), "trial 0 finished before it checkpointed"
        if list((run / "checkpoints").glob("step-*.pt")):
            os.kill(worker, signal.SIGKILL)
            return
        os.kill(worker, signal.SIGCONT)
        time.sleep(0.2)


def test_a_ray_worker_killed_mid_trial_is_retried_and_the_count_is_exact(tmp_path, no_ray_left):
    spec = write_spec(tmp_path, trials=2, run={"steps": 1500, "log_every": 50, "eval": {"every": 50},
                                               "checkpoint": {"every": 50, "keep": 2}})
    proc = subprocess.Popen(sweep_cmd("proxy", spec, "--width", "16", "--backend", "ray", "--workers", "1"),
                            env=sweep_env(tmp_path), cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    worker = trial_zero_worker(tmp_path, proc)
    assert worker != proc.pid and "ray::" in Path(f"/proc/{worker}/cmdline").read_text()  # a Ray worker
    kill_mid_run(worker, tmp_path / "tiny" / "runs" / "w16-mup-t00000-s0", proc)
    rows = early_rows(tmp_path)  # written by the killed worker before its first checkpoint
    out, err = proc.communicate(timeout=400)
    assert proc.returncode == 0, err

    study = load(tmp_path)
    assert sum(map(counts, study.trials)) == 2 and states(study) == {"FAIL": 1, "COMPLETE": 2}
    lost = study.trials[0]
    assert lost.user_attrs["reason"].startswith("worker lost")
    [retry] = [t for t in study.trials if t.user_attrs.get("retry_of") == 0]
    assert retry.state == TrialState.COMPLETE and retry.user_attrs["runs"] == lost.user_attrs["runs"]
    curve = pd.read_parquet(tmp_path / retry.user_attrs["curves"])
    assert curve["step"].is_unique and curve["step"].max() == 1500
    assert kept(rows, curve)  # resumed from the checkpoint, not started over


def test_a_ray_sweep_killed_with_sigkill_leaves_no_ray_process_and_the_same_command_finishes_it(tmp_path, no_ray_left):
    spec = write_spec(tmp_path, trials=2, run={"steps": 1500, "log_every": 50, "eval": {"every": 50},
                                               "checkpoint": {"every": 50, "keep": 2}})
    command = sweep_cmd("proxy", spec, "--width", "16", "--backend", "ray", "--workers", "1")
    proc = subprocess.Popen(command, env=sweep_env(tmp_path), cwd=tmp_path, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    checkpoints = tmp_path / "tiny" / "runs" / "w16-mup-t00000-s0" / "checkpoints"
    deadline = time.time() + 240
    while not list(checkpoints.glob("step-*.pt")):
        assert time.time() < deadline and proc.poll() is None, "trial 0 never checkpointed"
        time.sleep(0.2)
    assert ray_left(no_ray_left)[0], "no Ray process while a trial trains"
    proc.kill()
    proc.wait()
    rows = early_rows(tmp_path)
    deadline = time.time() + 30  # the driver's reaper ends Ray and removes its temp dir (alone, agents lived ~60 s)
    while ray_left(no_ray_left) != (set(), set()):
        assert time.time() < deadline, ray_left(no_ray_left)
        time.sleep(0.2)

    done = subprocess.run(command, env=sweep_env(tmp_path), cwd=tmp_path, capture_output=True, text=True, timeout=400)
    assert done.returncode == 0, done.stderr
    study = load(tmp_path)
    assert sum(map(counts, study.trials)) == 2 and states(study) == {"FAIL": 1, "COMPLETE": 2}
    assert study.trials[0].user_attrs["reason"].startswith("worker lost")
    [retry] = [t for t in study.trials if t.user_attrs.get("retry_of") == 0]
    curve = pd.read_parquet(tmp_path / retry.user_attrs["curves"])
    assert curve["step"].is_unique and curve["step"].max() == 1500
    assert kept(rows, curve)  # resumed from the checkpoint, not started over
