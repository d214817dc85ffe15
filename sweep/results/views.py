"""A DuckDB connection over a scope's results, as three read-only views:

- `curves`: the Parquet curve store of every sweep in the scope (ROOT/SWEEP/curves/study=…/kind=…/run=…/
  part-*.parquet), read in place with Hive partitioning (study, kind and run as text columns) and
  union_by_name (a part without a column, e.g. signals, reads it as NULL), leftovers of an interrupted
  compaction skipped (trainer/curves.py);
- `trials`: one row per Optuna trial (trials_table.py);
- `runs`: one row per run folder (runs_table.py).

`trials` needs the Optuna storages and `runs` reads every run's config, so each is built only when asked
for. Once the views exist the connection is locked: files are readable only under the results root,
nothing outside it (no other file, no URL), no extension is installed or loaded, and no setting changes.
"""
from __future__ import annotations

from collections.abc import Iterable

import duckdb

from sweep.results.runs_table import run_rows
from sweep.results.scope import Scope
from sweep.results.trials_table import trial_rows
from trainer.curves import FLOAT_COLUMNS, PARTITIONS, live_parts, read_schema

TABLES = ("curves", "trials", "runs")
CURVE_PARTS = "curves/study=*/kind=*/run=*/part-*.parquet"
MEMORY_LIMIT = "2GB"  # DuckDB's working memory for one query (it spills what it can to no disk: none is allowed)


def connect(scope: Scope, tables: Iterable[str] = TABLES) -> duckdb.DuckDBPyConnection:
    """A locked connection with the `curves` view and whichever of `trials` and `runs` are in `tables`."""
    con = duckdb.connect(config={"autoinstall_known_extensions": False, "autoload_known_extensions": False})
    con.execute(f"CREATE VIEW curves AS {curves_query(scope)}")
    if "trials" in tables:
        con.register("trials", trial_rows(scope))
    if "runs" in tables:
        con.register("runs", run_rows(scope))
    con.execute("SET python_enable_replacements = false")  # no Python variable is a table
    con.execute(f"SET allowed_directories = [{quote(str(scope.root))}]")
    con.execute("SET enable_external_access = false")
    con.execute(f"SET memory_limit = '{MEMORY_LIMIT}'")  # a result of gigabytes is one line, not the machine's RAM
    con.execute("SET lock_configuration = true")
    return con


def curves_query(scope: Scope) -> str:
    """read_parquet over the live parts of the sweeps in scope; with none, an empty table of the known columns."""
    parts = [str(path) for path in live_parts(scope.files(CURVE_PARTS))]
    for part in parts:  # a damaged part is a line naming it, not DuckDB's error while the view is made
        read_schema(part)
    if not parts:
        columns = ["NULL::BIGINT AS step", *(f"NULL::DOUBLE AS {c}" for c in FLOAT_COLUMNS),
                   *(f"NULL::VARCHAR AS {p}" for p in PARTITIONS)]
        return f"SELECT {', '.join(columns)} WHERE false"
    types = ", ".join(f"{p}: VARCHAR" for p in PARTITIONS)
    return (f"SELECT * FROM read_parquet([{', '.join(map(quote, parts))}], hive_partitioning = true, "
            f"union_by_name = true, hive_types = {{{types}}})")


def quote(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"
