"""What every data source is, and the one error bad data input raises."""

from typing import Protocol

import torch


class DataError(ValueError):
    """Bad data input. str(err) is one line that names the field (prefixed 'data.', as in a
    run config's `data:` section) and what is allowed, e.g. 'data.path: /x/y does not exist'."""

    def __init__(self, message: str):
        super().__init__(" ".join(message.split()))


class DataSource(Protocol):
    """A source of (x, y) batches for the trainer; see `open_data` for the kinds."""

    kind: str
    provenance: dict
    tokens_per_example: int

    def batch(self, split: str, batch_size: int, generator: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
        ...

    def model_options(self) -> dict:
        ...


def check_split(split: str) -> None:
    """Raise unless split is "train" or "val"."""
    if split not in ("train", "val"):
        raise ValueError(f"split must be 'train' or 'val', not {split!r}")
