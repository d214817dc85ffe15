"""TokenData: a train and a val token array served as nanoGPT-style random windows."""

import numpy as np
import torch

from proxies.data.base import DataError, check_split


def split_stream(arr: np.ndarray, val_fraction: float, seq_len: int) -> tuple[np.ndarray, np.ndarray]:
    """Split one token stream into (train, val): val is the last val_fraction of it, train the rest.

    Both are views (slices of a memmap stay memmaps). Raises DataError unless each split holds
    at least seq_len + 1 tokens, the least that one window of inputs and targets needs.
    """
    n_val = int(len(arr) * val_fraction)
    n_train = len(arr) - n_val
    if min(n_train, n_val) < seq_len + 1:
        raise DataError(
            f"data.seq_len: {seq_len} needs at least {seq_len + 1} tokens in each split, but "
            f"{len(arr)} tokens with data.val_fraction {val_fraction} give train {n_train}, val {n_val}"
        )
    return arr[:n_train], arr[n_train:]


class TokenData:
    """Token sequences for language models: batches are random windows of seq_len tokens.

    train and val are 1-D integer arrays (numpy arrays or memmaps); provenance is recorded as
    given, with n_train, n_val, vocab_size and seq_len added.
    """

    def __init__(self, kind: str, train: np.ndarray, val: np.ndarray, seq_len: int, vocab_size: int, provenance: dict):
        for name, arr in (("train", train), ("val", val)):
            if len(arr) < seq_len + 1:
                raise DataError(f"data.seq_len: {seq_len} needs at least {seq_len + 1} tokens in {name}, "
                                f"which has {len(arr)}")
        self.kind = kind
        self.splits = {"train": train, "val": val}
        self.seq_len = seq_len
        self.vocab_size = vocab_size
        self.tokens_per_example = seq_len
        self.provenance = {**provenance, "n_train": len(train), "n_val": len(val), "vocab_size": vocab_size,
                           "seq_len": seq_len}

    def batch(self, split: str, batch_size: int, generator: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
        """Return (x, y), int64 of shape (batch_size, seq_len), y being x shifted one token on.

        Window starts are drawn uniformly with `generator`, so the batches are a pure function
        of its state; the windows are gathered with one fancy index (reads only those pages of a memmap).
        """
        check_split(split)
        arr = self.splits[split]
        starts = torch.randint(len(arr) - self.seq_len, (batch_size,), generator=generator).numpy()
        windows = arr[starts[:, None] + np.arange(self.seq_len + 1)].astype(np.int64)
        x = torch.from_numpy(np.ascontiguousarray(windows[:, :-1]))
        y = torch.from_numpy(np.ascontiguousarray(windows[:, 1:]))
        return x, y

    def model_options(self) -> dict:
        """The builder options this data implies: vocab_size and block_size."""
        return {"vocab_size": self.vocab_size, "block_size": self.seq_len}
