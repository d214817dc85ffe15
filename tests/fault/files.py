"""What a killed writer may leave: every file a reader looks at is whole; only hidden temp files may remain."""
from __future__ import annotations

import json
import re
import sqlite3
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
import torch
import yaml

# trainer/atomic.py's temp files: `.NAME.XXXXXXXX.tmp` beside the target, renamed over it when whole
ATOMIC_TEMP = re.compile(r"\..+\.[a-z0-9_]{8}\.tmp")
READERS = {
    ".parquet": pq.read_table,
    ".yaml": lambda path: yaml.safe_load(path.read_text()),
    ".bsh": lambda path: yaml.safe_load(path.read_text()),  # μP base shapes are YAML
    ".json": lambda path: json.loads(path.read_text()),
    ".pt": lambda path: torch.load(path, weights_only=True),
}


def assert_whole_files(folder: Path) -> list[Path]:
    """Every visible file under `folder` reads whole with its reader, a SQLite storage passes its integrity
    check with no journal left, and the curve dataset reads as one. Returns the hidden temp files left by
    killed writes (no reader picks them up: pyarrow skips names starting with '.', the trainer globs
    `part-*` and `step-*`); anything hidden that is not such a temp file fails."""
    temps = []
    for path in sorted(p for p in folder.rglob("*") if p.is_file() or p.is_symlink()):
        if path.name.startswith("."):
            assert ATOMIC_TEMP.fullmatch(path.name), f"unexpected hidden file {path}"
            temps.append(path)
        elif path.suffix in READERS:
            try:
                READERS[path.suffix](path)
            except Exception as err:
                raise AssertionError(f"{path} is torn: {type(err).__name__}: {err}") from None
        elif path.name == "optuna.db":
            assert sqlite3.connect(path).execute("PRAGMA integrity_check").fetchone() == ("ok",)
        else:
            assert path.name != "optuna.db-journal", "a SQLite journal was left after the rerun"
    parts = sorted(folder.glob("curves/study=*/kind=*/run=*/part-*.parquet"))
    if parts:
        rows = pd.read_parquet(folder / "curves")  # the dataset as pandas reads it, temp files and all
        assert len(rows) == sum(pq.read_metadata(p).num_rows for p in parts)
    return temps


def curve_steps(curve_folder: str | Path) -> list[int]:
    """The steps of one run's curve, sorted, each as often as it is stored."""
    return sorted(pd.read_parquet(curve_folder, columns=["step"])["step"].tolist())
