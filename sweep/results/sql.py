"""`sweep sql`: one read-only SELECT over the views of views.py, printed as a table or written as CSV/Parquet.

Whether a statement only reads is DuckDB's own parser's answer (`duckdb.extract_statements` → the
statement type), never a pattern on the text: exactly one statement, of type SELECT (WITH … SELECT,
VALUES, DESCRIBE, SHOW and SUMMARIZE parse as SELECT). Anything else is refused before a view is built.
"""
from __future__ import annotations

import re
from pathlib import Path

import duckdb
from rich.console import Console

from sweep.errors import InputError
from sweep.results.output import print_table, write_result
from sweep.results.scope import Scope, say_skipped, scope
from sweep.results.views import TABLES, connect


def run_sql(statement: str, *, study: str | None, storage: str | None, password_env: str | None, fmt: str,
            out: Path | None, console: Console) -> None:
    if fmt == "parquet" and out is None:
        raise InputError("--out: --format parquet needs a file to write")
    if fmt == "table" and out is not None:
        raise InputError("--out: give --format csv or parquet to write a file")
    check_read_only(statement)
    where = scope(study, storage=storage, password_env=password_env)
    say_skipped(where, "sql")
    result = query(where, statement)
    if fmt == "table":
        print_table(result, console)
    else:
        write_result(result, out, fmt)


def check_read_only(statement: str) -> None:
    """Refuse anything but exactly one SELECT, as DuckDB parses it."""
    try:
        statements = duckdb.extract_statements(statement)
    except duckdb.Error as err:
        raise InputError(f"sql: {one_line(err)}") from None
    if len(statements) != 1:
        raise InputError(f"sql: only one SELECT query is allowed (got {len(statements)} statements)")
    kind = statements[0].type
    if kind != duckdb.StatementType.SELECT:
        raise InputError(f"sql: only SELECT queries are allowed (got {kind.name})")


def query(where: Scope, statement: str) -> duckdb.DuckDBPyRelation:
    """The statement's result over the scope's views (building `trials` and `runs` only when it names them);
    a SQL error is an InputError. The relation is lazy: it runs when read."""
    named = [t for t in TABLES if re.search(rf"\b{t}\b", statement, re.IGNORECASE)]
    con = connect(where, named)
    try:
        return con.sql(statement)
    except duckdb.Error as err:
        raise InputError(f"sql: {one_line(err)}") from None


def one_line(err: Exception) -> str:
    return " ".join(str(err).split())
