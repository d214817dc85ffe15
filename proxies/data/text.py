"""Byte-level text: a file or a folder of files, or the standard library's own sources."""

import hashlib
import os
import sys
import sysconfig
from pathlib import Path

import numpy as np

from proxies.data.base import DataError
from proxies.data.tokens import TokenData, split_stream
from proxies.resources import check_fits

STDLIB_SKIP = {"site-packages", "dist-packages", "test", "tests", "idle_test"}


def text_files(folder: Path) -> list[Path]:
    """All regular files under folder, recursively, in sorted relative-path order, skipping
    every file or folder whose name starts with '.' (symlinked folders are not followed)."""
    found = []
    for parent, dirs, names in os.walk(folder):
        dirs[:] = [d for d in dirs if not d.startswith(".")]
        found += [Path(parent, n) for n in names if not n.startswith(".") and Path(parent, n).is_file()]
    return sorted(found, key=lambda p: p.relative_to(folder).as_posix())


def stdlib_files() -> tuple[Path, list[Path]]:
    """The running interpreter's standard library root and its .py sources in sorted
    relative-path order, without site-packages, dist-packages and test folders."""
    root = Path(sysconfig.get_paths()["stdlib"])
    found = []
    for parent, dirs, names in os.walk(root):
        dirs[:] = [d for d in dirs if d not in STDLIB_SKIP]
        found += [Path(parent, n) for n in names if n.endswith(".py")]
    return root, sorted(found, key=lambda p: p.relative_to(root).as_posix())


def byte_data(kind: str, data: bytes, seq_len: int, val_fraction: float, provenance: dict) -> TokenData:
    """TokenData over bytes (vocab 256), split train/val by val_fraction, with the sha256 of
    the bytes added to provenance."""
    stream = np.frombuffer(data, dtype=np.uint8)
    train, val = split_stream(stream, val_fraction, seq_len)
    provenance = {"kind": kind, **provenance, "sha256": hashlib.sha256(data).hexdigest(), "dtype": "uint8"}
    return TokenData(kind, train, val, seq_len, 256, provenance)


def open_text(path: Path, seq_len: int, val_fraction: float) -> TokenData:
    """The bytes of a file, or of all files under a folder concatenated, as tokens (vocab 256).

    The bytes are read into memory; for big corpora tokenize them into a .bin ("tokens").
    """
    files = text_files(path) if path.is_dir() else [path]
    check_fits(sum(f.stat().st_size for f in files), f"the text corpus at {path}, read into memory", "data.path")
    data = b"".join(f.read_bytes() for f in files)
    if not data:
        raise DataError(f"data.path: {path} is empty" if path.is_file()
                        else f"data.path: {path} has no non-empty files")
    return byte_data("text", data, seq_len, val_fraction, {"path": str(path), "n_files": len(files)})


def open_stdlib(seq_len: int, val_fraction: float) -> TokenData:
    """The built-in corpus: this interpreter's standard library .py sources as bytes (vocab 256).

    Needs no download and caches nothing; provenance records the file count, the Python version
    and the sha256 of the concatenated bytes, since the corpus differs between Python versions.
    """
    root, files = stdlib_files()
    data = b"".join(f.read_bytes() for f in files)
    provenance = {"path": str(root), "n_files": len(files), "python": sys.version.split()[0]}
    return byte_data("stdlib", data, seq_len, val_fraction, provenance)
