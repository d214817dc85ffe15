"""A folder a run or a command will write, checked before anything is written.

The folder, or its nearest parent that exists (where it will be made), must be a writable folder: a read-only
mount, a folder without write permission, or a file, FIFO or device in the way is one line naming the field.
"""
from __future__ import annotations

import os
from pathlib import Path

from trainer.config import ConfigError


def check_writable(folder: Path, field: str) -> None:
    """`folder`, or the nearest parent that exists, is a writable folder; else a ConfigError naming `field`."""
    folder = folder.absolute()
    existing = next(p for p in [folder, *folder.parents] if p.exists())
    if not existing.is_dir():
        raise ConfigError(f"{field}: cannot write {folder} ({existing} is a file, not a folder)")
    if not os.access(existing, os.W_OK):
        read_only = os.statvfs(existing).f_flag & os.ST_RDONLY
        why = "is on a read-only file system" if read_only else "has no write permission"
        raise ConfigError(f"{field}: cannot write {folder} ({existing} {why})")
