"""`sweep proxy` end to end, as real processes on real storages: the trial count is exact across
workers and processes, a kill -9 loses nothing and counts nothing twice, divergence and errors do
not stop a sweep, pruning stops bad trials early, passwords stay out of every file, and
optuna-dashboard reads the storage as it is."""
import json
import os
import signal
import subprocess
import time
import urllib.request
from pathlib import Path

import pandas as pd
import pytest
from optuna.trial import TrialState

from sweep.study.study import counts
from tests.rendezvous import GATED, REPO, rendezvous_env
from tests.services import free_port, missing
from tests.sweep_helpers import TINY_SPEC, load, run_sweep, states, sweep_cmd, sweep_env, write_spec


def counted(study) -> int:
    return sum(map(counts, study.get_trials(deepcopy=False)))


def curve(trial, root: Path) -> pd.DataFrame:
    return pd.read_parquet(root / trial.user_attrs["curves"]).sort_values("step")


def wait_for(predicate, timeout: float, what: str):
    deadline = time.time() + timeout
    while time.time() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return Path(f"/proc/{pid}/stat").exists() and " Z " not in Path(f"/proc/{pid}/stat").read_text()


def test_sweep_runs_the_requested_trials_and_records_them(tmp_path):
    spec = write_spec(tmp_path, trials=3)
    # its workers take OMP_NUM_THREADS as torch would (not cores // workers: that oversubscribes a shared machine)
    done = run_sweep(tmp_path, "proxy", spec, "--width", "16", env=sweep_env(tmp_path, OMP_NUM_THREADS="1"))
    assert done.returncode == 0, done.stderr
    assert "1 local worker(s), 1 torch thread(s) each" in done.stdout
    study = load(tmp_path)
    assert states(study) == {"COMPLETE": 3}
    assert study.user_attrs["width"] == 16 and study.user_attrs["parametrization"] == "mup"
    assert len(study.user_attrs["spec_hash"]) == 12 and study.user_attrs["version"]
    for t in study.trials:
        assert t.user_attrs["status"] == "completed" and t.user_attrs["steps"] == 20
        config = t.user_attrs["config"]
        assert f"lr: {t.params['optimizer.lr']}" in config and "trial: " + str(t.number) in config
        assert curve(t, tmp_path)["val_loss"].dropna().iloc[-1] == pytest.approx(t.value)
        assert Path(tmp_path, t.user_attrs["runs"][0], "result.json").is_file()
    # the same command again has nothing left to do and changes nothing
    again = run_sweep(tmp_path, "proxy", spec, "--width", "16")
    assert again.returncode == 0 and "3/3 trials counted" in again.stdout
    assert [t.value for t in load(tmp_path).trials] == [t.value for t in study.trials]


def test_kill_9_mid_trial_then_the_same_command_keeps_finished_trials_and_retries_the_stale_one(tmp_path):
    spec = write_spec(tmp_path, trials=3, run={"steps": 300, "log_every": 50, "eval": {"every": 50},
                                               "checkpoint": {"every": 50, "keep": 2}})
    proc = subprocess.Popen(sweep_cmd("proxy", spec, "--width", "16"), env=sweep_env(tmp_path), cwd=tmp_path,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    second = tmp_path / "tiny" / "runs" / "w16-mup-t00001-s0" / "checkpoints"
    wait_for(lambda: list(second.glob("step-*.pt")), 180, "trial 1 to checkpoint")
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    study = load(tmp_path)
    running = [t for t in study.trials if t.state == TrialState.RUNNING]
    assert [t.number for t in running] == [1]
    worker = running[0].system_attrs["sweep:worker"]["pid"]
    wait_for(lambda: not alive(worker), 10, "the worker to die with its parent")  # no orphan keeps training
    first_value = study.trials[0].value

    resumed = run_sweep(tmp_path, "proxy", spec, "--width", "16")
    assert resumed.returncode == 0, resumed.stderr
    study = load(tmp_path)
    assert counted(study) == 3 and states(study) == {"COMPLETE": 3, "FAIL": 1}
    assert study.trials[0].value == first_value  # the finished trial is kept as it was
    stale = study.trials[1]
    assert stale.state == TrialState.FAIL and stale.user_attrs["reason"].startswith("worker lost")
    assert "error" not in stale.user_attrs  # a lost worker is not the run's fault: it does not count
    retry = [t for t in study.trials if t.user_attrs.get("retry_of") == 1]
    assert len(retry) == 1 and retry[0].state == TrialState.COMPLETE and retry[0].params == stale.params
    # the retry resumed the dead trial's run folder from its checkpoint: one curve, each step once
    assert retry[0].user_attrs["runs"] == stale.user_attrs["runs"]
    steps = curve(retry[0], tmp_path)["step"]
    assert steps.is_unique and steps.max() == 300 and 50 in set(steps)


def test_two_processes_on_one_journal_study_run_every_trial_once(tmp_path):
    spec = write_spec(tmp_path, trials=6)
    journal = f"journal:{tmp_path / 'tiny.log'}"
    procs = [subprocess.Popen(sweep_cmd("proxy", spec, "--width", "16", "--storage", journal), env=sweep_env(tmp_path),
                              cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for _ in range(2)]
    for p in procs:
        out, err = p.communicate(timeout=240)
        assert p.returncode == 0, err
    study = load(tmp_path, storage=journal)
    trials = study.get_trials(deepcopy=False)
    assert counted(study) == 6
    ran = [t for t in trials if counts(t)]
    assert all(t.state == TrialState.COMPLETE for t in ran)
    # nothing ran twice: one run folder per counted trial, and a surplus trial (a lost race) never trained
    folders = sorted(p.name for p in (tmp_path / "tiny" / "runs").iterdir())
    assert folders == sorted(Path(t.user_attrs["runs"][0]).name for t in ran)
    for t in trials:
        if not counts(t):
            assert t.user_attrs["reason"].startswith("surplus") and "runs" not in t.user_attrs


def test_two_workers_on_postgresql_and_the_password_is_never_written(tmp_path, postgres):
    # each worker's first step waits for the other's: both train a trial however slowly either starts
    spec = write_spec(tmp_path, trials=4, name="pg", run={"model": {**TINY_SPEC["run"]["model"], "name": GATED}})
    env = sweep_env(tmp_path, PGPASS_SWEEP=postgres.password, PYTHONPATH=str(REPO),
                    **rendezvous_env(tmp_path / "rendezvous", peers=2))
    done = run_sweep(tmp_path, "proxy", spec, "--width", "16", "--workers", "2", "--storage", postgres.url,
                     "--storage-password-env", "PGPASS_SWEEP", env=env)
    assert done.returncode == 0, done.stderr
    assert "2 local worker(s)" in done.stdout
    import optuna
    storage = f"postgresql+psycopg://sweep:{postgres.password}@127.0.0.1:{postgres.port}/sweep"
    study = optuna.load_study(study_name="pg-w16-mup", storage=storage)
    ran = [t for t in study.trials if counts(t)]
    assert len(ran) == 4 and all(t.state == TrialState.COMPLETE for t in ran)
    assert all(t.user_attrs["reason"].startswith("surplus") for t in study.trials if not counts(t))  # a lost race
    workers = {t.system_attrs["sweep:worker"]["pid"] for t in ran}
    assert len(workers) == 2  # both workers ran trials
    assert {int(p.name) for p in (tmp_path / "rendezvous").iterdir()} == workers  # no other process stepped
    secret = postgres.password.encode()
    for path in tmp_path.rglob("*"):
        if path.is_file():
            assert secret not in path.read_bytes(), path
    assert postgres.password not in done.stdout + done.stderr
    for t in study.trials:  # nor in what the storage holds
        assert postgres.password not in json.dumps(t.user_attrs) + json.dumps(t.system_attrs)
    for t in ran:  # a surplus trial (a lost race) never trained, so it holds no config
        assert t.user_attrs["config"].count("postgresql://sweep@127.0.0.1") == 1


def test_a_diverged_trial_is_pruned_with_its_reason_and_the_sweep_completes(tmp_path):
    spec = write_spec(tmp_path, trials=3, run={"divergence_factor": 1.01, "log_every": 1},
                      search={"optimizer.lr": {"choices": [0.01, 30.0]}})
    done = run_sweep(tmp_path, "proxy", spec, "--width", "16", "--enqueue", "optimizer.lr=30.0")
    assert done.returncode == 0, done.stderr
    study = load(tmp_path)
    assert counted(study) == 3
    diverged = study.trials[0]
    assert diverged.params == {"optimizer.lr": 30.0} and diverged.state == TrialState.PRUNED
    assert diverged.user_attrs["status"] == "diverged" and diverged.user_attrs["reason"].startswith("diverged at step")
    assert "PRUNED (diverged at step" in done.stdout


def test_a_trial_that_raises_is_failed_with_its_message_and_the_sweep_goes_on(tmp_path):
    # a warmup as long as the run is valid in the spec's box but rejected by the trainer for this run
    spec = write_spec(tmp_path, trials=2, search={"schedule.warmup_steps": {"choices": [2, 20]}})
    done = run_sweep(tmp_path, "proxy", spec, "--width", "16", "--enqueue", "schedule.warmup_steps=20",
                     "--enqueue", "schedule.warmup_steps=2")
    assert done.returncode == 0, done.stderr
    study = load(tmp_path)
    failed, ok = study.trials[0], study.trials[1]
    assert failed.state == TrialState.FAIL and "warmup" in failed.user_attrs["error"]
    assert ok.state == TrialState.COMPLETE and counted(study) == 2


def test_pruning_stops_bad_trials_early(tmp_path):
    spec = write_spec(tmp_path, trials=6, run={"steps": 40, "eval": {"every": 5}},
                      search={"optimizer.lr": {"low": 1.0e-5, "high": 0.05, "log": True}},
                      pruner={"name": "median", "options": {"n_startup_trials": 3, "n_warmup_steps": 0}})
    enqueue = [arg for lr in ("0.02", "0.021", "0.022", "1.0e-5", "1.1e-5", "0.023")
               for arg in ("--enqueue", f"optimizer.lr={lr}")]
    done = run_sweep(tmp_path, "proxy", spec, "--width", "16", *enqueue)
    assert done.returncode == 0, done.stderr
    study = load(tmp_path)
    bad = [t for t in study.trials if t.params["optimizer.lr"] < 1e-4]
    assert len(bad) == 2 and all(t.state == TrialState.PRUNED for t in bad)
    for t in bad:
        assert curve(t, tmp_path)["step"].max() < 40 and t.user_attrs["steps"] < 40  # stopped before the budget
        assert t.user_attrs["reason"].startswith("pruned by MedianPruner at step")
    assert [t.state for t in study.trials[:3]] == [TrialState.COMPLETE] * 3  # the median pruner's startup trials


def test_ctrl_c_releases_the_running_trial_and_the_same_command_resumes(tmp_path):
    spec = write_spec(tmp_path, trials=2, run={"steps": 600, "log_every": 50, "eval": {"every": 50},
                                               "checkpoint": {"every": 50, "keep": 2}})
    proc = subprocess.Popen(sweep_cmd("proxy", spec, "--width", "16"), env=sweep_env(tmp_path), cwd=tmp_path,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    first = tmp_path / "tiny" / "runs" / "w16-mup-t00000-s0" / "checkpoints"
    wait_for(lambda: list(first.glob("step-*.pt")), 180, "trial 0 to checkpoint")
    os.killpg(proc.pid, signal.SIGINT)  # what Ctrl-C in a terminal does: the whole foreground group
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert "the same command resumes" in out
    study = load(tmp_path)
    assert states(study) == {"FAIL": 1, "WAITING": 1}  # released, and enqueued again
    assert study.trials[0].user_attrs["reason"] == "interrupted; retried"
    resumed = run_sweep(tmp_path, "proxy", spec, "--width", "16", timeout=600)  # 1200 steps: slow on a loaded machine
    assert resumed.returncode == 0, resumed.stderr
    assert counted(load(tmp_path)) == 2


def test_optuna_dashboard_reads_the_sqlite_storage_as_it_is(tmp_path):
    spec = write_spec(tmp_path, trials=2)
    assert run_sweep(tmp_path, "proxy", spec, "--width", "16").returncode == 0
    dashboard = Path(os.sys.executable).with_name("optuna-dashboard")
    if not dashboard.exists():
        missing("optuna-dashboard")
    port = free_port()
    server = subprocess.Popen([str(dashboard), f"sqlite:///{tmp_path / 'tiny' / 'optuna.db'}", "--host", "127.0.0.1",
                               "--port", str(port)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        def studies():
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/studies", timeout=2) as reply:
                    return json.load(reply)
            except OSError:
                return None

        body = wait_for(studies, 60, "optuna-dashboard to answer")
        [study] = body["study_summaries"]
        assert study["study_name"] == "tiny-w16-mup"
        assert {attr["key"] for attr in study["user_attrs"]} >= {"width", "spec_hash", "version"}
    finally:
        server.terminate()
        server.wait(10)


def test_a_grid_sweep_visits_each_point_once_and_stops_at_the_grid_size(tmp_path):
    spec = write_spec(tmp_path, trials=50, sampler={"name": "grid", "seed": 0},
                      search={"optimizer.lr": {"choices": [0.003, 0.01, 0.03]},
                              "schedule.warmup_fraction": {"low": 0.0, "high": 0.2, "step": 0.1}})
    done = run_sweep(tmp_path, "proxy", spec, "--width", "16", "--workers", "2")
    assert done.returncode == 0, done.stderr
    study = load(tmp_path)
    ran = [t for t in study.trials if counts(t)]
    points = sorted((t.params["optimizer.lr"], round(t.params["schedule.warmup_fraction"], 6)) for t in ran)
    assert points == sorted((lr, w) for lr in (0.003, 0.01, 0.03) for w in (0.0, 0.1, 0.2))
    assert all(t.state == TrialState.COMPLETE for t in ran)
    # a worker that asked at the moment the last point was taken got a fresh trial, failed as surplus untrained
    assert all(t.user_attrs["reason"].startswith("surplus") and not t.params for t in study.trials if not counts(t))


def test_a_run_folder_left_by_another_sweep_is_never_continued(tmp_path):
    spec = write_spec(tmp_path, trials=1)
    assert run_sweep(tmp_path, "proxy", spec, "--width", "16").returncode == 0
    (tmp_path / "tiny" / "optuna.db").unlink()  # the study is gone, its run folders are not
    spec = write_spec(tmp_path, trials=1, run={"steps": 30})
    done = run_sweep(tmp_path, "proxy", spec, "--width", "16")
    assert done.returncode == 0, done.stderr
    [trial] = load(tmp_path).trials
    assert trial.state == TrialState.FAIL and "holds another run's config" in trial.user_attrs["error"]
    assert "steps: 20" in (tmp_path / "tiny" / "runs" / "w16-mup-t00000-s0" / "config.yaml").read_text()  # untouched
