"""A run trained already under the same root: a trial's run whose content (trial.py `content_id`: everything that
shapes its curve, not where it is written nor its provenance; its length in steps, however it was given) equals one
another study finished is not trained again.

`sweep verify --plan` runs each law's ladder as studies of its own, and every ladder's rung at the proxy's own value
(its width, batch, tokens, depth) is the same grid of the same runs: before this, a plan of four ladders trained
that rung four times, and `sweep transfer`'s tuning compute counted it four times.

- `record`: a trial's run that completed is indexed as ROOT/.trained/ID.json ({"run": its folder, relative to the
  root}), written atomically (the last of two equal runs finishing together is the one kept; both are whole).
- `take`: before a trial trains a run, its twin is looked up. Taken only when the index names a folder inside the
  root whose config.yaml has the same content id and whose result.json says completed, whose curve (read under
  this root, wherever its config says the root was: a root copied elsewhere takes its own runs) ends at the step
  and validation loss that result records, and only in a study without a pruner (a reused curve is not reported
  step by step; verify's grids have none, a proxy sweep's usually has one, so `sweep proxy` trains its trials).
  The trial's own run folder then gets its own config, the twin's result (`reused_from` added: the twin's folder,
  relative to the root) and the twin's curve rows (its `trial` column this trial's), so every reader finds the run
  where it would have been trained, and the trackers the trial's config asks for receive that curve (`mirror`), so
  a study's runs are all in MLflow, W&B or TensorBoard. Nothing is trained; `reused` on the trial names the twins,
  and the compute counts treat the run as free.
"""
from __future__ import annotations

import json
import math
from contextlib import suppress
from pathlib import Path

import pyarrow as pa

from sweep.errors import InputError
from sweep.paths import curve_folder, inside_root, read_json
from trainer.atomic import atomic_path
from trainer.checkpoint_names import FOLDER
from trainer.config import ConfigError, RunConfig
from trainer.curves import read_run, write_part
from trainer.tracking import Trackers

INDEX = ".trained"


def content_id(cfg: RunConfig) -> str:
    """The hash of what shapes a run's curve (RunConfig.run_id without a fixed name)."""
    return cfg.model_copy(update={"output": cfg.output.model_copy(update={"run": None})}).run_id()


def key(cfg: RunConfig, tokens_per_example: int) -> str:
    """`content_id` with the run's length said one way, in steps: a tokens ladder's rung at the proxy's tokens
    (`tokens: 1280`) is the proxy's run (`steps: 40`)."""
    return content_id(cfg.model_copy(update={"steps": cfg.total_steps(tokens_per_example), "tokens": None}))


def index_path(cfg: RunConfig, tokens_per_example: int) -> Path:
    return Path(cfg.output.root) / INDEX / f"{key(cfg, tokens_per_example)}.json"


def record(cfg: RunConfig, tokens_per_example: int) -> None:
    """Index a completed run by its content (module docstring). The index only saves work: where it cannot be written
    (its entry made a folder, a read-only index) the run stands, unindexed, and a later twin trains again."""
    root = Path(cfg.output.root)
    with suppress(OSError), atomic_path(index_path(cfg, tokens_per_example)) as tmp:
        tmp.write_text(json.dumps({"run": str(cfg.run_dir().relative_to(root))}))


def twin_of(cfg: RunConfig, tokens_per_example: int) -> Path | None:
    """The folder of a completed run elsewhere under the root with `cfg`'s content, or None (none indexed, or the
    index, the folder or its files not what `record` and the trainer wrote: then the run is trained)."""
    root = Path(cfg.output.root)
    try:
        entry = read_json(index_path(cfg, tokens_per_example), "twin")
        if not entry or not isinstance(entry.get("run"), str):
            return None
        folder = inside_root(root / entry["run"], root, "twin")
        if folder == cfg.run_dir().resolve():
            return None
        result = read_json(folder / "result.json", "twin")
        if not result or result.get("status") != "completed" or not (folder / "config.yaml").is_file():
            return None
        twin = RunConfig.load(inside_root(folder / "config.yaml", root, "twin"))
        if key(twin, tokens_per_example) != key(cfg, tokens_per_example):
            return None
    except (InputError, ConfigError, OSError):
        return None
    return folder


def take(cfg: RunConfig, tokens_per_example: int) -> dict | None:
    """The twin's result written into `cfg`'s own run folder with its curve (module docstring), or None where there
    is no twin to take."""
    started = cfg.run_dir() / "result.json", cfg.run_dir() / FOLDER
    twin = None if any(p.exists() for p in started) else twin_of(cfg, tokens_per_example)  # begun here: resumed here
    if twin is None:
        return None
    root = Path(cfg.output.root)
    try:  # its curve where its config says, under this root (a root copied elsewhere: where the copy holds it)
        written = RunConfig.load(twin / "config.yaml")
        here = written.model_copy(update={"output": written.output.model_copy(update={"root": str(root)})})
        rows = read_run(inside_root(curve_folder(here), root, "twin"))
        recorded = json.loads((twin / "result.json").read_text())
    except (InputError, ConfigError, OSError, ValueError):
        return None
    if not matches(rows, recorded):
        return None
    rows["trial"] = float(cfg.provenance.trial) if cfg.provenance.trial is not None else float("nan")
    result = {**recorded, "run_id": cfg.run_id(), "reused_from": str(twin.relative_to(root.resolve()))}
    with atomic_path(cfg.run_dir() / "config.yaml") as tmp:
        tmp.write_text(cfg.to_yaml())
    write_part(curve_folder(cfg), pa.Table.from_pandas(rows, preserve_index=False))
    mirror(cfg, rows)
    with atomic_path(cfg.run_dir() / "result.json") as tmp:
        tmp.write_text(json.dumps(result, indent=2))
    return result


def mirror(cfg: RunConfig, rows) -> None:
    """The taken curve sent to the trackers `cfg` asks for, as training the run would have sent it: each row's
    numbers at its step (an evaluation's losses where it has them), once across a kill (trainer/tracking.py); the
    tracker's run completed. A tracker that fails is one line on stderr and the run stands."""
    if cfg.logging is None or not cfg.logging.asked():
        return
    trackers = Trackers(cfg, cfg.run_dir())
    for row in rows.sort_values("step").to_dict(orient="records"):
        trackers.log({k: v for k, v in row.items() if not (isinstance(v, float) and math.isnan(v))})
    trackers.close("completed")


def matches(rows, recorded) -> bool:
    """Whether a curve is the run its result records: its last step the result's step and its last validation loss
    the result's (a part of another run copied in is another curve: the run is trained)."""
    if rows is None or not isinstance(recorded, dict) or rows.empty or "step" not in rows:
        return False
    evals = rows.sort_values("step").dropna(subset=["val_loss"]) if "val_loss" in rows else rows.iloc[:0]
    last = float(evals["val_loss"].iloc[-1]) if len(evals) else None
    loss = recorded.get("val_loss")
    same_loss = (last is None and loss is None) or (
        last is not None and isinstance(loss, int | float) and math.isclose(last, float(loss), rel_tol=1e-9))
    return same_loss and int(rows["step"].max()) == recorded.get("step")
