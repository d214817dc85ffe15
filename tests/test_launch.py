"""`sweep launch` and `sweep status`: a transferred-style full run trains where it is sent and resumes.

- local, one process: trains, checkpoints, writes its curve (kind=full); launched again it does
  nothing when done, and resumes a killed run from its checkpoint (each step once);
- local, two gloo processes under torchrun: the same curve as one process at the same global batch;
- SLURM (the single-node test cluster): `scontrol requeue` of the running job requeues it and the
  trainer resumes from the checkpoint (the curve goes on, no step twice);
- Ray (a private local instance): one task trains the run and no Ray process is left;
- bad flags: one line, exit 2, nothing written.
"""
import json
import subprocess
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from sweep.status.command import run_state
from tests.sweep_helpers import file_tree, kept, run_sweep, sweep_cmd, sweep_env, wait_for
from tests.test_backend_ray import no_ray_left  # noqa: F401 (a fixture: pytest finds it by this name)
from trainer.config import RunConfig
from trainer.curves import read_curves
from trainer.loop import train

# what `sweep transfer` writes, at test size: output.kind full, checkpoints at every evaluation
RUN = {
    "model": {"name": "gpt", "width": 32, "depth": 1, "options": {"block_size": 16}},
    "data": {"kind": "synthetic-tokens", "seq_len": 16, "options": {"n_tokens": 20000}},
    "batch_size": 8,
    "steps": 30,
    "log_every": 5,
    "device": "cpu",
    "eval": {"every": 10, "batches": 2, "noise_scale_batches": 0},
    "checkpoint": {"every": 10, "keep": 2},
    "output": {"study": "full", "kind": "full"},
    "provenance": {"study": "tiny-w16-mup", "trial": 3, "created_by": "sweep transfer"},
}
# two processes against one: the rank mean and DDP's gradient average equal the one-process mean up to float
# summation order; measured max relative difference over 10 steps 1.2e-7 (train_loss, grad_norm), 6.4e-8
# (val_loss). A wrong global batch or a sum instead of a mean moves them by 1e-2 or more (tests/test_ddp.py).
RTOL = 1e-5


def write_run(folder: Path, name: str = "run.yaml", **changes) -> Path:
    run = {**RUN, **changes, "output": {**RUN["output"], "root": str(folder), **changes.get("output", {})}}
    path = folder / name
    path.write_text(yaml.safe_dump(run, sort_keys=False))
    return path


def curve(cfg: RunConfig):
    return read_curves(cfg.curves_root(), run=cfg.run_id()).sort_values("step")


def status(root: Path) -> dict:
    """`sweep status --format json` by run name."""
    done = run_sweep(root, "status", "--format", "json", timeout=60)
    assert done.returncode == 0, done.stderr
    return {row["run"]: row for row in json.loads(done.stdout)}


def test_a_local_launch_trains_checkpoints_and_launching_again_does_nothing(tmp_path, run_cli, monkeypatch):
    monkeypatch.setenv("SWEEP_ROOT", str(tmp_path))
    path = write_run(tmp_path)
    cfg = RunConfig.load(path)
    code, out, err = run_cli("launch", path)
    assert code == 0, err
    printed = out.replace("\n", "")  # rich wraps long lines
    assert f"checkpoints {cfg.run_dir().resolve() / 'checkpoints'}" in printed and f"run={cfg.run_id()}" in printed
    assert sorted(p.name for p in (cfg.run_dir() / "checkpoints").iterdir()) == \
        ["step-000000020.pt", "step-000000030.pt"]
    full = read_curves(tmp_path / "full" / "curves", kind="full")
    assert full["run"].unique().tolist() == [cfg.run_id()]
    assert sorted(full["step"]) == [1, 5, 10, 15, 20, 25, 30]
    record = json.loads((cfg.run_dir() / "launch.json").read_text())
    assert record["backend"] == "local" and record["kind"] == "full"

    row = status(tmp_path)[cfg.run_id()]
    assert (row["state"], row["step"], row["backend"], row["kind"]) == ("done", 30, "local", "full")
    assert row["val_loss"] == pytest.approx(json.loads((cfg.run_dir() / "result.json").read_text())["val_loss"])

    parts = {p: p.stat().st_ino for p in cfg.curves_root().rglob("part-*.parquet")}
    code, out, err = run_cli("launch", path)
    assert code == 0, err
    assert "done: step 30" in out
    assert {p: p.stat().st_ino for p in cfg.curves_root().rglob("part-*.parquet")} == parts  # nothing rewritten
    assert curve(cfg)["step"].tolist() == [1, 5, 10, 15, 20, 25, 30]  # not doubled


@pytest.mark.parametrize("command", [("launch",), ("train", "--quiet")])
def test_a_config_without_output_root_trains_under_sweep_root_as_every_command_reads_it(tmp_path, run_cli,
                                                                                        monkeypatch, command):
    """`output.root` unset: the run lands under $SWEEP_ROOT (it went to ./studies, where `sweep status` never looked),
    and nothing is written outside it."""
    root, cwd = tmp_path / "root", tmp_path / "cwd"
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    monkeypatch.setenv("SWEEP_ROOT", str(root))
    run = {**RUN, "steps": 2, "log_every": 1, "eval": {**RUN["eval"], "every": 2, "batches": 1},
           "checkpoint": {"every": 2, "keep": 1}, "output": {**RUN["output"], "run": "noroot"}}
    path = tmp_path / "run.yaml"
    path.write_text(yaml.safe_dump(run, sort_keys=False))
    code, out, err = run_cli(command[0], path, *command[1:])
    assert code == 0, err
    assert json.loads((root / "full" / "runs" / "noroot" / "result.json").read_text())["status"] == "completed"
    assert not list(cwd.iterdir()) and sorted(p.name for p in tmp_path.iterdir()) == ["cwd", "root", "run.yaml"]
    if command[0] == "train":
        return
    code, out, err = run_cli("status", "--format", "json")
    assert code == 0 and [row["state"] for row in json.loads(out) if row["run"] == "noroot"] == ["done"], (out, err)


def test_a_killed_local_run_is_resumed_from_its_checkpoint_by_launching_it_again(tmp_path, run_cli, monkeypatch):
    monkeypatch.setenv("SWEEP_ROOT", str(tmp_path))
    path = write_run(tmp_path)
    cfg = RunConfig.load(path)

    def killed(row):
        if row["step"] == 25:
            raise KeyboardInterrupt  # dies after its step-20 checkpoint, with steps 21-25 run and lost

    with pytest.raises(KeyboardInterrupt):
        train(cfg, resume=True, on_log=killed)
    [first] = cfg.curves_root().rglob("part-000000001-*.parquet")
    rows = pd.read_parquet(first, columns=["step", "wall_time"])

    code, out, err = run_cli("launch", path)
    assert code == 0, err
    assert curve(cfg)["step"].tolist() == [1, 5, 10, 15, 20, 25, 30]  # each step once
    assert kept(rows, curve(cfg))  # went on from step 20: a restart would have logged steps 1-20 again


def test_b_two_gloo_processes_give_the_curve_of_one_process(tmp_path):
    steps = {"steps": 10, "log_every": 1, "eval": {**RUN["eval"], "every": 10}}
    two = write_run(tmp_path, "two.yaml", output={"run": "two"}, **steps)
    launched = run_sweep(tmp_path, "launch", two, "--nproc", "2", timeout=120)
    assert launched.returncode == 0, launched.stderr
    assert "local: 2 process(es)" in launched.stdout and "done: step 10" in launched.stdout

    one = RunConfig.load(write_run(tmp_path, "one.yaml", output={"run": "one"}, **steps))
    assert train(one).status == "completed"
    got, want = curve(RunConfig.load(two)), curve(one)
    assert got["step"].tolist() == want["step"].tolist() == list(range(1, 11))
    for column in ("train_loss", "grad_norm", "lr", "tokens", "val_loss"):
        np.testing.assert_allclose(got[column].to_numpy(), want[column].to_numpy(), rtol=RTOL, err_msg=column)
    assert status(tmp_path)["two"]["state"] == "done"


def test_c_a_slurm_job_requeued_while_running_resumes_from_its_checkpoint(tmp_path, slurm_cluster):
    path = write_run(tmp_path, steps=1500, log_every=50, eval={**RUN["eval"], "every": 500},
                     checkpoint={"every": 100, "keep": 2})
    cfg = RunConfig.load(path)
    proc = subprocess.Popen(sweep_cmd("launch", path, "--backend", "slurm", "--time", "10"), env=sweep_env(tmp_path),
                            cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    checkpoints = cfg.run_dir() / "checkpoints"
    wait_for(lambda: list(checkpoints.glob("step-*.pt")), 180, "the job to checkpoint")
    job = json.loads((cfg.run_dir() / "launch.json").read_text())["job"]
    assert run_state(cfg.run_dir())["state"] == "running"  # in this process: the requeue must land mid-run
    [first] = cfg.curves_root().rglob("part-000000001-*.parquet")  # written before the first checkpoint
    rows = pd.read_parquet(first, columns=["step", "wall_time"])
    subprocess.run(["scontrol", "requeue", job], check=True)
    # SLURM's restart count; the job is queued again (or, without a requeue delay, already running again)
    requeued = wait_for(lambda: "requeued 1×" in (row := run_state(cfg.run_dir()))["detail"] and row, 60,
                        "the job to be requeued")
    assert requeued["state"] in ("requeued", "running"), requeued
    # skip the requeue delay
    subprocess.run(["scontrol", "update", f"JobId={job}", "StartTime=now"], capture_output=True)
    # a bound, not a wait: SLURM may start the requeued job a scheduling cycle later (2 min seen under load), and
    # it then trains the 1400 steps left
    out, err = proc.communicate(timeout=900)
    assert proc.returncode == 0, err
    assert f"job {job}: " in out and "(requeued 1×)" in out and "done: step 1500" in out  # pending or running again

    steps = curve(cfg)["step"]
    assert steps.is_unique and steps.max() == 1500  # no step logged twice
    assert kept(rows, curve(cfg))  # the requeued job went on from the checkpoint
    log = (cfg.run_dir() / "slurm" / f"{job}_0_log.out").read_text()
    assert "starting at step 0" in log
    resumed = [int(line.rsplit("step ", 1)[1].split()[0])
               for line in log.splitlines() if "resuming from checkpoint" in line]
    assert len(resumed) == 1 and resumed[0] >= 100
    assert status(tmp_path)[cfg.run_id()]["state"] == "done"


def test_a_ray_launch_trains_in_one_task_on_a_private_instance(tmp_path, no_ray_left):  # noqa: F811 (the fixture)
    path = write_run(tmp_path)
    launched = run_sweep(tmp_path, "launch", path, "--backend", "ray", timeout=180)
    assert launched.returncode == 0, launched.stderr
    assert "one task on a local Ray instance" in launched.stdout and "done: step 30" in launched.stdout
    cfg = RunConfig.load(path)
    assert curve(cfg)["step"].tolist() == [1, 5, 10, 15, 20, 25, 30]
    row = status(tmp_path)[cfg.run_id()]
    assert (row["state"], row["backend"], row["step"]) == ("done", "ray", 30)


@pytest.mark.parametrize("args, message", [
    (("--backend", "pbs"), "--backend: 'pbs' is not one of local, ray, slurm"),
    (("--backend", "slurm", "--nodes", "0"), "--nodes: must be at least 1, got 0"),
    (("--partition", "gpu"), "--partition: a slurm flag; --backend local takes"),
    (("--detach",), "--detach: a slurm flag"),
    (("--backend", "ray", "--nproc", "2"), "--nproc: a local flag"),
])
def test_d_bad_flags_are_one_line_exit_2_and_write_nothing(tmp_path, run_cli, monkeypatch, args, message):
    monkeypatch.setenv("SWEEP_ROOT", str(tmp_path))
    path = write_run(tmp_path)
    before = file_tree(tmp_path)
    code, out, err = run_cli("launch", path, *args)
    assert code == 2 and err.startswith(f"error: {message}") and len(err.splitlines()) == 1, err
    assert file_tree(tmp_path) == before


def test_d_a_missing_or_bad_config_is_one_line_exit_2(tmp_path, run_cli, monkeypatch):
    monkeypatch.setenv("SWEEP_ROOT", str(tmp_path))
    code, _, err = run_cli("launch", tmp_path / "nope.yaml")
    assert code == 2 and err == f"error: config: {tmp_path / 'nope.yaml'} does not exist\n"
    bad = write_run(tmp_path, batch_size=0)
    code, _, err = run_cli("launch", bad)
    assert code == 2 and err.startswith("error: batch_size:") and len(err.splitlines()) == 1
    assert file_tree(tmp_path) == {"run.yaml"}
    code, _, err = run_cli("status", "nope")
    assert code == 2 and err.startswith("error: study: no sweep named 'nope'")


def test_d_sbatch_refusing_the_job_is_one_line_exit_2_and_leaves_no_folder(tmp_path, slurm_cluster, run_cli,
                                                                            monkeypatch):
    monkeypatch.setenv("SWEEP_ROOT", str(tmp_path))
    path = write_run(tmp_path)
    code, _, err = run_cli("launch", path, "--backend", "slurm", "--partition", "nope")
    assert code == 2 and err.startswith("error: --backend slurm: sbatch refused the job") and len(err.splitlines()) == 1
    assert file_tree(tmp_path) == {"run.yaml"}
