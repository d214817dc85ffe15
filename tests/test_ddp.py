"""Data parallelism and gradient accumulation leave the curve unchanged at the same global batch.

Two gloo processes under torchrun must log the same per-step train loss and pre-clip grad norm, and
reach the same val loss, as one process; so must one process taking 4 micro-steps per optimizer step.

Tolerance: rtol 1e-4. In exact arithmetic both are identical: each rank's loss is the mean over its
half of the global batch, DDP averages the two ranks' gradients, which is the mean over the whole batch;
accumulation sums loss / grad_accum over the micro-batches, the same mean. Only float reduction order
differs (observed: ~1e-7 relative). The bugs this is meant to catch move the numbers by far more:
  * each rank drawing its own batches (e.g. a rank-seeded generator) or overlapping slices: a different
    global batch, so the step-1 loss, taken at identical initial weights, differs by ~1e-2 relative;
  * the loss or gradients summed instead of averaged across ranks: train_loss or grad_norm 2×;
  * the global batch doubled (each rank taking batch_size rows, not batch_size / world): a different
    batch of 16, not 8, so the losses and grad norms differ from step 1;
  * accumulating without dividing the loss by grad_accum: grad_norm 4× (and train_loss 4×);
  * zero_grad moved inside the micro-step loop: only the last micro-batch counts, grad_norm differs.
A zero_grad dropped altogether hits the one-process reference just the same, so comparing runs cannot
see it; `test_logged_grad_norm_is_this_steps_gradient_alone` recomputes each step's gradient from the
previous step's checkpoint instead.
"""

import os
import socket
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
import yaml

from proxies.data import open_data
from proxies.registry import build_model
from trainer.checkpoint import checkpoint_path
from trainer.config import RunConfig
from trainer.curves import read_curves
from trainer.evaluate import loss_fn
from trainer.loop import train
from trainer.resolve import resolve

REPO = Path(__file__).resolve().parents[1]
RTOL = 1e-4
STEPS = 5


def config(root, run: str, **changes) -> dict:
    return {
        "model": {"name": "gpt", "width": 64, "depth": 2},
        "data": {"kind": "synthetic-tokens", "seq_len": 32, "options": {"n_tokens": 20000}},
        "batch_size": 8,
        "steps": STEPS,
        "log_every": 1,
        "device": "cpu",
        "eval": {"every": STEPS, "batches": 2, "noise_scale_batches": 0},
        "output": {"root": str(root), "study": "t", "run": run},
        **changes,
    }


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def curve(cfg: RunConfig):
    return read_curves(cfg.curves_root(), run=cfg.run_id())


def assert_same_curve(got, want):
    assert got["step"].tolist() == want["step"].tolist() == list(range(1, STEPS + 1))  # each step once
    for column in ("train_loss", "grad_norm", "lr", "tokens"):
        np.testing.assert_allclose(got[column].to_numpy(), want[column].to_numpy(), rtol=RTOL, err_msg=column)
    np.testing.assert_allclose(got["val_loss"].iloc[-1], want["val_loss"].iloc[-1], rtol=RTOL, err_msg="val_loss")


@pytest.fixture(scope="module")
def single(tmp_path_factory):
    """The reference: one process, no accumulation."""
    root = tmp_path_factory.mktemp("single")
    cfg = RunConfig.parse(config(root, "single"))
    result = train(cfg)
    assert result.status == "completed" and result.step == STEPS
    return cfg, result, curve(cfg)


def test_two_gloo_processes_equal_one_process_at_the_same_global_batch(tmp_path, single):
    ref_cfg, ref_result, ref = single
    root = tmp_path / "out"
    cfg = RunConfig.parse(config(root, "ddp"))
    cfg_path = tmp_path / "ddp.yaml"
    cfg_path.write_text(cfg.to_yaml())
    command = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node=2", "--master_addr", "127.0.0.1",
               "--master_port", str(free_port()), "-m", "sweep", "train", str(cfg_path), "--quiet"]
    proc = subprocess.run(command, cwd=REPO, env={**os.environ, "OMP_NUM_THREADS": "1"},
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, f"torchrun failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}"

    got = curve(cfg)
    assert_same_curve(got, ref)
    assert not got["val_loss"].iloc[:-1].notna().any()  # one eval, at the end
    assert got["train_loss"].iloc[0] > 3.0  # sanity: a real loss (≈ ln 64 at init), not zeros

    # only rank 0 writes: one run in the curves, one part file, one run folder with one checkpoint.
    # (A second writer would produce an identically named part, so the file count alone cannot prove it;
    # the step count and the single folder of each kind are what can be checked.)
    assert read_curves(cfg.curves_root())["run"].unique().tolist() == ["ddp"]
    parts = sorted(p.relative_to(cfg.curves_root()).as_posix() for p in cfg.curves_root().rglob("*") if p.is_file())
    assert parts == [f"study=t/kind=proxy/run=ddp/part-000000001-{STEPS:09d}.parquet"]
    runs = sorted(p.name for p in (root / "t" / "runs").iterdir())
    assert runs == ["ddp"]
    checkpoint_dirs = sorted(p.relative_to(root).as_posix() for p in root.rglob("checkpoints") if p.is_dir())
    assert checkpoint_dirs == ["t/runs/ddp/checkpoints"]
    assert sorted(p.name for p in (cfg.run_dir() / "checkpoints").iterdir()) == [f"step-{STEPS:09d}.pt"]
    assert not [p for p in root.rglob(".*") if p.is_file()]  # no temp files left behind

    result = yaml.safe_load((cfg.run_dir() / "result.json").read_text())  # JSON is YAML
    assert result["status"] == "completed" and result["step"] == STEPS
    np.testing.assert_allclose(result["val_loss"], ref_result.val_loss, rtol=RTOL)


@pytest.fixture(scope="module")
def accumulated(tmp_path_factory):
    """The same run in one process taking 4 micro-steps of 2 sequences per optimizer step."""
    cfg = RunConfig.parse(config(tmp_path_factory.mktemp("accum"), "accum", grad_accum=4))
    result = train(cfg)
    assert result.status == "completed" and result.step == STEPS
    return cfg, result, curve(cfg)


def test_grad_accumulation_equals_one_big_batch(single, accumulated):
    _, ref_result, ref = single
    _, result, got = accumulated
    assert got["step"].tolist() == list(range(1, STEPS + 1))
    for column in ("train_loss", "grad_norm", "lr", "tokens"):
        np.testing.assert_allclose(got[column].to_numpy(), ref[column].to_numpy(), rtol=RTOL, err_msg=column)
    np.testing.assert_allclose(result.train_loss, ref_result.train_loss, rtol=RTOL)


def test_grad_accumulation_leaves_the_val_loss_unchanged(single, accumulated):
    # grad_accum is a memory knob: the held-out set, and so val_loss, must not depend on it
    np.testing.assert_allclose(accumulated[1].val_loss, single[1].val_loss, rtol=RTOL)


@pytest.mark.parametrize("grad_accum", [1, 4])
def test_logged_grad_norm_is_this_steps_gradient_alone(tmp_path, grad_accum):
    """Step t+1's logged (pre-clip) grad norm is the norm of the mean-loss gradient on step t+1's batch at
    step t's weights, recomputed here from the checkpoint of step t in one full-batch backward.

    Catches a dropped zero_grad (gradients of earlier steps added in), accumulation without dividing the
    loss (4×), a norm logged after clipping (≤ grad_clip = 1, while the true step-1 norm is ≈ 4), and a
    checkpoint that does not hold the weights or the data position the next step uses."""
    steps = 3
    cfg = resolve(RunConfig.parse(config(tmp_path, f"ga{grad_accum}", steps=steps, grad_accum=grad_accum,
                                         checkpoint={"every": 1, "keep": steps})))
    assert train(cfg).status == "completed"
    logged = curve(cfg)["grad_norm"].tolist()

    data = open_data(cfg.data.kind, seq_len=cfg.data.seq_len, val_fraction=cfg.data.val_fraction, seed=cfg.seed,
                     **cfg.data.options)
    torch.manual_seed(cfg.seed)  # as the loop does before building
    model = build_model(cfg.model.name, cfg.model.width, cfg.model.depth, cfg.model.parametrization,
                        **{**data.model_options(), **cfg.model.options})
    generator = torch.Generator().manual_seed(cfg.seed)
    recomputed = []
    for step in range(steps):
        if step:
            state = torch.load(checkpoint_path(cfg.run_dir() / "checkpoints", step), weights_only=True)
            assert state["step"] == step
            model.load_state_dict(state["model"])
            generator.set_state(state["data"]["generator"])
        x, y = data.batch("train", cfg.batch_size, generator)
        model.zero_grad(set_to_none=True)
        loss_fn(model, x, y).backward()
        recomputed.append(torch.nn.utils.clip_grad_norm_(list(model.parameters()), float("inf")).item())
    assert logged[0] > 1.0 + 1e-3  # the true norm exceeds grad_clip, so a post-clip norm would show
    np.testing.assert_allclose(logged, recomputed, rtol=RTOL)
