"""Checkpoints: whole-state snapshots written atomically, the last K kept, loaded with weights_only=True.

A checkpoint holds what is needed to continue the same loss curve bit for bit: model, optimizer,
scheduler and grad-scaler states, the torch RNG states, the data generator's state (the data
position) and the loop's counters. μP base shapes are not in it: the model is rebuilt by its
builder (which sets them once) and the state dict is loaded on top, so nothing is rescaled twice.

Loading unpickles tensors and plain containers only (`weights_only=True`): a file whose unpickling would
import or call anything, a damaged file, or one not written by torch.save is a CheckpointError naming it,
and nothing in it runs.

Sharded (`parallel.kind: fsdp`): a checkpoint is a folder `step-NNNNNNNNN/` written with
`torch.distributed.checkpoint` (DCP) by every process, each its shards of the parts that hold DTensors (model,
optimizer), beside `train_state.pt` (rank 0: every other part, as above). DCP stores each tensor with its global
shape, so a run resumes into any number of processes. The folder is written under a hidden name and renamed when
complete; DCP's index (`.metadata`, a pickle) is read by an unpickler that builds DCP's own records and nothing
else, every file it names is a file of the folder itself, and every entry of those files, tensors and bytes alike
(DCP's own planner unpickles bytes entries with `weights_only=False`), is loaded with `weights_only=True`.

A checkpoint is read only where its run's results root holds it once links are resolved (`inside_root`): a
checkpoint, a sharded folder or a file in one linked out of the root is refused, never loaded.
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
from trainer.checkpoint_names import checkpoint_path, list_checkpoints, step_of
from trainer.config import ConfigError
from trainer.folders import inside_root

REST = "train_state.pt"  # in a sharded checkpoint: the parts that are not sharded
FILE = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,254}")  # a file DCP's index may name: one in the folder itself


class CheckpointError(ConfigError):
    """A checkpoint a run cannot resume from; str() is one line naming the file."""


def save_checkpoint(folder: Path, step: int, state: dict, keep: int) -> Path:
    """Write `state` as step-NNNNNNNNN.pt atomically, then delete all but the newest `keep`."""
    path = checkpoint_path(folder, step)
    with atomic_path(path) as tmp, open(tmp, "wb") as file:  # a file object: torch keeps the OSError of a failed write
        torch.save(state, file)
    prune(folder, keep)
    return path


def link_checkpoint(source: Path, folder: Path, keep: int) -> Path:
    """`source` (a checkpoint file or folder) as `folder`'s checkpoint of the same step, by hard links: a state
    serialised once serves two folders (the spike guard's ring and the regular checkpoints at a shared step). Files
    are never changed in place (a rewrite renames a new file over the name), so the two stay independent."""
    target = folder / source.name
    partial = folder / f".{source.name}.partial"
    folder.mkdir(parents=True, exist_ok=True)
    remove(partial)
    if source.is_dir():
        shutil.copytree(source, partial, copy_function=os.link)
    else:
        os.link(source, partial)
    remove(target)
    os.replace(partial, target)
    prune(folder, keep)
    return target


def prune(folder: Path, keep: int) -> None:
    for old in list_checkpoints(folder)[:-keep]:
        remove(old)


def remove(path: Path) -> None:
    if path.is_dir():
        shutil.rmtree(path, ignore_errors=True)
    else:
        path.unlink(missing_ok=True)


def load_checkpoint(path: Path, map_location: str | torch.device = "cpu") -> dict:
    try:
        return torch.load(path, map_location=map_location, weights_only=True)
    except (pickle.UnpicklingError, RuntimeError, EOFError) as err:
        raise CheckpointError(f"checkpoint: {path} is refused: not loadable with weights_only=True ({reason(err)}); "
                              "only this trainer's checkpoints are resumed: move it away or set another output.run"
                              ) from None


def reason(err: Exception) -> str:
    """What torch said, on one line: the weights-only unpickler's finding (what it would not load) when it gave one."""
    if isinstance(err, CheckpointException) and err.failures:  # DCP's wrapper: the first rank's own error
        err = next(iter(err.failures.values()))
    text = str(err)
    found = re.search(r"(?:Trying to load )?[Uu]nsupported [^\n\\]+", text)
    lines = [line for line in text.splitlines() if line.strip()]
    return " ".join((found.group(0) if found else lines[0] if lines else type(err).__name__).split())[:200]


def delete_after(folder: Path, step: int) -> None:
    """Delete the checkpoints in `folder` past `step` (a branch of the run that was abandoned)."""
    for path in list_checkpoints(folder):
        if step_of(path) > step:
            remove(path)


def check_in_root(path: Path, root: Path) -> None:
    """A checkpoint is read only when it, and every file of a sharded one, stays inside the results root once links
    are resolved, and is a regular file or folder: a checkpoint linked out of the root (or a folder, or a file in it)
    or a FIFO in its place (a read that never returns) is refused before it is read."""
    for part in [path, *(sorted(path.iterdir()) if path.is_dir() and not path.is_symlink() else [])]:
        try:
            resolved = inside_root(part, root, "checkpoint")
        except ConfigError as err:
            raise CheckpointError(str(err)) from None
        if resolved.exists() and not (resolved.is_file() or resolved.is_dir()):  # a FIFO would hang the read
            raise CheckpointError(f"checkpoint: {part} is refused: not a regular file or folder (a FIFO, a device)")


def is_sharded(path: Path) -> bool:
    return path.is_dir()


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
