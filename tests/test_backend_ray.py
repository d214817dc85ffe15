"""`--backend ray` on a real local Ray instance (2 CPUs): Tune runs the study's trials with an exact
count, a Ray worker killed mid-trial is retried from its checkpoint, and nothing of Ray outlives the
command or writes to the user's home or /tmp/ray."""
import os
import signal
import subprocess
import time
from pathlib import Path

import pandas as pd
import pytest
from optuna.trial import TrialState

from sweep.study.study import counts
from tests.sweep_helpers import load, run_sweep, states, sweep_cmd, sweep_env, write_spec

pytest.importorskip("ray.tune")


def ray_processes() -> list[str]:
    out = subprocess.run(["ps", "-eo", "pid,args"], capture_output=True, text=True).stdout
    return [line for line in out.splitlines() if any(name in line for name in ("raylet", "gcs_server", "ray::"))]


@pytest.fixture
def no_ray_left(tmp_path):
    """Ray processes of this test must be gone after it; ~/.ray and /tmp/ray must not appear."""
    home = Path(os.path.expanduser("~/.ray"))
    existed = {p: p.exists() for p in (home, Path("/tmp/ray"))}
    before = set(ray_processes())
    yield
    left = [p for p in ray_processes() if p not in before]
    assert not left, left
    assert {p: p.exists() for p in existed} == existed
    assert not list(Path(os.environ.get("TMPDIR", "/tmp")).glob("sweep-ray-*"))


def test_ray_runs_a_4_trial_study_and_leaves_nothing_behind(tmp_path, no_ray_left):
    spec = write_spec(tmp_path, trials=4)
    done = run_sweep(tmp_path, "proxy", spec, "--width", "16", "--backend", "ray", "--workers", "2",
                     "--cpus-per-trial", "1", timeout=400)
    assert done.returncode == 0, done.stderr
    assert "Ray Tune on a local Ray instance, 2 trial(s) at once" in done.stdout
    study = load(tmp_path)
    assert states(study) == {"COMPLETE": 4}
    for t in study.trials:
        curve = pd.read_parquet(t.user_attrs["curves"])
        assert curve["step"].max() == 20 and curve["val_loss"].dropna().iloc[-1] == pytest.approx(t.value)


def test_a_ray_worker_killed_mid_trial_is_retried_and_the_count_is_exact(tmp_path, no_ray_left):
    spec = write_spec(tmp_path, trials=2, run={"steps": 1500, "log_every": 50, "eval": {"every": 50},
                                               "checkpoint": {"every": 50, "keep": 2}})
    proc = subprocess.Popen(sweep_cmd("proxy", spec, "--width", "16", "--backend", "ray", "--workers", "1"),
                            env=sweep_env(tmp_path), cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    checkpoints = tmp_path / "tiny" / "runs" / "w16-mup-t00000-s0" / "checkpoints"
    deadline = time.time() + 240
    while not list(checkpoints.glob("step-*.pt")):
        assert time.time() < deadline and proc.poll() is None, "trial 0 never checkpointed"
        time.sleep(0.2)
    worker = load(tmp_path).trials[0].system_attrs["sweep:worker"]["pid"]
    assert worker != proc.pid and "ray::" in Path(f"/proc/{worker}/cmdline").read_text()  # a Ray worker
    os.kill(worker, signal.SIGKILL)
    out, err = proc.communicate(timeout=400)
    assert proc.returncode == 0, err

    study = load(tmp_path)
    assert sum(map(counts, study.trials)) == 2 and states(study) == {"FAIL": 1, "COMPLETE": 2}
    lost = study.trials[0]
    assert lost.user_attrs["reason"].startswith("worker lost")
    [retry] = [t for t in study.trials if t.user_attrs.get("retry_of") == 0]
    assert retry.state == TrialState.COMPLETE and retry.user_attrs["runs"] == lost.user_attrs["runs"]
    steps = pd.read_parquet(retry.user_attrs["curves"])["step"]
    assert steps.is_unique and steps.max() == 1500
