"""`sweep export`: a sweep's `trials`, `runs` and `curves` tables (views.py) as CSV or Parquet files,
each written atomically, by default under ROOT/NAME/export/."""
from __future__ import annotations

from pathlib import Path

from rich.console import Console

from sweep.errors import InputError
from sweep.results.output import write_result
from sweep.results.scope import scope
from sweep.results.views import connect

ORDER = {"trials": "study, number", "runs": "run", "curves": "study, kind, run, step"}


def run_export(study: str, *, fmt: str, out: Path | None, storage: str | None, password_env: str | None,
               console: Console) -> list[Path]:
    where = scope(study, storage=storage, password_env=password_env)
    folder = out if out is not None else where.root / where.sweep / "export"
    if folder.exists() and not folder.is_dir():
        raise InputError(f"--out: {folder} is a file, not a folder")
    con = connect(where)
    written = []
    for table, order in ORDER.items():
        path = folder / f"{table}.{fmt}"
        write_result(con.sql(f"SELECT * FROM {table} ORDER BY {order}"), path, fmt)
        [(rows,)] = con.sql(f"SELECT count(*) FROM {table}").fetchall()
        console.print(f"{table}: {rows} rows -> {path}")
        written.append(path)
    return written
