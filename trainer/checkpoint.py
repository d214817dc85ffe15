"""Checkpoints: whole-state snapshots written atomically, the last K kept, loaded with weights_only=True.

A checkpoint holds what is needed to continue the same loss curve bit for bit: model, optimizer,
scheduler and grad-scaler states, the torch RNG states, the data generator's state (the data
position) and the loop's counters. μP base shapes are not in it: the model is rebuilt by its
builder (which sets them once) and the state dict is loaded on top, so nothing is rescaled twice.

Loading unpickles tensors and plain containers only (`weights_only=True`): a file whose unpickling would
import or call anything, a damaged file, or one not written by torch.save is a CheckpointError naming it,
and nothing in it runs.
"""
from __future__ import annotations

import pickle
import re
from pathlib import Path

import torch

from trainer.atomic import atomic_path
from trainer.config import ConfigError

NAME = re.compile(r"^step-(\d{9})\.pt$")


class CheckpointError(ConfigError):
    """A checkpoint a run cannot resume from; str() is one line naming the file."""


def checkpoint_path(folder: Path, step: int) -> Path:
    return folder / f"step-{step:09d}.pt"


def step_of(path: Path) -> int:
    return int(NAME.match(path.name).group(1))


def list_checkpoints(folder: Path) -> list[Path]:
    """Checkpoints in `folder`, oldest first."""
    if not folder.is_dir():
        return []
    return sorted(p for p in folder.iterdir() if NAME.match(p.name))


def save_checkpoint(folder: Path, step: int, state: dict, keep: int) -> Path:
    """Write `state` as step-NNNNNNNNN.pt atomically, then delete all but the newest `keep`."""
    path = checkpoint_path(folder, step)
    with atomic_path(path) as tmp, open(tmp, "wb") as file:  # a file object: torch keeps the OSError of a failed write
        torch.save(state, file)
    for old in list_checkpoints(folder)[:-keep]:
        old.unlink(missing_ok=True)
    return path


def load_checkpoint(path: Path, map_location: str | torch.device = "cpu") -> dict:
    try:
        return torch.load(path, map_location=map_location, weights_only=True)
    except (pickle.UnpicklingError, RuntimeError, EOFError) as err:
        raise CheckpointError(f"checkpoint: {path} is refused: not loadable with weights_only=True ({reason(err)}); "
                              "only this trainer's checkpoints are resumed: move it away or set another output.run"
                              ) from None


def reason(err: Exception) -> str:
    """What torch said, on one line: the weights-only unpickler's finding (what it would not load) when it gave one."""
    text = str(err)
    found = re.search(r"(?:Trying to load )?[Uu]nsupported [^\n]+", text)
    lines = [line for line in text.splitlines() if line.strip()]
    return " ".join((found.group(0) if found else lines[0] if lines else type(err).__name__).split())[:200]


def latest_checkpoint(*folders: Path) -> Path | None:
    """The newest checkpoint (highest step) across `folders`, or None when there is none."""
    found = [p for folder in folders for p in list_checkpoints(folder)]
    return max(found, key=step_of) if found else None


def delete_after(folder: Path, step: int) -> None:
    """Delete the checkpoints in `folder` past `step` (a branch of the run that was abandoned)."""
    for path in list_checkpoints(folder):
        if step_of(path) > step:
            path.unlink(missing_ok=True)
