"""FSDP2 (`parallel.kind: fsdp`): sharding changes where the state lives, never the run.

Two gloo processes under torchrun, each holding half of every parameter, gradient and optimizer state, must log the
same curve as one unsharded process at the same global batch: within 1e-6 relative (observed ~4e-7: only the order
of float reductions differs). The bugs this catches move the numbers far more: a rank stepping on unreduced
gradients (its half-batch gradient: losses apart from step 2 by ~1e-3), gradients summed rather than averaged (grad
norm 2×), a group's LR or weight decay multiplier lost in sharding (mup's `infshape` is dropped when FSDP swaps the
parameters; the groups would fall back to one group), the readout's 1/m lost in the forward (logits m× larger).

Sharded checkpoints (DCP) resume into another number of processes (2 → 1, 1 → 2) and the curve goes on with each
step once; a kill -9 of a two-process run mid-checkpoint, launched again, ends bit for bit as the run never killed.
"""
import json
import os
import pickle
import signal
import subprocess
import sys
from contextlib import closing
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch
import torch.distributed.checkpoint as dcp
import yaml

from tests.fault.kill import CreateWatch, descendants, promptly, running, wait_created
from tests.sweep_helpers import run_sweep
from tests.test_ddp import free_port
from trainer.build import build
from trainer.checkpoint import CheckpointError, list_checkpoints
from trainer.checkpoint_sharded import SafeReader
from trainer.config import RunConfig
from trainer.curves import PARTITIONS, read_curves
from trainer.loop import train
from trainer.resolve import resolve
from trainer.runtime import Runtime

REPO = Path(__file__).resolve().parents[1]
RTOL = 1e-6
STEPS = 10
COLUMNS = ("train_loss", "grad_norm", "val_loss", "lr", "tokens")  # noise_scale: its small batch is a process's


def config(root: Path, run: str, *, fsdp: bool = True, **changes) -> dict:
    return {
        "model": {"name": "gpt", "width": 64, "depth": 2},
        "data": {"kind": "synthetic-tokens", "seq_len": 32, "options": {"n_tokens": 20000}},
        "batch_size": 8,
        "steps": STEPS,
        "schedule": {"kind": "constant"},  # a run of 5 steps resumed to 10 is the run of 10
        "log_every": 1,
        "device": "cpu",
        "eval": {"every": 5, "batches": 2, "noise_scale_batches": 2},
        "checkpoint": {"every": 5},
        "output": {"root": str(root), "study": "t", "run": run},
        **({"parallel": {"kind": "fsdp"}} if fsdp else {}),
        **changes,
    }


def write(folder: Path, data: dict) -> Path:
    path = folder / f"{data['output']['run']}-{data['steps']}.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def torchrun(nproc: int, *args, module: str = "sweep") -> None:
    command = [sys.executable, "-m", "torch.distributed.run", f"--nproc_per_node={nproc}", "--master_addr",
               "127.0.0.1", "--master_port", str(free_port()), "-m", module, *map(str, args)]
    proc = subprocess.run(command, cwd=REPO, env={**os.environ, "OMP_NUM_THREADS": "1"}, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, f"torchrun failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr[-3000:]}"


def curve(data: dict) -> pd.DataFrame:
    cfg = RunConfig.parse(data)
    return read_curves(cfg.curves_root(), run=cfg.run_id()).reset_index(drop=True)


def assert_same_curve(got: pd.DataFrame, want: pd.DataFrame) -> None:
    assert got["step"].tolist() == want["step"].tolist() == list(range(1, STEPS + 1))  # each step once
    for column in COLUMNS:
        np.testing.assert_allclose(got[column].to_numpy(float), want[column].to_numpy(float), rtol=RTOL,
                                   err_msg=column)


@pytest.fixture(scope="module")
def single(tmp_path_factory):
    """The reference: one unsharded process."""
    data = config(tmp_path_factory.mktemp("single"), "single", fsdp=False)
    assert train(RunConfig.parse(data)).status == "completed"
    return curve(data)


def test_two_fsdp_processes_equal_one_unsharded_process_at_the_same_global_batch(tmp_path, single):
    data = config(tmp_path, "two", activation_checkpointing=True)  # composes with FSDP2; changes no loss either
    torchrun(2, "train", write(tmp_path, data), "--quiet")
    got = curve(data)
    assert_same_curve(got, single)
    assert got["train_loss"].iloc[0] > 3.0  # a real loss (≈ ln 64 at init)
    assert got["noise_scale"].notna().sum() == 2  # measured at both evaluations, sharded too
    run_dir = RunConfig.parse(data).run_dir()
    [last] = list_checkpoints(run_dir / "checkpoints")[-1:]
    assert sorted(p.name for p in last.iterdir()) == [".metadata", "__0_0.distcp", "__1_0.distcp", "train_state.pt"]
    assert not [p for p in run_dir.rglob(".*") if p.name != ".metadata"]  # no partial checkpoint left behind


def describe(group: dict) -> dict:
    """A parameter group as data: everything but the parameter objects (names, LR, WD, ε and their multipliers)."""
    return json.loads(json.dumps({k: v for k, v in group.items() if k != "params"}, default=str))


def test_mup_groups_are_identical_sharded_and_unsharded(tmp_path):
    """llama under Muon with independent weight decay and depth-μP: groups of different LR, WD and ε multipliers,
    Muon's first, each the same sharded (on both ranks) as unsharded, name for name; every parameter sharded."""
    data = config(tmp_path, "groups", model={"name": "llama", "width": 64, "depth": 2,
                                             "options": {"depth_alpha": 1.0, "base_depth": 1}},
                  optimizer={"name": "muon", "weight_decay": 0.1, "wd_mode": "independent"})
    torchrun(2, write(tmp_path, data), tmp_path / "groups", module="tests.fsdp_groups")
    cfg = resolve(RunConfig.parse({**data, "parallel": None}))
    unsharded = [describe(g) for g in build(cfg, Runtime(torch.device("cpu"), None)).optimizer.param_groups]
    assert len({(g["owner"], g["lr_mult"], g["weight_decay"], g.get("eps_mult")) for g in unsharded}) >= 4
    for rank in (0, 1):
        sharded = json.loads((tmp_path / f"groups.{rank}.json").read_text())
        assert sharded["groups"] == unsharded, f"rank {rank}"
        for group in sharded["shards"]:
            assert all(p["dtensor"] and p["placements"] == ["S(0)"] for p in group), f"rank {rank}"


@pytest.mark.parametrize("before, after", [(2, 1), (1, 2)])
def test_sharded_checkpoint_resumes_into_another_number_of_processes(tmp_path, single, before, after):
    first = config(tmp_path, f"from{before}", steps=5)
    rest = {**first, "steps": STEPS}
    if before == 2:
        torchrun(2, "train", write(tmp_path, first), "--quiet")
        assert train(RunConfig.parse(rest), resume=True).status == "completed"
    else:
        assert train(RunConfig.parse(first)).status == "completed"
        torchrun(2, "train", write(tmp_path, rest), "--resume", "--quiet")
    assert_same_curve(curve(rest), single)


def test_a_foreign_global_in_a_sharded_checkpoint_index_is_refused_and_never_run(tmp_path):
    data = config(tmp_path, "evil", steps=2, eval={"every": 2, "batches": 1, "noise_scale_batches": 0})
    assert train(RunConfig.parse(data)).status == "completed"
    [last] = list_checkpoints(RunConfig.parse(data).run_dir() / "checkpoints")
    marker = tmp_path / "ran"

    class Evil:
        def __reduce__(self):
            return os.system, (f"touch {marker}",)

    (last / ".metadata").write_bytes(pickle.dumps(Evil()))
    with pytest.raises(CheckpointError, match=r"Unsupported global: posix.system"):
        train(RunConfig.parse({**data, "steps": 3}), resume=True)
    assert not marker.exists()


def test_an_unsharded_checkpoint_is_not_resumed_sharded(tmp_path):
    data = config(tmp_path, "kinds", fsdp=False, steps=2, eval={"every": 2, "batches": 1, "noise_scale_batches": 0})
    assert train(RunConfig.parse(data)).status == "completed"
    with pytest.raises(CheckpointError, match=r"^parallel.kind: .* was written unsharded \(parallel.kind ddp\)"):
        train(RunConfig.parse({**config(tmp_path, "kinds", steps=3)}), resume=True)


def sharded_weights(path: Path) -> dict[str, torch.Tensor]:
    """The model's full weights from a sharded checkpoint, read in this process (no process group)."""
    entries = SafeReader(path).read_metadata().state_dict_metadata
    weights = {key: torch.empty(md.size, dtype=md.properties.dtype) for key, md in entries.items()
               if key.startswith("model.") and hasattr(md, "size")}
    dcp.load(weights, storage_reader=SafeReader(path), no_dist=True)
    return weights


KILL = {"steps": 30, "checkpoint": {"every": 10, "keep": 3},
        "eval": {"every": 10, "batches": 2, "noise_scale_batches": 0}}
CLOCKS = ("wall_time", "tokens_per_s", "mfu")


def outcome(data: dict) -> tuple[pd.DataFrame, dict]:
    cfg = RunConfig.parse(data)
    rows = read_curves(cfg.curves_root(), run=cfg.run_id()).drop(columns=[*PARTITIONS, *CLOCKS])
    return rows.reset_index(drop=True), sharded_weights(list_checkpoints(cfg.run_dir() / "checkpoints")[-1])


def test_kill_9_of_a_two_process_fsdp_run_mid_checkpoint_resumes_bit_for_bit(tmp_path):
    for name in ("reference", "killed"):
        (tmp_path / name).mkdir()
    reference = config(tmp_path / "reference", "run", **KILL)
    assert run_sweep(tmp_path, "launch", write(tmp_path, reference), "--nproc", "2", timeout=300).returncode == 0
    killed = config(tmp_path / "killed", "run", **KILL)
    path = write(tmp_path / "killed", killed)
    with running(tmp_path, "launch", path, "--nproc", "2") as proc, closing(CreateWatch(tmp_path)) as watch:
        with promptly():  # both processes are writing the second checkpoint's shards
            hit = wait_created(proc, watch, "*/checkpoints/.step-000000020.partial/*.distcp", timeout=240)
            for pid in [*descendants(proc.pid), proc.pid]:  # torchrun's workers, torchrun, the launcher
                os.kill(pid, signal.SIGKILL)
        proc.wait()
    assert hit is not None, "the run ended before its second checkpoint"
    assert hit.parent.is_dir(), "the kill came after the checkpoint was complete"
    cfg = RunConfig.parse(killed)
    assert not (cfg.run_dir() / "result.json").exists(), "the run finished before the kill"
    assert [p.name for p in list_checkpoints(cfg.run_dir() / "checkpoints")] == ["step-000000010"]

    again = run_sweep(tmp_path, "launch", path, "--nproc", "2", timeout=300)
    assert again.returncode == 0, again.stderr
    got, want = outcome(killed), outcome(reference)
    assert got[0]["step"].tolist() == list(range(1, 31))  # each step once
    pd.testing.assert_frame_equal(got[0], want[0], check_exact=True)
    assert got[1].keys() == want[1].keys() and got[1]
    for name, tensor in got[1].items():
        assert torch.equal(tensor, want[1][name]), name


def saved_by_forward(cfg: RunConfig) -> tuple[int, torch.Tensor]:
    """How many tensors autograd keeps for the backward in one forward of the built model, and its loss."""
    model = build(resolve(cfg), Runtime(torch.device("cpu"), None)).model
    x = torch.randint(0, 64, (4, 32))
    saved = []
    with torch.autograd.graph.saved_tensors_hooks(lambda t: saved.append(t) or t, lambda t: t):
        loss = model(x).float().logsumexp(-1).mean()
    return len(saved), loss


def test_activation_checkpointing_changes_no_loss_and_keeps_fewer_tensors(tmp_path, single):
    data = config(tmp_path, "recomputed", fsdp=False, activation_checkpointing=True)
    assert train(RunConfig.parse(data)).status == "completed"
    got = curve(data)
    for column in COLUMNS:  # the same arithmetic, recomputed: equal to the bit on CPU
        np.testing.assert_array_equal(got[column].to_numpy(float), single[column].to_numpy(float), err_msg=column)
    kept, loss = saved_by_forward(RunConfig.parse(data))
    kept_plain, loss_plain = saved_by_forward(RunConfig.parse({**data, "activation_checkpointing": False}))
    assert torch.equal(loss, loss_plain)
    assert kept < kept_plain / 2  # the blocks' inner activations are not kept (observed: 13 against 67)
