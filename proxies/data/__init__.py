"""Data sources for the proxies: byte text, nanoGPT token files, the built-in stdlib corpus
and synthetic data. `open_data` is the one entry point; it raises DataError on bad input."""

import os
import stat
from pathlib import Path

from proxies.data.base import DataError, DataSource
from proxies.data.bins import DTYPES, open_tokens
from proxies.data.markov import open_markov
from proxies.data.synthetic import SyntheticImages, SyntheticVectors
from proxies.data.text import open_stdlib, open_text
from proxies.data.tokens import TokenData

__all__ = ["open_data", "DataError", "DataSource", "TokenData", "SyntheticVectors", "SyntheticImages", "KINDS"]

# the fields each kind takes besides seq_len, val_fraction, seed and dtype (which every kind accepts)
KINDS = {
    "text": ("path",),
    "tokens": ("path", "vocab_size"),
    "stdlib": (),
    "synthetic-tokens": ("vocab_size", "n_tokens"),
    "synthetic-vectors": ("in_features", "classes"),
    "synthetic-images": ("channels", "size", "classes"),
}


def positive_int(name: str, value) -> int:
    """value if it is an int >= 1, else a DataError naming data.<name>."""
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise DataError(f"data.{name}: must be a positive integer, not {value!r}")
    return value


def existing_path(path: str | None, kind: str) -> Path:
    """path made absolute with symlinks resolved, or a DataError if it is missing, does not exist, or is not a
    regular file or a folder: a FIFO, `/dev/zero` or a symlink loop is refused before it is opened (reading it
    would block, never end, or fail deep inside). A folder's own entries are filtered by its kind's reader."""
    if path is None:
        raise DataError(f"data.path: needed for kind '{kind}'")
    given = Path(path).expanduser()
    try:
        resolved = Path(os.path.realpath(given, strict=True))
        mode = resolved.stat().st_mode
    except FileNotFoundError:
        raise DataError(f"data.path: {given.absolute()} does not exist") from None
    except OSError as err:  # a symlink loop (ELOOP), a path through a file (ENOTDIR), no permission
        raise DataError(f"data.path: {given} cannot be opened ({err.strerror})") from None
    if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
        raise DataError(f"data.path: {given} is not a regular file or a folder (a FIFO, socket or device)")
    return resolved


def open_data(kind: str, *, path: str | None = None, seq_len: int = 128, dtype: str | None = None,
              vocab_size: int | None = None, val_fraction: float = 0.1, seed: int = 0, **options) -> DataSource:
    """Open a data source of the given kind; details are in the module of each kind.

    text: the bytes of a file, or of all files under a folder (sorted, hidden ones skipped).
    tokens: a .bin of uint16/uint32 ids, or a folder with train.bin and val.bin; vocab_size and
        dtype may come from meta.json beside them (dtype: the argument, else meta.json, else uint16).
    stdlib: this interpreter's standard library sources, as bytes; needs no download.
    synthetic-tokens: a random Markov chain over vocab_size (64) tokens, n_tokens (200_000) long.
    synthetic-vectors / synthetic-images: classification by a random teacher (see synthetic.py).
    Single streams are split with the last val_fraction as val. seed only drives synthetic data.
    """
    if kind not in KINDS:
        raise DataError(f"data.kind: {kind!r} is not one of {', '.join(KINDS)}")
    given = {"path": path, "vocab_size": vocab_size, **options}
    for name, value in given.items():
        if value is not None and name not in KINDS[kind]:
            takes = ", ".join(KINDS[kind]) or "none"
            raise DataError(f"data.{name}: not used by kind '{kind}' (its own fields: {takes})")
    positive_int("seq_len", seq_len)
    if not 0 < val_fraction < 1:
        raise DataError(f"data.val_fraction: must be between 0 and 1 (exclusive), not {val_fraction!r}")
    if dtype is not None and dtype not in DTYPES:
        raise DataError(f"data.dtype: {dtype!r} is not one of {', '.join(DTYPES)}")
    if vocab_size is not None:
        positive_int("vocab_size", vocab_size)

    if kind == "text":
        return open_text(existing_path(path, kind), seq_len, val_fraction)
    if kind == "tokens":
        return open_tokens(existing_path(path, kind), dtype, vocab_size, seq_len, val_fraction)
    if kind == "stdlib":
        return open_stdlib(seq_len, val_fraction)
    sizes = {name: positive_int(name, value) for name, value in options.items() if value is not None}
    if kind == "synthetic-tokens":
        return open_markov(vocab_size or 64, sizes.get("n_tokens", 200_000), seed, seq_len, val_fraction)
    if kind == "synthetic-vectors":
        return SyntheticVectors(seed=seed, **sizes)
    return SyntheticImages(seed=seed, **sizes)
