"""Where a run's checkpoints are and what they are named, read without torch (a light command such as `sweep status`
tells a run that can resume from one that cannot without importing it; trainer/checkpoint.py writes and loads them).

A checkpoint is `step-NNNNNNNNN.pt` (one process wrote it) or a folder `step-NNNNNNNNN/` (sharded), in the run's
`checkpoints/` folder or the spike guard's ring `guard-ring/` beside it; a run resumes from the newest of both.
"""
from __future__ import annotations

import re
from pathlib import Path

NAME = re.compile(r"^step-(\d{9})(\.pt)?$")  # a file (one process wrote it) or a folder (sharded)
FOLDER, RING = "checkpoints", "guard-ring"  # in the run's folder: its checkpoints, the spike guard's ring


def checkpoint_path(folder: Path, step: int) -> Path:
    return folder / f"step-{step:09d}.pt"


def step_of(path: Path) -> int:
    return int(NAME.match(path.name).group(1))


def list_checkpoints(folder: Path) -> list[Path]:
    """Checkpoints in `folder`, oldest first."""
    if not folder.is_dir():
        return []
    return sorted(p for p in folder.iterdir() if NAME.match(p.name))


def latest_checkpoint(*folders: Path) -> Path | None:
    """The newest checkpoint (highest step) across `folders`, or None when there is none."""
    found = [p for folder in folders for p in list_checkpoints(folder)]
    return max(found, key=step_of) if found else None
