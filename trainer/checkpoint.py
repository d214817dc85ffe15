"""Checkpoints: whole-state snapshots written atomically, the last K kept, loaded with weights_only=True.

A checkpoint holds what is needed to continue the same loss curve bit for bit: model, optimizer,
scheduler and grad-scaler states, the torch RNG states, the data generator's state (the data
position) and the loop's counters. μP base shapes are not in it: the model is rebuilt by its
builder (which sets them once) and the state dict is loaded on top, so nothing is rescaled twice.

Loading unpickles tensors and plain containers only (`weights_only=True`): a file whose unpickling would
import or call anything, a damaged file, or one not written by torch.save is a CheckpointError naming it,
and nothing in it runs.

Sharded (`parallel.kind: fsdp`): a checkpoint is a folder `step-NNNNNNNNN/` (trainer/checkpoint_sharded.py).

A checkpoint is read only where its run's results root holds it once links are resolved (`inside_root`): a
checkpoint, a sharded folder or a file in one linked out of the root is refused, never loaded.
"""
from __future__ import annotations

import os
import pickle
import re
import shutil
from pathlib import Path

import torch

from trainer.atomic import atomic_path
from trainer.checkpoint_names import checkpoint_path, list_checkpoints, step_of
from trainer.config import ConfigError
from trainer.folders import inside_root


class CheckpointError(ConfigError):
    """A checkpoint a run cannot resume from; str() is one line naming the file."""


def save_checkpoint(folder: Path, step: int, state: dict, keep: int) -> Path:
    """Write `state` as step-NNNNNNNNN.pt atomically, then delete all but the newest `keep`."""
    path = checkpoint_path(folder, step)
    with atomic_path(path) as tmp, open(tmp, "wb") as file:  # a file object: torch keeps the OSError of a failed write
        torch.save(state, file)
    prune(folder, keep)
    return path


def link_checkpoint(source: Path, folder: Path, keep: int) -> Path:
    """`source` (a checkpoint file or folder) as `folder`'s checkpoint of the same step, by hard links: a state
    serialised once serves two folders (the spike guard's ring and the regular checkpoints at a shared step). Files
    are never changed in place (a rewrite renames a new file over the name), so the two stay independent."""
    target = folder / source.name
    partial = folder / f".{source.name}.partial"
    folder.mkdir(parents=True, exist_ok=True)
    remove(partial)
    if source.is_dir():
        shutil.copytree(source, partial, copy_function=os.link)
    else:
        os.link(source, partial)
    remove(target)
    os.replace(partial, target)
    prune(folder, keep)
    return target


def prune(folder: Path, keep: int) -> None:
    for old in list_checkpoints(folder)[:-keep]:
        remove(old)


def remove(path: Path) -> None:
    if path.is_dir():
        shutil.rmtree(path, ignore_errors=True)
    else:
        path.unlink(missing_ok=True)


def load_checkpoint(path: Path, map_location: str | torch.device = "cpu") -> dict:
    try:
        return torch.load(path, map_location=map_location, weights_only=True)
    except (pickle.UnpicklingError, RuntimeError, EOFError) as err:
        raise CheckpointError(f"checkpoint: {path} is refused: not loadable with weights_only=True ({reason(err)}); "
                              "only this trainer's checkpoints are resumed: move it away or set another output.run"
                              ) from None


def reason(err: Exception) -> str:
    """What torch said, on one line: the weights-only unpickler's finding (what it would not load) when it gave one."""
    failures = getattr(err, "failures", None)  # DCP's CheckpointException: each rank's own error
    if isinstance(failures, dict) and failures:
        err = next(iter(failures.values()))
    text = str(err)
    found = re.search(r"(?:Trying to load )?[Uu]nsupported [^\n\\]+", text)
    lines = [line for line in text.splitlines() if line.strip()]
    return " ".join((found.group(0) if found else lines[0] if lines else type(err).__name__).split())[:200]


def delete_after(folder: Path, step: int) -> None:
    """Delete the checkpoints in `folder` past `step` (a branch of the run that was abandoned)."""
    for path in list_checkpoints(folder):
        if step_of(path) > step:
            remove(path)


def check_in_root(path: Path, root: Path) -> None:
    """A checkpoint is read only when it, and every file of a sharded one, stays inside the results root once links
    are resolved, and is a regular file or folder: a checkpoint linked out of the root (or a folder, or a file in it)
    or a FIFO in its place (a read that never returns) is refused before it is read."""
    for part in [path, *(sorted(path.iterdir()) if path.is_dir() and not path.is_symlink() else [])]:
        try:
            resolved = inside_root(part, root, "checkpoint")
        except ConfigError as err:
            raise CheckpointError(str(err)) from None
        if resolved.exists() and not (resolved.is_file() or resolved.is_dir()):  # a FIFO would hang the read
            raise CheckpointError(f"checkpoint: {part} is refused: not a regular file or folder (a FIFO, a device)")


def is_sharded(path: Path) -> bool:
    return path.is_dir()
