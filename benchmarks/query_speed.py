"""How fast `sweep sql` answers over a large curve store, against pandas.

Writes a synthetic store of RUNS × STEPS curve rows (default 1,000 × 10,000 = 10 million) in a temp dir,
as the trainer writes it while runs train: ROOT/bench/curves/study=bench/kind=proxy/run=RUN/
part-FIRST-LAST.parquet, whole parts of --rows-per-part rows (the trainer's CurveWriter flushes every 500),
the trainer's columns (val_loss every 100 steps, NULL between). Then times two queries, median of --repeat,
on that layout and again after compacting every run as the trainer does when a run ends (one part per run):

- "final loss per run, top 10": the last train loss of every run, the 10 lowest;
- "curves of 20 runs": step and train loss of 20 named runs.

`sweep sql`'s path: the read-only check, the views over the results root, the query, the result fetched as
Arrow (views built per query, as each command does). pandas: pd.read_parquet of the store (the run filter
pushed down for the second) and a groupby. Also the whole `sweep sql` command as a process (Python, torch
and the CLI's imports included), once per query.

    .venv/bin/python benchmarks/query_speed.py                      # ~5 min on 2 cores
"""
from __future__ import annotations

import argparse
import functools
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from sweep.results.scope import Scope
from sweep.results.sql import check_read_only, query
from trainer.curves import FLOAT_COLUMNS, CurveWriter, write_part

EVAL_EVERY = 100


def run_name(i: int) -> str:
    return f"w{64 << (i % 4)}-mup-t{i:05d}-s0"


def write_store(root: Path, runs: int, steps: int, rows_per_part: int) -> None:
    rng = np.random.default_rng(0)
    step = np.arange(1, steps + 1, dtype=np.int64)
    for i in range(runs):
        loss = 1.5 + 3.0 * np.exp(-step / (1000 + 5 * i)) + rng.normal(0, 0.01, steps)
        columns = {name: np.full(steps, float(i % 7)) for name in FLOAT_COLUMNS}
        columns.update(tokens=step * 2048.0, wall_time=step * 0.05, lr=np.full(steps, 2 ** -6), train_loss=loss,
                       trial=np.full(steps, float(i)), width=np.full(steps, float(64 << (i % 4))))
        table = pa.table({"step": step, **columns})
        table = table.set_column(table.schema.get_field_index("val_loss"), "val_loss",
                                 pa.array(loss, mask=step % EVAL_EVERY != 0))
        folder = root / "bench" / "curves" / "study=bench" / "kind=proxy" / f"run={run_name(i)}"
        for first in range(0, steps, rows_per_part):
            write_part(folder, table.slice(first, rows_per_part))


def queries(runs: int) -> dict[str, str]:
    chosen = ", ".join(f"'{run_name(i)}'" for i in range(0, runs, max(1, runs // 20))[:20])
    return {"final loss per run, top 10": "SELECT run, arg_max(train_loss, step) AS final FROM curves "
                                          "GROUP BY run ORDER BY final LIMIT 10",
            "curves of 20 runs": f"SELECT run, step, train_loss FROM curves WHERE run IN ({chosen}) ORDER BY run, step"}


def via_sql(root: Path, statement: str) -> int:
    check_read_only(statement)
    return pa.table(query(Scope(root, None, ()), statement)).num_rows


def via_pandas(root: Path, name: str, runs: int) -> int:
    store = root / "bench" / "curves"
    if name.startswith("final"):
        frame = pd.read_parquet(store, columns=["run", "step", "train_loss"])
        final = frame.sort_values("step").groupby("run", observed=True)["train_loss"].last()
        return len(final.nsmallest(10))
    chosen = [run_name(i) for i in range(0, runs, max(1, runs // 20))[:20]]
    frame = pd.read_parquet(store, columns=["run", "step", "train_loss"], filters=[("run", "in", chosen)])
    return len(frame.sort_values(["run", "step"]))


def seconds(call, repeat: int) -> tuple[float, int]:
    times, rows = [], 0
    for _ in range(repeat):
        start = time.perf_counter()
        rows = call()
        times.append(time.perf_counter() - start)
    return statistics.median(times), rows


def command_seconds(root: Path, statement: str) -> float:
    env = {**os.environ, "SWEEP_ROOT": str(root), "PYTHONPATH": str(Path(__file__).resolve().parent.parent)}
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "sweep", "sql", statement, "--format", "csv", "--out",
                           str(root / "out.csv")], env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return time.perf_counter() - start


def compact_store(root: Path, runs: int) -> None:
    """What the trainer does when each run ends: its parts merged into one."""
    for i in range(runs):
        CurveWriter(root / "bench" / "curves", "bench", "proxy", run_name(i)).compact()


def time_queries(root: Path, args, layout: str) -> None:
    parts = sum(1 for _ in root.glob("bench/curves/*/*/*/part-*.parquet"))
    for name, statement in queries(args.runs).items():
        sql_s, sql_rows = seconds(functools.partial(via_sql, root, statement), args.repeat)
        pandas_s, pandas_rows = seconds(functools.partial(via_pandas, root, name, args.runs), args.repeat)
        assert sql_rows == pandas_rows, (sql_rows, pandas_rows)
        print(f"| {layout} | {parts:,} | {name} | {sql_rows:,} | {sql_s:.2f} | {pandas_s:.2f} | "
              f"{pandas_s / sql_s:.1f}× | {command_seconds(root, statement):.2f} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--steps", type=int, default=10_000)
    parser.add_argument("--rows-per-part", type=int, default=500)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="query-speed-") as tmp:
        root = Path(tmp)
        start = time.perf_counter()
        write_store(root, args.runs, args.steps, args.rows_per_part)
        print(f"store: {args.runs:,} runs × {args.steps:,} steps = {args.runs * args.steps:,} rows, parts of "
              f"{args.rows_per_part} rows, written in {time.perf_counter() - start:.1f} s; "
              f"{os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}")
        print("| layout | parts | query | rows | sweep sql s | pandas s | pandas / sweep sql | `sweep sql` command s |")
        print("| --- | --- | --- | --- | --- | --- | --- | --- |")
        time_queries(root, args, "runs in flight")
        start = time.perf_counter()
        compact_store(root, args.runs)
        compacted = time.perf_counter() - start
        time_queries(root, args, "runs finished (compacted)")
        print(f"compaction: {compacted / args.runs * 1000:.0f} ms per run of {args.steps:,} rows")


if __name__ == "__main__":
    main()
