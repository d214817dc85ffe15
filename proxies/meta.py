"""Models built for their shapes only: on the meta device (no memory), with initialisation skipped.

A meta tensor has no values, so initialising one changes nothing; but torch runs `normal_` on the meta device
through its Python reference kernels, whose first call imports TorchDynamo (about a second, in every process that
sizes a model: each CLI call, each sweep worker). Here `torch.nn.init`'s functions and `Tensor.normal_` return a
meta tensor as it is, so that import is never paid for an init whose result is nothing.
"""
from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import torch
from torch.overrides import TorchFunctionMode


class SkipMetaInit(TorchFunctionMode):
    """An initialiser (a `torch.nn.init` function, `Tensor.normal_`) given a meta tensor returns it unchanged."""

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        target = args[0] if args else kwargs.get("tensor")  # torch.nn.init passes its tensor by name
        initialiser = func is torch.Tensor.normal_ or getattr(func, "__module__", None) == "torch.nn.init"
        if initialiser and isinstance(target, torch.Tensor) and target.is_meta:
            return target
        return func(*args, **kwargs)


@contextmanager
def shapes_only() -> Iterator[None]:
    """Build models whose shapes, parameter counts and FLOPs are all that is read: on the meta device, no init."""
    with torch.device("meta"), SkipMetaInit():
        yield
