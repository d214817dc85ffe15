"""SIGTERM (a scheduler's kill, `scontrol requeue`) and SIGUSR2 (SLURM's warning ahead of the time limit) make a
run checkpoint at the step it is in and leave at once, instead of training on until SIGKILL: the classic bug is
a run that ignores the signal (or only logs it, as submitit does for SIGTERM) and loses everything since its
last periodic checkpoint. The run here cannot finish before it is signalled (a million steps, no periodic
checkpoint), so the test does not depend on the machine's speed. The SLURM form, a requeued sweep task resuming
its trial from that checkpoint, is tests/test_backend_slurm.py."""
import signal
import subprocess

import pytest
import yaml

from tests.sweep_helpers import sweep_cmd, sweep_env, wait_for
from trainer.checkpoint import list_checkpoints, step_of
from trainer.curves import read_curves

RUN = {"model": {"name": "gpt", "width": 16, "depth": 1, "options": {"block_size": 16}},
       "data": {"kind": "synthetic-tokens", "seq_len": 16, "options": {"n_tokens": 20000}},
       "batch_size": 4, "steps": 1_000_000, "log_every": 1, "device": "cpu",
       "eval": {"every": 1_000_000, "batches": 1, "noise_scale_batches": 0},
       "checkpoint": {"every": 1_000_000, "keep": 2}, "output": {"study": "full", "kind": "full", "run": "long"}}


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGUSR2])
def test_a_signal_makes_sweep_train_checkpoint_at_its_step_and_exit_at_once(tmp_path, signum):
    path = tmp_path / "run.yaml"
    path.write_text(yaml.safe_dump({**RUN, "output": {**RUN["output"], "root": str(tmp_path)}}))
    run_dir = tmp_path / "full" / "runs" / "long"
    proc = subprocess.Popen(sweep_cmd("train", path, "--quiet"), env=sweep_env(tmp_path), cwd=tmp_path,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        wait_for(lambda: (run_dir / "config.yaml").exists(), 120, "the run to start")  # its handler is installed
        proc.send_signal(signum)
        out, err = proc.communicate(timeout=120)
    finally:
        proc.kill()
    name = signal.Signals(signum).name
    assert proc.returncode == 128 + signum, err
    assert err.startswith(f"preempted: {name} at step ") and err.count("\n") == 1, err
    step = int(err.split(" at step ")[1].split(":")[0])
    [checkpoint] = list_checkpoints(run_dir / "checkpoints")  # the one written at the signal: no periodic one is due
    assert step_of(checkpoint) == step >= 1
    assert read_curves(tmp_path / "full" / "curves")["step"].tolist() == list(range(1, step + 1))  # flushed with it
