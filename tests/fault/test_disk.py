"""A full disk and a read-only study folder, on real mounts (we are root: a small tmpfs as the results root).

- Full disk mid-training (`sweep proxy`, `sweep train`): the disk is filled while a run trains, so the
  next write meets ENOSPC at a chosen place: an Optuna SQLite write, a curve part or a checkpoint.
  Required: one line on stderr naming the folder and that the disk is full, exit 1, no traceback; no
  torn file (each Parquet part, YAML, JSON and checkpoint loads, the SQLite file passes its
  integrity check, no temp file is left); the trial in flight is not counted (no `error`: it is
  retried), and once the filler is deleted the same command resumes the run from its checkpoint and
  completes exactly the requested count, earlier COMPLETE trials untouched.
- Read-only study folder (`sweep proxy`, `sweep train`): one line naming the folder, exit 2 (pre-flight),
  nothing written.
The short form fills at the SQLite write (proxy) and at a checkpoint (train); SWEEP_FAULT_FULL=1 adds
the other places.
"""
from __future__ import annotations

import errno
import json
import os
import sqlite3
import subprocess
import time
from contextlib import contextmanager
from pathlib import Path

import pyarrow.parquet as pq
import pytest
import torch
import yaml
from optuna.trial import TrialState

from sweep.study.study import counts
from tests.sweep_helpers import early_rows, file_tree, kept, load, run_sweep, sweep_cmd, sweep_env, write_spec
from trainer.config import RunConfig
from trainer.curves import read_curves

FULL = bool(os.environ.get("SWEEP_FAULT_FULL"))
KIB = 1024
# 60 steps, a checkpoint every 20: the disk is filled once the run has its first checkpoint; the
# curve parts and checkpoints of steps 40 and 60 come after.
RUN = {"steps": 60, "log_every": 5, "checkpoint": {"every": 20, "keep": 2}}
RUN_CONFIG = {
    "model": {"name": "gpt", "width": 16, "depth": 1, "options": {"block_size": 16}},
    "data": {"kind": "synthetic-tokens", "seq_len": 16, "options": {"n_tokens": 20000}},
    "batch_size": 4, "device": "cpu", **RUN,
    "eval": {"every": 60, "batches": 2, "noise_scale_batches": 0},
    "output": {"study": "full", "kind": "full"},
}


@contextmanager
def tmpfs(folder: Path, size: str = "4m", read_only: bool = False):
    """A tmpfs of `size` mounted at `folder` (made if missing), unmounted at the end whatever happens."""
    folder.mkdir(parents=True, exist_ok=True)
    options = f"size={size}" + (",ro" if read_only else "")
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(folder)],
                             capture_output=True, text=True)
    if mounted.returncode != 0:
        message = f"cannot mount a tmpfs ({mounted.stderr.strip()}); the disk faults need root and mount"
        pytest.fail(message) if os.environ.get("CI") else pytest.skip(message)
    try:
        yield folder
    finally:
        if subprocess.run(["umount", str(folder)], capture_output=True).returncode != 0:
            subprocess.run(["umount", "-l", str(folder)], capture_output=True)


def free_bytes(folder: Path) -> int:
    stat = os.statvfs(folder)
    return stat.f_bavail * stat.f_frsize


def fill(root: Path, leave: int) -> Path:
    """Write a filler file until `leave` bytes are free on root's file system (delete it to free them)."""
    filler = root / "filler"
    try:
        with open(filler, "ab") as f:
            f.write(b"\0" * max(0, free_bytes(root) - leave))
    except OSError as err:  # the run wrote in the meantime: full all the same
        if err.errno != errno.ENOSPC:
            raise
    assert free_bytes(root) <= leave + 4 * KIB
    return filler


def wait_for_checkpoint(folder: Path, timeout: float = 120) -> None:
    """Until the run's first checkpoint is in `folder`. Polled every 10 ms, not wait_for's 200: a tiny run
    on an idle machine is past its next checkpoint in well under a second."""
    deadline = time.time() + timeout
    while not list(folder.glob("step-*.pt")):
        assert time.time() < deadline, f"no checkpoint in {folder} after {timeout} s"
        time.sleep(0.01)


def assert_nothing_torn(root: Path) -> None:
    """Every file the tool left loads whole; no temp file is left."""
    checked = 0
    for path in sorted(p for p in root.rglob("*") if p.is_file() and p.name != "filler"):
        assert not path.name.endswith(".tmp") and not path.name.endswith("-journal"), f"left behind: {path}"
        if path.suffix == ".parquet":
            pq.read_table(path)
        elif path.suffix in (".yaml", ".bsh"):
            yaml.safe_load(path.read_text())
        elif path.suffix == ".json":
            json.loads(path.read_text())
        elif path.suffix == ".pt":
            torch.load(path, weights_only=True)
        elif path.suffix == ".db":
            with sqlite3.connect(path) as db:
                assert db.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        else:
            raise AssertionError(f"unexpected file {path}")
        checked += 1
    assert checked


def one_error_line(stderr: str) -> str:
    lines = stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), stderr
    return lines[0]


# where the disk is found full: the evaluation cadence, the bytes the filler leaves free, the folder named
PROXY_PLACES = {
    # evaluations every 10 steps: the next write is the pruner's report to SQLite (a curve part waits for step 40)
    "optuna-sqlite": (10, 0, lambda root: root / "tiny"),
    # evaluations only at the end; nothing left: the next write is a curve part (before each checkpoint)
    "curve-part": (60, 0,
                   lambda root: next((root / "tiny" / "curves").glob("study=*/kind=proxy/run=w16-mup-t00001-s0"))),
    # room for a curve part, not for a checkpoint
    "checkpoint": (60, 24 * KIB, lambda root: root / "tiny" / "runs" / "w16-mup-t00001-s0" / "checkpoints"),
}


@pytest.mark.parametrize("place", [p for p in PROXY_PLACES if FULL or p == "optuna-sqlite"])
def test_a_full_disk_mid_sweep_is_one_line_and_after_freeing_space_the_same_command_resumes(tmp_path, place):
    eval_every, leave, folder = PROXY_PLACES[place]
    spec = write_spec(tmp_path, trials=2, run={**RUN, "eval": {"every": eval_every}})
    with tmpfs(tmp_path / "root") as root:
        command = sweep_cmd("proxy", spec, "--width", "16")
        proc = subprocess.Popen(command, env=sweep_env(root), cwd=tmp_path, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
        try:
            wait_for_checkpoint(root / "tiny" / "runs" / "w16-mup-t00001-s0" / "checkpoints")
            filler = fill(root, leave)
            out, err = proc.communicate(timeout=120)
        finally:
            proc.kill()
        assert proc.returncode == 1, out + err
        line = one_error_line(err)
        assert line.startswith(f"error: {folder(root)}: the disk is full (ENOSPC)"), line
        assert_nothing_torn(root)
        study = load(root)
        first = study.trials[0]
        assert first.state == TrialState.COMPLETE
        interrupted = study.trials[1]  # left RUNNING under its exited worker: the next run retries it
        assert interrupted.state == TrialState.RUNNING and "error" not in interrupted.user_attrs
        rows = early_rows(root, "w16-mup-t00001-s0")

        filler.unlink()
        again = run_sweep(root, "proxy", spec, "--width", "16", cwd=tmp_path)
        assert again.returncode == 0, again.stdout + again.stderr
        study = load(root)
        assert sum(map(counts, study.trials)) == 2
        complete = [t for t in study.trials if t.state == TrialState.COMPLETE]
        assert [(t.number, t.params, t.value) for t in complete[:1]] == [(0, first.params, first.value)]
        [retry] = complete[1:]
        assert retry.user_attrs["retry_of"] == 1 and retry.params == interrupted.params
        # resumed from its checkpoint, not over
        assert kept(rows, pq.read_table(root / retry.user_attrs["curves"]).to_pandas())
        steps = pq.read_table(root / retry.user_attrs["curves"]).column("step").to_pylist()
        assert sorted(steps) == [1, *range(5, 61, 5)]  # each logged step once
        assert_nothing_torn(root)


@pytest.mark.parametrize("place,leave", [("checkpoint", 24 * KIB)] + ([("curve-part", 0)] if FULL else []))
def test_a_full_disk_mid_run_of_sweep_train_is_one_line_and_the_same_command_resumes(tmp_path, place, leave):
    with tmpfs(tmp_path / "root", size="2m") as root:
        config = tmp_path / "run.yaml"
        config.write_text(yaml.safe_dump({**RUN_CONFIG, "output": {**RUN_CONFIG["output"], "root": str(root)}}))
        cfg = RunConfig.load(config)
        command = sweep_cmd("train", config, "--resume", "--quiet")
        proc = subprocess.Popen(command, env=sweep_env(root), cwd=tmp_path, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
        try:
            wait_for_checkpoint(cfg.run_dir() / "checkpoints")
            filler = fill(root, leave)
            out, err = proc.communicate(timeout=120)
        finally:
            proc.kill()
        assert proc.returncode == 1, out + err
        curves = cfg.curves_root() / "study=full" / "kind=full" / f"run={cfg.run_id()}"
        folder = cfg.run_dir() / "checkpoints" if place == "checkpoint" else curves
        assert one_error_line(err).startswith(f"error: {folder}: the disk is full (ENOSPC)"), err
        assert_nothing_torn(root)
        [part] = curves.glob("part-000000001-*.parquet")
        rows = pq.read_table(part, columns=["step", "wall_time"]).to_pandas()

        filler.unlink()
        again = subprocess.run(command, env=sweep_env(root), cwd=tmp_path, capture_output=True, text=True, timeout=120)
        assert again.returncode == 0, again.stdout + again.stderr
        assert kept(rows, read_curves(cfg.curves_root(), run=cfg.run_id()))  # resumed from its checkpoint
        steps = read_curves(cfg.curves_root(), run=cfg.run_id())["step"].tolist()
        assert steps == [1, *range(5, 61, 5)]
        assert_nothing_torn(root)


@pytest.mark.parametrize("command", ["proxy", "train"])
def test_a_read_only_study_folder_is_one_line_exit_2_and_nothing_is_written(tmp_path, command):
    spec = write_spec(tmp_path, trials=2)
    config = tmp_path / "run.yaml"
    output = {**RUN_CONFIG["output"], "root": str(tmp_path / "root")}
    config.write_text(yaml.safe_dump({**RUN_CONFIG, "output": output}))
    study = "tiny" if command == "proxy" else "full"
    with tmpfs(tmp_path / "root" / study, size="1m", read_only=True) as folder:
        before = file_tree(tmp_path)
        args = ("proxy", spec, "--width", "16") if command == "proxy" else ("train", config)
        done = run_sweep(tmp_path / "root", *args, cwd=tmp_path, timeout=120)
        assert done.returncode == 2, done.stdout + done.stderr
        field = "results root ($SWEEP_ROOT)" if command == "proxy" else "output.root"
        assert one_error_line(done.stderr) == (f"error: {field}: cannot write {folder} "
                                               f"({folder} is on a read-only file system)")
        assert file_tree(tmp_path) == before
