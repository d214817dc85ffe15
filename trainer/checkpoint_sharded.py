"""Sharded checkpoints (`parallel.kind: fsdp`): a folder `step-NNNNNNNNN/` written with `torch.distributed.checkpoint`
(DCP) by every process, each its shards of the parts that hold DTensors (model, optimizer), beside `train_state.pt`
(rank 0: every other part, as in trainer/checkpoint.py). DCP stores each tensor with its global shape, so a run
resumes into any number of processes. The folder is written under a hidden name and renamed when complete; DCP's
index (`.metadata`, a pickle) is read by an unpickler that builds DCP's own records and nothing else, every file it
names is a file of the folder itself, and every entry of those files, tensors and bytes alike (DCP's own planner
unpickles bytes entries with `weights_only=False`), is loaded with `weights_only=True`.

Its own module because DCP and DTensor take about half a second to import: only a sharded run imports them.
"""
from __future__ import annotations

import io
import os
import pickle
import re
import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist
import torch.distributed.checkpoint as dcp
from torch.distributed.checkpoint import CheckpointException, DefaultLoadPlanner, FileSystemReader
from torch.distributed.checkpoint.metadata import Metadata, StorageMeta
from torch.distributed.tensor import DTensor

from trainer.atomic import atomic_path
from trainer.checkpoint import CheckpointError, load_checkpoint, prune, reason, remove

REST = "train_state.pt"  # the parts that are not sharded
FILE = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,254}")  # a file DCP's index may name: one in the folder itself


def holds_dtensor(value: Any) -> bool:
    if isinstance(value, DTensor):
        return True
    if isinstance(value, Mapping):
        return any(holds_dtensor(v) for v in value.values())
    return isinstance(value, (list, tuple)) and any(holds_dtensor(v) for v in value)


def save_sharded(folder: Path, step: int, state: dict, keep: int, main: bool) -> Path:
    """Every process: write `state` as the folder step-NNNNNNNNN/ (module doc), then keep the newest `keep`."""
    final = folder / f"step-{step:09d}"
    partial = folder / f".{final.name}.partial"  # a kill leaves it hidden; the next save starts it over
    sharded = {name: part for name, part in state.items() if holds_dtensor(part)}
    rest = {**{name: part for name, part in state.items() if name not in sharded}, "sharded": sorted(sharded)}
    if main:
        shutil.rmtree(partial, ignore_errors=True)
        folder.mkdir(parents=True, exist_ok=True)
    dist.barrier()
    dcp.save(sharded, checkpoint_id=partial)  # collective: returns when every process wrote its files
    if main:
        with atomic_path(partial / REST) as tmp, open(tmp, "wb") as file:
            torch.save(rest, file)
        remove(final)  # a rewind rewrites the ring checkpoint it went back to
        os.replace(partial, final)
        prune(folder, keep)
    dist.barrier()
    return final


def load_sharded(path: Path, templates: Mapping[str, Any]) -> dict:
    """A sharded checkpoint's state: its rank-0 parts, and its sharded parts read into `templates[name]()` (the
    live part's state dict, whose DTensors say which shards this process holds)."""
    rest = load_checkpoint(path / REST)
    names = rest.get("sharded") if isinstance(rest, dict) else None
    if not isinstance(names, list) or not all(isinstance(n, str) and n in templates for n in names):
        raise CheckpointError(f"checkpoint: {path / REST} is refused: it names no sharded parts of this run (a list "
                              f"of {', '.join(sorted(templates))}); only this trainer's checkpoints are resumed")
    rest = {name: part for name, part in rest.items() if name != "sharded"}
    sharded = {name: templates[name]() for name in names}
    try:
        SafeReader(path).read_metadata()  # the index is checked here, not inside DCP (which logs a traceback)
        dcp.load(sharded, storage_reader=SafeReader(path), planner=SafePlanner())
    except (CheckpointException, pickle.UnpicklingError, RuntimeError, EOFError, OSError, KeyError, TypeError,
            ValueError, AttributeError) as err:  # an index's allowed records built from wrong arguments included
        raise CheckpointError(f"checkpoint: {path} is refused: its sharded parts do not load ({reason(err)}); "
                              "only this trainer's checkpoints are resumed: move it away or set another output.run"
                              ) from None
    return {**rest, **sharded}


class SafeReader(FileSystemReader):
    """DCP's file reader, its index unpickled by `DcpUnpickler` instead of `pickle.load`."""

    def read_metadata(self, *args: Any, **kwargs: Any) -> Metadata:
        with open(Path(self.path) / ".metadata", "rb") as file:
            metadata = DcpUnpickler(file).load()
        if not isinstance(metadata, Metadata):
            raise pickle.UnpicklingError(f"the index holds a {type(metadata).__name__}, not DCP metadata")
        for info in (metadata.storage_data or {}).values():
            named = getattr(info, "relative_path", None)
            if not isinstance(named, str) or not FILE.fullmatch(named):
                raise pickle.UnpicklingError(f"the index names the file {named!r}; a checkpoint's entries are files "
                                             "of its own folder")
        if getattr(metadata, "storage_meta", None) is None:
            metadata.storage_meta = StorageMeta()
        metadata.storage_meta.load_id = self.load_id
        return metadata


class SafePlanner(DefaultLoadPlanner):
    """DCP's planner, its bytes entries (the optimizer's param_groups: numbers, strings, tuples) unpickled with
    `weights_only=True`; DCP's own `load_bytes` would run any pickle an index points it at."""

    def load_bytes(self, read_item: Any, value: io.BytesIO) -> None:
        plain = torch.load(value, weights_only=True)  # refuses any global beyond tensors and plain containers
        again = io.BytesIO()
        torch.save(plain, again)  # what DCP's loader then reads back holds nothing but what was admitted above
        again.seek(0)
        super().load_bytes(read_item, again)


class DcpUnpickler(pickle.Unpickler):
    """Builds DCP's metadata records, torch sizes, dtypes and layouts, paths; any other global is refused."""

    ALLOWED = {("torch", "Size"), ("pathlib", "PosixPath"), ("torch.serialization", "_get_layout"),
               ("torch.distributed.checkpoint.filesystem", "_StorageInfo")} | {
        ("torch.distributed.checkpoint.metadata", n) for n in
        ("Metadata", "MetadataIndex", "StorageMeta", "TensorProperties", "TensorStorageMetadata",
         "ChunkStorageMetadata", "BytesStorageMetadata", "_MEM_FORMAT_ENCODING")}

    def find_class(self, module: str, name: str) -> Any:
        is_dtype = module == "torch" and isinstance(getattr(torch, name, None), torch.dtype)
        if (module, name) in self.ALLOWED or is_dtype:
            return super().find_class(module, name)
        raise pickle.UnpicklingError(f"Unsupported global: {module}.{name} in a checkpoint index")
