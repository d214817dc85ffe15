"""A run's checkpoints, kept outside the training loop as torchtitan's CheckpointManager keeps them: the folder
(`RUN/checkpoints/`, and the spike guard's ring beside it), the policy (every `checkpoint.every` steps, the newest
`checkpoint.keep` kept; the ring every `guard.ring_every` steps, `guard.ring_size` kept), the layout
(`parallel.kind`: one file from rank 0, trainer/checkpoint.py, or a sharded folder from every process,
trainer/checkpoint_sharded.py), and what a run may resume from (the format this code writes, the optimizer that
wrote it).

The loop calls four things: `resume()` at its start, `maybe_save(step)` after each step, `save(step, force=True)`
at its end or a preemption, and `rewind(target)` when the spike guard goes back to a ring checkpoint. What a
checkpoint holds is the run's `TrainState` (trainer/state.py). The run's curve is flushed before every checkpoint
and cut back with a rewind, so on disk it never lags the checkpoint it resumes from.
"""
from __future__ import annotations

from pathlib import Path

import torch

from trainer import runtime as rt
from trainer.checkpoint import (
    CheckpointError,
    check_in_root,
    checkpoint_path,
    delete_after,
    is_sharded,
    link_checkpoint,
    load_checkpoint,
    save_checkpoint,
)
from trainer.checkpoint_names import FOLDER, latest_checkpoint
from trainer.config import RunConfig
from trainer.curves import CurveWriter
from trainer.folders import inside_root
from trainer.guard import SpikeGuard
from trainer.optim import averaged_weights, train_mode
from trainer.state import FORMAT, TrainState, format_of


class Checkpointer:
    """The checkpoints of one run: `state` written and read in `cfg`'s layout, by every process of `run`."""

    def __init__(self, cfg: RunConfig, run: rt.Runtime, state: TrainState, optimizer: torch.optim.Optimizer,
                 guard: SpikeGuard | None, total_steps: int):
        self.cfg, self.run, self.state, self.optimizer, self.guard = cfg, run, state, optimizer, guard
        self.total_steps = total_steps
        self.folder = cfg.run_dir() / FOLDER
        self.curves: CurveWriter | None = None  # rank 0's, once opened: flushed before each checkpoint

    def resume(self) -> None:
        """Load the run's newest checkpoint (a regular one or the guard's ring) into every registered part."""
        latest = latest_checkpoint(self.folder, *([self.guard.ring_dir] if self.guard is not None else []))
        if latest is None:
            return
        self.check_same_optimizer()
        state = self.load(latest)
        if format_of(state) != FORMAT:
            raise CheckpointError(f"output.run: {latest} is in checkpoint format {format_of(state)}, this mup-sweep "
                                  f"resumes format {FORMAT}; finish the run with the version that started it, "
                                  "or set another output.run")
        try:
            self.state.load_state_dict(state)
            train_mode(self.optimizer)  # written with Schedule-Free's averaged weights in place
        except (RuntimeError, KeyError, ValueError, TypeError) as err:  # shapes, keys or groups of another model
            found = " ".join(str(err).split())[:200]
            raise CheckpointError(f"output.run: {latest} is a checkpoint of another model or run ({found}); "
                                  f"resume only the run that wrote it, or set another output.run") from None

    def check_same_optimizer(self) -> None:
        """The run's optimizer state resumes only into the optimizer that wrote it (the config the run was started
        with is beside it): Lion would load AdamW's moments and groups without a word."""
        started = self.cfg.run_dir() / "config.yaml"
        if started.is_file():
            inside_root(started, Path(self.cfg.output.root), "output.run")  # not through a link out of the root
        before = RunConfig.load(started).optimizer.name if started.is_file() else self.cfg.optimizer.name
        if before != self.cfg.optimizer.name:
            raise CheckpointError(f"optimizer.name: the run {self.cfg.run_id()} was started with {before}; resume it "
                                  f"with {before}, or set another output.run for {self.cfg.optimizer.name}")

    def load(self, path: Path) -> dict:
        """A checkpoint of this run (resume, rewind), in the layout `parallel.kind` writes, read only inside the
        results root."""
        check_in_root(path, Path(self.cfg.output.root))
        if is_sharded(path) != self.cfg.sharded():
            written = "sharded (parallel.kind fsdp)" if is_sharded(path) else "unsharded (parallel.kind ddp)"
            raise CheckpointError(f"parallel.kind: {path} was written {written}; resume it with the kind that wrote "
                                  "it, or set another output.run")
        if not is_sharded(path):
            return load_checkpoint(path)
        parts = self.state.parts
        from trainer.checkpoint_sharded import load_sharded  # only a sharded run imports DCP

        return load_sharded(path, {n: getattr(p, "sharded_state_dict", p.state_dict) for n, p in parts.items()})

    def maybe_save(self, step: int) -> None:
        """The checkpoints due after `step`: the regular one and the guard's ring (every step, not only logged
        ones; at a step of both, the ring's is the regular one's by hard links). The last step's is the loop's
        `save(force=True)`."""
        if step >= self.total_steps:
            return
        regular = self.save(step)
        if self.guard is not None and self.guard.ring_due(step):
            self.save_ring(linked=regular)

    def save(self, step: int, force: bool = False) -> bool:
        """The regular checkpoint of `step` when it is due (`checkpoint.every`), or whenever `force`d (the run's
        end, a preemption); whether one was written."""
        if not (force or (self.cfg.checkpoint.every and step % self.cfg.checkpoint.every == 0)):
            return False
        self.write(self.folder, self.cfg.checkpoint.keep)
        return True

    def save_ring(self, linked: bool = False) -> None:
        """The guard's ring checkpoint of this step; `linked`: the regular checkpoint of this step, just written,
        becomes the ring's too by hard links (the state is serialised once)."""
        if not linked:
            self.write(self.guard.ring_dir, self.guard.cfg.ring_size)
            return
        if self.curves is not None:
            regular = checkpoint_path(self.folder, self.state.step)  # a folder when sharded
            link_checkpoint(regular.with_suffix("") if self.cfg.sharded() else regular, self.guard.ring_dir,
                            self.guard.cfg.ring_size)
        rt.barrier(self.run)

    def write(self, folder: Path, keep: int) -> None:
        """Rank 0 writes the TrainState (curves first: on disk they never lag the checkpoint); every rank waits.
        Sharded, every rank writes its shards and rank 0 the rest. Every rank switches to the averaged weights
        (Schedule-Free) and back, so the ranks keep the same bits."""
        with averaged_weights(self.optimizer):
            if self.curves is not None:
                self.curves.flush()
            if self.cfg.sharded():
                from trainer.checkpoint_sharded import save_sharded

                save_sharded(folder, self.state.step, self.state.state_dict(), keep, self.run.main)
                return
            if self.curves is not None:
                save_checkpoint(folder, self.state.step, self.state.state_dict(), keep)
        rt.barrier(self.run)

    def rewind(self, target: Path) -> None:
        """Back to the guard's ring checkpoint `target`: every part loads it as `TrainState.rewind` says; the curve
        rows and the checkpoints of the abandoned branch go, and the rewound state (skipped batches and all) is
        written as the ring's newest."""
        self.state.rewind(self.load(target))
        rt.barrier(self.run)  # every rank has read the ring checkpoint before rank 0 rewrites it below
        train_mode(self.optimizer)
        step = self.state.step
        if self.curves is not None:
            self.curves.truncate_after(step)
            delete_after(self.folder, step - 1)
            delete_after(self.guard.ring_dir, step)
        self.save_ring()
