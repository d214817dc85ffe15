"""A folder a run or a command will write, checked before anything is written; the root every read and write stays in.

The folder, or its nearest parent that exists (where it will be made), must be a writable folder: a read-only
mount, a folder without write permission, a file, FIFO or device in the way, or a path past the file system's
length limits is one line naming the field.
"""
from __future__ import annotations

import os
from pathlib import Path

from trainer.config import ConfigError

NAME_MAX, PATH_MAX = 255, 4095  # bytes in one path component and in a whole path (Linux's limits, and most others')


def check_path_length(path: Path, field: str, room: int = 0) -> None:
    """A ConfigError naming `field` for a path the file system would refuse with ENAMETOOLONG (`room`: bytes kept
    for what will be written below it)."""
    encoded = os.fsencode(Path(path).absolute())
    longest = max((len(part) for part in encoded.split(b"/")), default=0)
    if longest > NAME_MAX or len(encoded) + room > PATH_MAX:
        raise ConfigError(f"{field}: a path of at most {PATH_MAX - room} bytes with names of at most {NAME_MAX} "
                          f"bytes (got {len(encoded)} bytes, a name of {longest})")


def check_writable(folder: Path, field: str) -> None:
    """`folder`, or the nearest parent that exists, is a writable folder; else a ConfigError naming `field`."""
    check_path_length(folder, field)
    folder = folder.absolute()
    existing = next(p for p in [folder, *folder.parents] if p.exists())
    if not existing.is_dir():
        raise ConfigError(f"{field}: cannot write {folder} ({existing} is a file, not a folder)")
    if not os.access(existing, os.W_OK):
        read_only = os.statvfs(existing).f_flag & os.ST_RDONLY
        why = "is on a read-only file system" if read_only else "has no write permission"
        raise ConfigError(f"{field}: cannot write {folder} ({existing} {why})")


def inside_root(path: Path, root: Path, field: str) -> Path:
    """`path` resolved (symlinks followed), refused (a ConfigError naming `field`) unless it stays inside the resolved
    `root`; a link loop is refused too. The one root rule: every file a command or a run reads or writes under the
    results root passes it, so a link planted there never leads a read or a write out of it."""
    try:
        resolved, top = path.resolve(), root.resolve()
    except (OSError, RuntimeError) as err:  # RuntimeError: Python's own "Symlink loop from …"
        raise ConfigError(f"{field}: {path} cannot be resolved ({type(err).__name__}: a symlink loop?); refused") \
            from None
    if resolved != top and top not in resolved.parents:
        raise ConfigError(f"{field}: {path} leads out of the results root {top} (to {resolved}); refused")
    return resolved
