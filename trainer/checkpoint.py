"""Checkpoints: whole-state snapshots written atomically, the last K kept, loaded with weights_only=True.

A checkpoint holds what is needed to continue the same loss curve bit for bit: model, optimizer,
scheduler and grad-scaler states, the torch RNG states, the data generator's state (the data
position) and the loop's counters. μP base shapes are not in it: the model is rebuilt by its
builder (which sets them once) and the state dict is loaded on top, so nothing is rescaled twice.
"""
from __future__ import annotations

import re
from pathlib import Path

import torch

from trainer.atomic import atomic_path

NAME = re.compile(r"^step-(\d{9})\.pt$")


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
    return torch.load(path, map_location=map_location, weights_only=True)


def load_latest(*folders: Path, map_location: str | torch.device = "cpu") -> dict | None:
    """The state of the newest checkpoint (highest step) across `folders`, or None when there is none."""
    found = [p for folder in folders for p in list_checkpoints(folder)]
    if not found:
        return None
    return load_checkpoint(max(found, key=step_of), map_location)


def delete_after(folder: Path, step: int) -> None:
    """Delete the checkpoints in `folder` past `step` (a branch of the run that was abandoned)."""
    for path in list_checkpoints(folder):
        if step_of(path) > step:
            path.unlink(missing_ok=True)
