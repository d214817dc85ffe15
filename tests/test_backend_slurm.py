"""`--backend slurm` on a real single-node SLURM cluster with accounting (scripts/slurm-test-cluster.sh):
a job array of workers on one journal study keeps the count exact, detaches and re-attaches, and a
task requeued mid-trial resumes its run from the checkpoint (the curve goes on, no step twice)."""
import os
import re
import subprocess

import pandas as pd
from optuna.trial import TrialState

from sweep.study.study import counts
from tests.sweep_helpers import kept, load, run_sweep, states, sweep_cmd, sweep_env, wait_for, write_spec
from trainer.curves import read_run


def sacct(array_id: str) -> dict[str, str]:
    out = subprocess.run(["sacct", "-n", "-X", "-P", "-j", array_id, "-o", "JobID,State"], capture_output=True,
                         text=True, check=True).stdout
    return dict(line.split("|") for line in out.split())


def test_the_test_cluster_has_every_cpu_of_the_machine(slurm_cluster):
    """`make test` sets OMP_NUM_THREADS=1, which `nproc` reports as the machine's CPUs: the cluster was built with
    one CPU, so an array's tasks ran one after another and the first trained every trial alone."""
    cpus = subprocess.run(["sinfo", "-h", "-o", "%c"], capture_output=True, text=True, check=True).stdout.split()
    assert cpus == [str(len(os.sched_getaffinity(0)))]


def test_a_4_task_array_runs_one_study_detaches_and_reattaches(tmp_path, slurm_cluster):
    spec = write_spec(tmp_path, trials=6, run={"steps": 300, "log_every": 50, "eval": {"every": 50}})
    journal = f"journal:{tmp_path / 'shared' / 'tiny.log'}"
    args = ("proxy", spec, "--width", "16", "--backend", "slurm", "--workers", "4", "--storage", journal)
    detached = run_sweep(tmp_path, *args, "--detach")
    assert detached.returncode == 0, detached.stderr
    array_id, folder = re.search(r"SLURM job array (\d+) \(submitted, 4 task\(s\)\); logs in (\S+)",
                                 detached.stdout).groups()
    assert "detached" in detached.stdout and str(tmp_path / "tiny" / "slurm") in folder

    attached = run_sweep(tmp_path, *args)  # the same command follows the running array, submits nothing new
    assert attached.returncode == 0, attached.stderr
    if "re-attached" not in attached.stdout:  # the array may have finished in between: then nothing to run
        assert "6/6 trials counted" in attached.stdout.splitlines()[0]
    assert f"SLURM job array {array_id}" in attached.stdout or "6/6" in attached.stdout
    # slurmdbd records each task as it ends, so a finished task can be missing from sacct for a moment
    wait_for(lambda: list(sacct(array_id).values()) == ["COMPLETED"] * 4, 60, "the array's 4 tasks to end")

    study = load(tmp_path, storage=journal)
    assert sum(map(counts, study.trials)) == 6 and states(study).get("COMPLETE") == 6
    workers = {t.system_attrs["sweep:worker"]["pid"] for t in study.trials if t.state == TrialState.COMPLETE}
    assert len(workers) >= 2  # the tasks shared the study
    for t in study.trials:
        if t.state == TrialState.COMPLETE:
            curve = pd.read_parquet(tmp_path / t.user_attrs["curves"])
            assert curve["step"].max() == 300 and curve["val_loss"].dropna().iloc[-1] > 0


def test_scontrol_requeue_of_a_running_task_resumes_its_trial_from_the_checkpoint(tmp_path, slurm_cluster):
    """`scontrol requeue` sends SIGTERM (SIGKILL after KillWait): the task checkpoints at the step it is in,
    releases its trial and exits; the requeued task retries the trial from that checkpoint (the rows up to the
    signal's step are kept as first logged). With the signal ignored, the trial either trains on to its end
    within the grace (one trial) or dies at SIGKILL (a lost worker, not released as preempted): both fail, on a
    fast machine or a slow one."""
    spec = write_spec(tmp_path, trials=1, run={"steps": 3000, "log_every": 10, "eval": {"every": 50},
                                               "checkpoint": {"every": 50, "keep": 2}})
    journal = f"journal:{tmp_path / 'tiny.log'}"
    proc = subprocess.Popen(sweep_cmd("proxy", spec, "--width", "16", "--backend", "slurm", "--storage", journal),
                            env=sweep_env(tmp_path), cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    checkpoints = tmp_path / "tiny" / "runs" / "w16-mup-t00000-s0" / "checkpoints"
    wait_for(lambda: list(checkpoints.glob("step-*.pt")), 180, "the trial to checkpoint")
    task = subprocess.run(["squeue", "-h", "-t", "RUNNING", "-n", "tiny-w16-mup", "-o", "%i"], capture_output=True,
                          text=True, check=True).stdout.split()[0]
    subprocess.run(["scontrol", "requeue", task], check=True)
    wait_for(lambda: "PENDING" in subprocess.run(["squeue", "-h", "-j", task, "-o", "%T"], capture_output=True,
                                                 text=True).stdout, 60, "the task to be requeued")
    first = wait_for(lambda: next((t for t in load(tmp_path, storage=journal).trials if t.state.is_finished()), None),
                     60, "the interrupted attempt to be released")
    assert first.state == TrialState.FAIL and first.user_attrs["reason"].startswith("preempted: SIGTERM at step ")
    preempted_at = int(first.user_attrs["reason"].split(" at step ")[1].split(":")[0])
    rows = read_run(tmp_path / first.user_attrs["curves"], columns=["step", "wall_time"])  # flushed by the signal
    assert rows["step"].max() == preempted_at // 10 * 10
    subprocess.run(["scontrol", "update", f"JobId={task}", "StartTime=now"], check=True)  # skip SLURM's requeue delay
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err

    study = load(tmp_path, storage=journal)
    first, retry = study.trials
    assert retry.state == TrialState.COMPLETE and retry.user_attrs["retry_of"] == 0 and retry.params == first.params
    assert retry.user_attrs["runs"] == first.user_attrs["runs"]  # the same run folder, resumed
    curve = pd.read_parquet(tmp_path / retry.user_attrs["curves"])
    assert curve["step"].is_unique and curve["step"].max() == 3000  # no step logged twice
    assert kept(rows, curve)  # it went on from the checkpoint: a restart would have logged those steps again
