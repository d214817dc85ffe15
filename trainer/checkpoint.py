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


def list_checkpoints(folder: Path) -> list[Path]:
    """Checkpoints in `folder`, oldest first."""
    if not folder.is_dir():
        return []
    return sorted(p for p in folder.iterdir() if NAME.match(p.name))


def save_checkpoint(folder: Path, step: int, state: dict, keep: int) -> Path:
    """Write `state` as step-NNNNNNNNN.pt atomically, then delete all but the newest `keep`."""
    path = checkpoint_path(folder, step)
    with atomic_path(path) as tmp:
        torch.save(state, tmp)
    for old in list_checkpoints(folder)[:-keep]:
        old.unlink(missing_ok=True)
    return path


def load_latest(folder: Path, map_location: str | torch.device = "cpu") -> dict | None:
    """The newest checkpoint's state, or None when there is none."""
    found = list_checkpoints(folder)
    if not found:
        return None
    return torch.load(found[-1], map_location=map_location, weights_only=True)
