"""A query's result out: a rich table on the terminal, or CSV / Parquet streamed to a file (atomically:
a failed query leaves nothing) or CSV to stdout."""
from __future__ import annotations

import sys
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq
from rich.console import Console
from rich.table import Table

from sweep.errors import InputError
from sweep.results.table import cell
from trainer.atomic import atomic_path

TABLE_ROWS = 1000  # rows printed as a table; more go to CSV or Parquet
TABLE_CELL = 200  # characters of a text, list or binary value printed in a table; the whole value goes to CSV
NESTED = ("list", "struct", "map", "array", "union")


def print_table(result: duckdb.DuckDBPyRelation, console: Console) -> None:
    """At most TABLE_ROWS rows of at most TABLE_CELL characters a cell, cut inside DuckDB: a value of gigabytes
    (`SELECT repeat('x', 10^9)`) is never fetched into Python nor laid out by the terminal table."""
    frame = fetch(lambda: shortened(result.limit(TABLE_ROWS + 1)).df())
    table = Table(title_justify="left")
    for column in frame.columns:
        table.add_column(str(column), overflow="fold")
    for row in frame.head(TABLE_ROWS).itertuples(index=False):
        table.add_row(*(cell(v) for v in row))
    console.print(table)
    shown = min(len(frame), TABLE_ROWS)
    more = "; more: use --format csv or parquet, or LIMIT" if len(frame) > TABLE_ROWS else ""
    Console(stderr=True).print(f"[dim]{shown} row{'s' * (shown != 1)} shown{more}[/]")


def write_result(result: duckdb.DuckDBPyRelation, out: Path | None, fmt: str) -> None:
    """Stream the result as `fmt` (csv, parquet) to `out`, or CSV to stdout when `out` is None."""
    if fmt == "csv":
        result = flat(result)
    if out is None:
        sys.stdout.flush()
        binary = getattr(sys.stdout, "buffer", None)
        if binary is None:  # a text-only stdout (a notebook's, a captured one): the CSV through it as text
            sink = pa.BufferOutputStream()
            fetch(lambda: write_stream(result, sink, fmt))
            sys.stdout.write(sink.getvalue().to_pybytes().decode())
            return
        fetch(lambda: write_stream(result, pa.output_stream(binary), fmt))
        binary.flush()
        return
    with atomic_path(out) as tmp:
        fetch(lambda: write_stream(result, tmp, fmt))


def write_stream(result: duckdb.DuckDBPyRelation, sink, fmt: str) -> None:
    reader = pa.RecordBatchReader.from_stream(result)
    writer = pq.ParquetWriter(sink, reader.schema) if fmt == "parquet" else pacsv.CSVWriter(sink, reader.schema)
    with writer:
        for batch in reader:
            writer.write_batch(batch)


def shortened(result: duckdb.DuckDBPyRelation) -> duckdb.DuckDBPyRelation:
    """`result` with each text, binary or nested column cut to TABLE_CELL characters (… marks a cut)."""
    long = {c for c, t in zip(result.columns, result.types, strict=True) if t.id in (*NESTED, "varchar", "blob")}
    if not long:
        return result
    quoted = {c: '"' + c.replace('"', '""') + '"' for c in result.columns}
    cut = ("CASE WHEN length(CAST({q} AS VARCHAR)) > {n} THEN left(CAST({q} AS VARCHAR), {n}) || '…' "
           "ELSE CAST({q} AS VARCHAR) END AS {q}")
    return result.project(", ".join(cut.format(q=quoted[c], n=TABLE_CELL) if c in long else quoted[c]
                                    for c in result.columns))


def flat(result: duckdb.DuckDBPyRelation) -> duckdb.DuckDBPyRelation:
    """CSV has no lists or structs: such columns are written as DuckDB's text form of them."""
    nested = {c for c, t in zip(result.columns, result.types, strict=True) if t.id in NESTED}
    if not nested:
        return result
    quoted = {c: '"' + c.replace('"', '""') + '"' for c in result.columns}
    return result.project(", ".join(f"CAST({quoted[c]} AS VARCHAR) AS {quoted[c]}" if c in nested else quoted[c]
                                    for c in result.columns))


def fetch(read):
    """Run `read`; a query that fails while it runs (a bad cast, a missing file) is one line, exit 2."""
    try:
        return read()
    except duckdb.Error as err:
        raise InputError(f"sql: {' '.join(str(err).split())}") from None
