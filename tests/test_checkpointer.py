"""The Checkpointer's policy on its own, without the loop: which checkpoints a step leaves (the regular cadence, the
spike guard's ring, one serialisation for both at a shared step, the last step left to the loop), what `keep` and
`ring_size` leave, what a rewind removes, and what `resume` refuses. The loop's use of it is tested end to end by
the resume, guard and fault tests."""
import os

import pytest
import torch

from trainer import runtime as rt
from trainer.checkpoint import CheckpointError, list_checkpoints, step_of
from trainer.checkpointer import Checkpointer
from trainer.config import RunConfig
from trainer.guard import SpikeGuard
from trainer.state import TrainState

STEPS = 12


def setup(tmp_path, every=3, keep=2, guard=None, optimizer="adamw"):
    cfg = RunConfig.parse({"model": {"name": "mlp", "width": 8, "depth": 1},
                           "data": {"kind": "synthetic-vectors", "options": {"in_features": 4, "classes": 2}},
                           "optimizer": {"name": optimizer}, "steps": STEPS,
                           "checkpoint": {"every": every, "keep": keep}, **({"guard": guard} if guard else {}),
                           "output": {"root": str(tmp_path), "study": "s", "kind": "proxy", "run": "r"}})
    layer = torch.nn.Linear(2, 2)
    state, sgd = TrainState(), torch.optim.SGD(layer.parameters(), lr=0.1)
    state.register("model", layer)
    spikes = SpikeGuard(cfg.guard, cfg.run_dir(), None) if guard else None
    if spikes is not None:
        state.register("guard", spikes)
    saver = Checkpointer(cfg, rt.start("cpu", "fp32"), state, sgd, spikes, STEPS)
    saver.curves = Curves()
    return saver, layer


class Curves:
    """The curve writer's part in checkpoints: flushed before each, cut back by a rewind."""

    def __init__(self):
        self.calls = []

    def flush(self):
        self.calls.append("flush")

    def truncate_after(self, step):
        self.calls.append(f"truncate {step}")


def guard_ring(size: int) -> dict:
    """The spike guard on, a ring checkpoint every 2 steps, `size` kept."""
    return {"enabled": True, "ring_every": 2, "ring_size": size, "rewind_steps": 2}


def train_to(saver, last):
    for step in range(saver.state.step + 1, last + 1):
        saver.state.step = step
        saver.maybe_save(step)


def steps(folder):
    return [step_of(p) for p in list_checkpoints(folder)]


def test_regular_checkpoints_every_n_steps_the_newest_kept_and_the_last_left_to_a_forced_save(tmp_path):
    saver, _ = setup(tmp_path, every=3, keep=2)
    train_to(saver, STEPS)
    assert steps(saver.folder) == [6, 9]  # 3 and 6 and 9 written, 12 is the last step: not `maybe_save`'s
    assert saver.curves.calls == ["flush"] * 3  # curves on disk before each checkpoint
    assert saver.save(STEPS, force=True) and steps(saver.folder) == [9, 12]
    assert not saver.save(13)  # not due: nothing written
    assert steps(saver.folder) == [9, 12]


def test_every_0_writes_only_forced_checkpoints(tmp_path):
    saver, _ = setup(tmp_path, every=0)
    train_to(saver, 5)
    assert steps(saver.folder) == []
    saver.save(5, force=True)  # a preemption
    assert steps(saver.folder) == [5]


def test_the_ring_is_written_on_its_own_cadence_and_shares_the_regular_checkpoints_file(tmp_path):
    saver, _ = setup(tmp_path, every=4, keep=3, guard=guard_ring(3))
    train_to(saver, 8)
    ring = saver.guard.ring_dir
    assert steps(ring) == [4, 6, 8] and steps(saver.folder) == [4, 8]
    for step in (4, 8):  # serialised once: the ring's file is the regular one's, by a hard link
        name = f"step-{step:09d}.pt"
        assert os.path.samefile(saver.folder / name, ring / name)
    assert os.stat(ring / "step-000000006.pt").st_nlink == 1


def test_a_rewind_loads_the_ring_checkpoint_and_drops_the_abandoned_branch(tmp_path):
    saver, layer = setup(tmp_path, every=4, keep=5, guard=guard_ring(5))
    train_to(saver, 4)
    at_4 = layer.weight.detach().clone()
    with torch.no_grad():
        layer.weight.add_(1.0)  # the branch that diverges
    train_to(saver, 9)
    saver.curves.calls.clear()
    saver.rewind(saver.guard.ring_dir / "step-000000004.pt")
    assert saver.state.step == 4 and torch.equal(layer.weight, at_4)
    assert saver.curves.calls == ["truncate 4", "flush"]  # rows past the ring step go, then the ring is rewritten
    assert steps(saver.folder) == []  # the regular ones at 4 and 8 are the abandoned branch's (4 is the ring's now)
    assert steps(saver.guard.ring_dir) == [2, 4]  # 6 and 8 gone, 4 rewritten


def test_resume_loads_the_newest_checkpoint_and_refuses_another_optimizers(tmp_path):
    saver, layer = setup(tmp_path)
    train_to(saver, 6)
    written = layer.weight.detach().clone()
    with torch.no_grad():
        layer.weight.zero_()
    fresh, layer = setup(tmp_path)
    fresh.resume()
    assert fresh.state.step == 6 and torch.equal(layer.weight, written)

    saver.cfg.run_dir().mkdir(parents=True, exist_ok=True)
    (saver.cfg.run_dir() / "config.yaml").write_text(saver.cfg.to_yaml())  # the run was started with AdamW
    lion, _ = setup(tmp_path, optimizer="lion")
    with pytest.raises(CheckpointError, match="optimizer.name: the run .* was started with adamw"):
        lion.resume()
