"""nanoGPT-style token files: a flat .bin of uint16 or uint32 ids, memory-mapped."""

import json
from pathlib import Path

import numpy as np

from proxies.data.base import DataError
from proxies.data.tokens import TokenData, split_stream

DTYPES = ("uint16", "uint32")
CHECKED_TOKENS = 1 << 20  # how many leading tokens of each split are checked against vocab_size


def read_meta(folder: Path) -> dict:
    """The contents of folder/meta.json, or {} if there is none."""
    meta_path = folder / "meta.json"
    if not meta_path.is_file():
        return {}
    try:
        meta = json.loads(meta_path.read_text())
    except (ValueError, UnicodeDecodeError, RecursionError) as err:
        raise DataError(f"data.path: {meta_path} is not valid JSON ({err})") from None
    if not isinstance(meta, dict):
        raise DataError(f'data.path: {meta_path} must hold an object like {{"vocab_size": N}}')
    return meta


def resolve_dtype(dtype: str | None, meta: dict, folder: Path) -> str:
    """The dtype to read: the argument, else meta.json's "dtype", else uint16.
    An argument that contradicts meta.json is an error, as it would silently garble the ids."""
    meta_dtype = meta.get("dtype")
    if meta_dtype is not None and meta_dtype not in DTYPES:
        raise DataError(f"data.dtype: {folder / 'meta.json'} says {meta_dtype!r}; allowed: uint16, uint32")
    if dtype is not None and meta_dtype is not None and dtype != meta_dtype:
        raise DataError(f"data.dtype: {dtype} contradicts {folder / 'meta.json'}, which says {meta_dtype}")
    return dtype or meta_dtype or "uint16"


def resolve_vocab_size(vocab_size: int | None, meta: dict, bin_path: Path) -> int:
    """The vocab size: the argument, else meta.json's "vocab_size", else a DataError."""
    if vocab_size is None:
        vocab_size = meta.get("vocab_size")
    if vocab_size is None:
        raise DataError(
            f'data.vocab_size: needed for {bin_path} '
            f'(give it, or put {{"vocab_size": N}} in {bin_path.parent / "meta.json"})'
        )
    if not isinstance(vocab_size, int) or isinstance(vocab_size, bool) or vocab_size < 1:
        raise DataError(f"data.vocab_size: must be a positive integer, not {vocab_size!r}")
    return vocab_size


def map_bin(path: Path, dtype: str) -> np.ndarray:
    """Memory-map a flat token file read-only, checking it is non-empty and whole items."""
    size = path.stat().st_size
    itemsize = np.dtype(dtype).itemsize
    if size == 0:
        raise DataError(f"data.path: {path} is empty")
    if size % itemsize:
        raise DataError(f"data.path: {path} has {size} bytes, not a multiple of {itemsize} ({dtype})")
    return np.memmap(path, dtype=dtype, mode="r")


def check_ids(arr: np.ndarray, vocab_size: int, path: Path) -> None:
    """Raise if a token id among the first CHECKED_TOKENS of arr is >= vocab_size.
    Only a prefix is checked so that opening a big file stays cheap."""
    top = int(arr[:CHECKED_TOKENS].max())
    if top >= vocab_size:
        raise DataError(f"data.vocab_size: {vocab_size} is too small for {path}, which holds token id {top}")


def open_tokens(path: Path, dtype: str | None, vocab_size: int | None, seq_len: int, val_fraction: float) -> TokenData:
    """Token ids from a .bin file split train/val by val_fraction, or from a folder holding
    train.bin and val.bin (the nanoGPT layout) used as the two splits.

    vocab_size and dtype may come from meta.json beside the .bin files. Files are memory-mapped,
    never read whole; only the first 2**20 ids of each split are checked against vocab_size.
    """
    folder = path if path.is_dir() else path.parent
    meta = read_meta(folder)
    dtype = resolve_dtype(dtype, meta, folder)
    if path.is_dir():
        files = [path / "train.bin", path / "val.bin"]
        if not all(f.is_file() for f in files):
            raise DataError(f"data.path: {path} is a folder without train.bin and val.bin; "
                            "give a .bin file or such a folder")
        train, val = (map_bin(f, dtype) for f in files)
    else:
        files = [path]
        train, val = split_stream(map_bin(path, dtype), val_fraction, seq_len)
    vocab_size = resolve_vocab_size(vocab_size, meta, files[0])
    check_ids(train, vocab_size, files[0])
    check_ids(val, vocab_size, files[-1])
    provenance = {"kind": "tokens", "path": str(path), "files": [str(f) for f in files], "dtype": dtype}
    return TokenData("tokens", train, val, seq_len, vocab_size, provenance)
