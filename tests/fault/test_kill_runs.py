"""kill -9 of `sweep train` and of a local `sweep launch` mid-run, then the documented resume
(`sweep train RUN.yaml --resume`; `sweep launch RUN.yaml` again): the run goes on from its last
checkpoint and ends as an uninterrupted run does, bit for bit on CPU: every curve column but the
clocks (wall time, throughput, MFU), each step once, and the final weights.

The moments (seeded): mid-run (a random time after the second checkpoint, in units of the time
between the first two), during a checkpoint write (the n-th temp checkpoint appears) and during a
Parquet write (the n-th temp part appears). A local launch over two processes (torchrun, gloo) is
killed at the launcher alone: nothing it started may go on training. Every optimizer resumes bit for bit too
(its state, and Schedule-Free's averaged weights written in eval mode): two in the short form, all in the full.
"""
import os
import random
import signal
import time
from contextlib import closing
from pathlib import Path

import pandas as pd
import pytest
import torch
import yaml

from proxies.optimizers import OPTIMIZERS
from tests.fault.files import assert_whole_files
from tests.fault.kill import CreateWatch, alive, descendants, fault_repeats, promptly, running, wait_created, wait_dead
from tests.sweep_helpers import kept, run_sweep
from trainer.checkpoint import list_checkpoints, load_checkpoint, step_of
from trainer.config import RunConfig
from trainer.curves import PARTITIONS, read_curves

STEPS = 60
RUN = {
    "model": {"name": "gpt", "width": 32, "depth": 1, "options": {"block_size": 16}},
    "data": {"kind": "synthetic-tokens", "seq_len": 16, "options": {"n_tokens": 20000}},
    "batch_size": 8,
    "steps": STEPS,
    "log_every": 1,
    "device": "cpu",
    "eval": {"every": 10, "batches": 2, "noise_scale_batches": 0},
    "checkpoint": {"every": 10, "keep": 3},  # mid_run reads the times of the first two while the run goes on
    "output": {"study": "full", "kind": "full"},
}
CHECKPOINTS = STEPS // RUN["checkpoint"]["every"]
STEPS_TWO = 300  # a worker left running after the kill could not finish the run in the second we give it
CLOCKS = ("wall_time", "tokens_per_s", "mfu")  # measured time: the only columns that differ between two runs


def write_run(folder: Path, name: str, steps: int = STEPS, optimizer: str | None = None) -> Path:
    """The run's YAML; with `optimizer`, that optimizer at a constant LR (Schedule-Free allows no other)."""
    path = folder / f"{name}.yaml"
    output = {**RUN["output"], "root": str(folder), "run": name}
    chosen = {"optimizer": {"name": optimizer}, "schedule": {"kind": "constant"}} if optimizer else {}
    path.write_text(yaml.safe_dump({**RUN, "steps": steps, "output": output, **chosen}))
    return path


def finished_run(folder: Path, name: str, *launch, steps: int = STEPS,
                 optimizer: str | None = None) -> tuple[pd.DataFrame, dict]:
    """An uninterrupted run as a real process (`sweep train`, or `sweep launch …` when given): its curve and
    final weights."""
    path = write_run(folder, name, steps, optimizer)
    command = ["launch", path, *launch] if launch else ["train", path]
    done = run_sweep(folder, *command, timeout=900)
    assert done.returncode == 0, done.stderr
    return outcome(RunConfig.load(path))


def outcome(cfg: RunConfig) -> tuple[pd.DataFrame, dict]:
    curve = read_curves(cfg.curves_root(), run=cfg.run_id()).drop(columns=[*PARTITIONS, *CLOCKS])
    [last] = list_checkpoints(cfg.run_dir() / "checkpoints")[-1:]
    return curve.reset_index(drop=True), load_checkpoint(last)["model"]


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    return finished_run(tmp_path_factory.mktemp("reference"), "reference")


@pytest.fixture(scope="module")
def reference_two(tmp_path_factory):
    return finished_run(tmp_path_factory.mktemp("reference-two"), "reference-two", "--nproc", "2", steps=STEPS_TWO)


def assert_same_run(cfg: RunConfig, want: tuple[pd.DataFrame, dict]) -> None:
    curve, weights = outcome(cfg)
    assert curve["step"].tolist() == list(range(1, cfg.steps + 1))  # each step once
    pd.testing.assert_frame_equal(curve, want[0], check_exact=True)  # bit for bit, NaN where NaN
    assert weights.keys() == want[1].keys()
    for name, tensor in weights.items():
        assert torch.equal(tensor, want[1][name]), name
    assert len(assert_whole_files(cfg.curves_root().parent)) <= 1  # at most the killed write's hidden temp file


def mid_run(proc, watch: CreateWatch, rng: random.Random) -> None:
    """Return at a random time after the second checkpoint: between steps 20 and about 30 (the time between
    the first two checkpoints, as their files' modification times tell, is the unit; the 30 steps left
    absorb a busy machine's changes of pace)."""
    first = wait_created(proc, watch, "*/checkpoints/step-*.pt", timeout=120)  # not the guard's ring
    assert first, "the run ended before its first checkpoint"
    first_time = first.stat().st_mtime
    second = wait_created(proc, watch, "*/checkpoints/step-*.pt", timeout=120)
    assert second, "the run ended before its second checkpoint"
    second_time = second.stat().st_mtime
    time.sleep(max(0.0, second_time + rng.uniform(0, 1) * (second_time - first_time) - time.time()))


def in_checkpoint_write(proc, watch: CreateWatch, rng: random.Random) -> Path:
    """Return the moment the n-th temp checkpoint appears (a regular one, not the spike guard's ring; not the
    last: the run would be done)."""
    nth = rng.randint(1, CHECKPOINTS - 1)
    hit = wait_created(proc, watch, "*/checkpoints/.step-*.pt.*.tmp", timeout=120, nth=nth)
    assert hit, "the run ended before the checkpoint write"
    return hit


def in_parquet_write(proc, watch: CreateWatch, rng: random.Random) -> Path:
    """Return the moment the n-th temp curve part appears (one is written before each checkpoint)."""
    hit = wait_created(proc, watch, "*/.part-*.tmp", timeout=120, nth=rng.randint(1, CHECKPOINTS - 1))
    assert hit, "the run ended before the curve write"
    return hit


MOMENTS = {"mid-run": mid_run, "checkpoint": in_checkpoint_write, "parquet": in_parquet_write}
COMMANDS = {"train": (["train"], ["--resume"]), "launch": (["launch"], [])}  # (command, what resumes it)
CASES = fault_repeats([("train", "mid-run", 0), ("launch", "checkpoint", 0)],
                      [(command, moment, seed) for command in COMMANDS for moment in MOMENTS for seed in range(3)])


def checkpointed_rows(cfg: RunConfig) -> pd.DataFrame:
    """Step and wall time of the rows the run's newest checkpoint covers (a resume keeps them as they are); none
    when the kill came in the first curve write (read_curves still has the columns then)."""
    checkpoints = list_checkpoints(cfg.run_dir() / "checkpoints")
    rows = read_curves(cfg.curves_root(), run=cfg.run_id())[["step", "wall_time"]]
    return rows[rows["step"] <= step_of(checkpoints[-1])] if checkpoints else rows.iloc[:0]


@pytest.mark.parametrize("command, moment, seed", CASES)
def test_kill_9_mid_run_then_resume_gives_the_uninterrupted_curve_bit_for_bit(
        tmp_path, reference, command, moment, seed):
    kill_and_resume(tmp_path, write_run(tmp_path, "killed"), command, moment, seed, reference)


@pytest.mark.parametrize("optimizer", fault_repeats(["muon", "schedulefree_adamw"], list(OPTIMIZERS)))
def test_kill_9_mid_run_then_resume_is_bit_identical_with_each_optimizer(tmp_path, tmp_path_factory, optimizer):
    # the classic bugs: a part of an optimizer's state not in its state dict (Muon's composite, Lion's momentum),
    # Schedule-Free resumed from y, or left in eval mode after the load
    want = finished_run(tmp_path_factory.mktemp("reference"), "reference", optimizer=optimizer)
    kill_and_resume(tmp_path, write_run(tmp_path, "killed", optimizer=optimizer), "train", "mid-run", 0, want)


def kill_and_resume(tmp_path: Path, path: Path, command: str, moment: str, seed: int,
                    want: tuple[pd.DataFrame, dict]) -> None:
    """Kill `sweep COMMAND PATH` at `moment`, resume it as documented, and compare with the uninterrupted run."""
    cfg = RunConfig.load(path)
    run, resume = COMMANDS[command]
    with running(tmp_path, *run, path) as proc, closing(CreateWatch(tmp_path)) as watch:
        with promptly():
            writing = MOMENTS[moment](proc, watch, random.Random(seed))
            proc.kill()
        proc.wait()
    assert not (cfg.run_dir() / "result.json").exists(), "the run finished before the kill"
    assert writing is None or writing.exists(), "the kill came after the write"
    rows = checkpointed_rows(cfg)

    resumed = run_sweep(tmp_path, *run, path, *resume, timeout=900)
    assert resumed.returncode == 0, resumed.stderr
    assert_same_run(cfg, want)
    assert kept(rows, read_curves(cfg.curves_root(), run=cfg.run_id()))  # went on from the checkpoint, not over


def test_kill_9_of_a_two_process_local_launch_stops_its_workers_and_launching_again_resumes_it(tmp_path, reference_two):
    path = write_run(tmp_path, "killed-two", STEPS_TWO)
    cfg = RunConfig.load(path)
    with running(tmp_path, "launch", path, "--nproc", "2") as proc, closing(CreateWatch(tmp_path)) as watch:
        mid_run(proc, watch, random.Random(0))
        started = descendants(proc.pid)  # torchrun and its two workers, each in a session of its own
        proc.kill()  # the launcher alone
        proc.wait()
    try:
        assert not (cfg.run_dir() / "result.json").exists(), "the run finished before the kill"
        assert len(started) == 3
        wait_dead(lambda: alive(started), timeout=1)  # no orphan goes on training (and writing) beside the next launch
    finally:
        for pid in alive(started):
            os.kill(pid, signal.SIGKILL)
    rows = checkpointed_rows(cfg)

    again = run_sweep(tmp_path, "launch", path, "--nproc", "2", timeout=900)
    assert again.returncode == 0, again.stderr
    assert_same_run(cfg, reference_two)
    assert kept(rows, read_curves(cfg.curves_root(), run=cfg.run_id()))
