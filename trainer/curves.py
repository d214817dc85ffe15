"""Training curves as a Hive-partitioned Parquet dataset, one row per logged step.

    ROOT/study=<study>/kind=<kind>/run=<run>/part-<first_step:09d>-<last_step:09d>.parquet

Each flush writes one whole part file atomically (temp file + rename), so a killed run leaves
only whole parts; readers skip the hidden temp files. The partition columns are not stored in the
files: Hive partitioning adds them on read.

When a run ends its parts are compacted into one (`CurveWriter.compact`): readers pay per file, so a
finished run costs one footer. The merged part is written before the old ones are removed; a part whose
step range lies inside another part's of the same run is a leftover of an interrupted compaction and
readers skip it (`live_parts`), the next writer of the run removes it.

Schema: `step` is int64; every other number is float64; strings stay strings. Readers such as
`pd.read_parquet(ROOT)` take the schema of the first part they open, so the known curve columns
`FLOAT_COLUMNS` are written in every part (null where a row lacks them, e.g. val_loss between
evals). Other columns are allowed; `read_curves` unifies them across parts, while a plain
`pd.read_parquet(ROOT)` only promises the known ones.
"""
from __future__ import annotations

import numbers
import re
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds
import pyarrow.parquet as pq

from trainer.atomic import atomic_path
from trainer.written import reading

PARTITIONS = ("study", "kind", "run")
# the trainer's numeric columns, present in every part
FLOAT_COLUMNS = ("tokens", "wall_time", "lr", "train_loss", "val_loss", "grad_norm", "tokens_per_s", "mfu",
                 "noise_scale",
                 "trial", "width", "depth", "batch_size")
PART = re.compile(r"part-(\d+)-(\d+)\.parquet")
SAFE = re.compile(r"[A-Za-z0-9._-]+")


def check_partition(field: str, value: str) -> str:
    """A partition value must be a path-safe, non-empty name."""
    if not isinstance(value, str) or not SAFE.fullmatch(value) or value in (".", ".."):
        raise ValueError(f"{field}: {value!r} must be made of letters, digits, '.', '_' or '-'")
    return value


def check_row(row: dict) -> dict:
    """A copy of `row`: an int `step` plus scalar (number, str or None) columns."""
    step = row.get("step")
    if not isinstance(step, numbers.Integral) or isinstance(step, bool):
        raise ValueError(f"curves row: 'step' must be an int, got {step!r}")
    for key, value in row.items():
        if key in PARTITIONS:
            raise ValueError(f"curves row: {key!r} is a partition column, set it on the CurveWriter")
        if value is not None and not isinstance(value, (str, numbers.Real)):
            raise ValueError(f"curves row: {key!r} must be a number, str or None, got {type(value).__name__}")
    return dict(row)


def column_type(name: str, values: list) -> pa.DataType:
    present = [v for v in values if v is not None]
    if name == "step":
        return pa.int64()
    if name in FLOAT_COLUMNS or any(isinstance(v, numbers.Real) for v in present):
        if any(isinstance(v, str) for v in present):
            raise ValueError(f"curves column {name!r} mixes strings and numbers")
        return pa.float64()
    return pa.string() if present else pa.null()


def rows_to_table(rows: list[dict]) -> pa.Table:
    names = ["step", *FLOAT_COLUMNS]
    names += [k for k in dict.fromkeys(k for row in rows for k in row) if k not in names]
    columns = {}
    for name in names:
        values = [row.get(name) for row in rows]
        kind = column_type(name, values)
        columns[name] = pa.array([float(v) if kind == pa.float64() and v is not None else v for v in values], kind)
    return pa.table(columns)


def part_range(path: Path) -> tuple[int, int]:
    first, last = PART.fullmatch(path.name).groups()
    return int(first), int(last)


def live_parts(paths) -> list[Path]:
    """The parts to read: all but those whose step range lies inside another part's of the same run."""
    by_run: dict[Path, list[Path]] = {}
    for path in map(Path, paths):
        by_run.setdefault(path.parent, []).append(path)
    live = []
    for parts in by_run.values():
        if len(parts) == 1:
            live += parts
            continue
        ranges = {path: part_range(path) for path in parts}
        live += [path for path, (first, last) in ranges.items()
                 if not any(other != path and o_first <= first and last <= o_last
                            for other, (o_first, o_last) in ranges.items())]
    return sorted(live)


def write_part(folder: Path, table: pa.Table) -> Path:
    """Write `table` as one whole part named by its step range, atomically."""
    first, last = pc.min(table["step"]).as_py(), pc.max(table["step"]).as_py()
    path = folder / f"part-{first:09d}-{last:09d}.parquet"
    with atomic_path(path) as tmp:
        pq.write_table(table, tmp)
    return path


class CurveWriter:
    """Buffers rows of one run and writes them as whole part files."""

    def __init__(self, root, study: str, kind: str, run: str, flush_rows: int = 500):
        if flush_rows < 1:
            raise ValueError(f"curves.flush_rows: {flush_rows} must be ≥ 1")
        parts = {f: check_partition(f, v) for f, v in zip(PARTITIONS, (study, kind, run), strict=True)}
        self.folder = Path(root).joinpath(*(f"{f}={v}" for f, v in parts.items()))
        self.flush_rows = flush_rows
        self.rows: list[dict] = []
        self.drop_covered()

    def parts(self) -> list[Path]:
        return sorted(self.folder.glob("part-*.parquet"))

    def drop_covered(self) -> None:
        """Remove the parts an interrupted compaction left inside the merged one."""
        live = set(live_parts(self.parts()))
        for path in self.parts():
            if path not in live:
                path.unlink()

    def log(self, row: dict) -> None:
        self.rows.append(check_row(row))
        if len(self.rows) >= self.flush_rows:
            self.flush()

    def flush(self) -> None:
        """Write the buffer as one part; on failure the buffer is kept and nothing partial is left."""
        if self.rows:
            write_part(self.folder, rows_to_table(self.rows))
            self.rows = []

    def truncate_after(self, step: int) -> None:
        """For resume: drop rows with step > `step` from the buffer and from the parts on disk.

        Parts past `step` are deleted; a part straddling it is rewritten (new part first, then the old
        one removed), so an interrupted truncate is healed by running it again.
        """
        self.rows = [row for row in self.rows if row["step"] <= step]
        for path in self.parts():
            first, last = part_range(path)
            if first > step:
                path.unlink()
            elif last > step:
                table = pq.read_table(path)
                write_part(self.folder, table.filter(pc.field("step") <= step))
                path.unlink()

    def close(self) -> None:
        self.flush()

    def compact(self) -> None:
        """Merge the run's parts into one, sorted by step (call once the run has ended).

        The merged part is written first, then the others removed: a kill in between leaves parts inside
        the merged one's range, which readers skip and `drop_covered` removes.
        """
        self.flush()
        parts = self.parts()
        if len(parts) < 2:
            return
        tables = [pq.read_table(path) for path in parts]
        merged = pa.concat_tables(tables, promote_options="default").sort_by("step")
        kept = write_part(self.folder, merged)
        for path in parts:
            if path != kept:
                path.unlink()


def read_run(folder, columns: list[str] | None = None) -> pd.DataFrame | None:
    """One run's rows (its run=… folder), sorted by step; None when it has logged none."""
    parts = live_parts(Path(folder).glob("part-*.parquet"))
    if not parts:
        return None
    tables = []
    for path in parts:
        with reading(path, "curve part"):
            tables.append(pq.read_table(path, columns=columns))
    frame = pa.concat_tables(tables, promote_options="default").to_pandas()
    return frame.sort_values("step", kind="stable").reset_index(drop=True)


def read_schema(path) -> pa.Schema:
    """A curve part's schema, from its footer; a damaged part is a DamagedFile naming it."""
    with reading(path, "curve part"):
        return pq.read_schema(path)


def read_curves(root, **filters) -> pd.DataFrame:
    """All curves under `root` as one frame, optionally filtered by column equality (study="s", run="r").

    Partition columns are read as strings (run "007" stays "007"); columns are unified across
    parts (NaN where a part lacks one); rows are sorted by study, kind, run, step. With no whole part
    yet (nothing logged, or a run killed inside its first write) the frame has no rows and the known
    columns (`step`, FLOAT_COLUMNS, the partitions), so code that selects them works on every run.
    """
    root = Path(root)
    files = [str(f) for f in live_parts(root.glob("study=*/kind=*/run=*/part-*.parquet"))]
    partitioning = ds.partitioning(pa.schema([(p, pa.string()) for p in PARTITIONS]), flavor="hive")
    known = pa.schema([("step", pa.int64()), *((c, pa.float64()) for c in FLOAT_COLUMNS)])
    schema = pa.unify_schemas([known, *(read_schema(f) for f in files), partitioning.schema])
    dataset = ds.dataset(files, schema=schema, format="parquet", partitioning=partitioning,
                         partition_base_dir=str(root))
    condition = None
    for key, value in filters.items():
        if key not in schema.names:
            raise ValueError(f"read_curves: no column {key!r} to filter on")
        term = ds.field(key) == value
        condition = term if condition is None else condition & term
    with reading(root, "curves"):  # a part whose footer reads but whose data is cut
        frame = dataset.to_table(filter=condition).to_pandas() if files else schema.empty_table().to_pandas()
    return frame.sort_values([*PARTITIONS, "step"], kind="stable").reset_index(drop=True)
