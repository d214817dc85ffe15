"""Where results go, and whether they can be written there: what every command shares."""
from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from sweep.errors import InputError

if TYPE_CHECKING:
    from trainer.config import RunConfig


def results_root(root: str | None = None) -> Path:
    """Where studies' results go: the given root, else $SWEEP_ROOT, else ./studies."""
    return Path(root or os.environ.get("SWEEP_ROOT") or "studies")


def check_writable(folder: Path, field: str) -> None:
    """`folder`, or the nearest parent that exists (where it will be made), must be writable: a read-only
    mount or a folder without write permission is found here, before anything is written."""
    folder = folder.absolute()
    existing = next(p for p in [folder, *folder.parents] if p.exists())
    if not os.access(existing, os.W_OK):
        read_only = os.statvfs(existing).f_flag & os.ST_RDONLY
        why = "is on a read-only file system" if read_only else "has no write permission"
        raise InputError(f"{field}: cannot write {folder} ({existing} {why})")


def curve_folder(cfg: RunConfig) -> Path:
    """A run's partition of the curve store: CURVES/study=S/kind=K/run=ID."""
    return cfg.curves_root() / f"study={cfg.output.study}" / f"kind={cfg.output.kind}" / f"run={cfg.run_id()}"
