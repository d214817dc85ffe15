"""`sweep sql`, `sweep export`, `sweep compare`: DuckDB over the views trials, runs and curves of a real
tiny sweep and a full run made from one of its trials; only SELECT runs, everything else is one line,
exit 2, nothing written."""
import io
import sys

import pandas as pd
import pyarrow as pa
import pytest

from tests.sweep_helpers import file_tree, load, run_sweep, write_spec
from trainer.config import RunConfig
from trainer.loop import train

FULL_RUN = "full-w32"
JOIN = ("SELECT c.kind, c.run, t.study, t.number, t.value, max(c.step) AS last_step, count(*) AS rows "
        "FROM curves c JOIN runs r ON c.study = r.sweep AND c.run = r.run "
        "JOIN trials t ON t.study = r.provenance_study AND t.number = r.provenance_trial "
        "GROUP BY ALL ORDER BY c.kind, t.number")


@pytest.fixture(scope="module")
def swept(tmp_path_factory):
    """A 2-trial proxy sweep, and a full run (wider, kind=full) whose provenance is trial 0."""
    root = tmp_path_factory.mktemp("queries")
    done = run_sweep(root, "proxy", write_spec(root, trials=2), "--width", "16")
    assert done.returncode == 0, done.stderr
    proxy = RunConfig.load(root / "tiny" / "runs" / "w16-mup-t00000-s0" / "config.yaml")
    full = RunConfig.parse({**proxy.model_dump(), "steps": 10, "model": {**proxy.model.model_dump(), "width": 32},
                            "output": {**proxy.output.model_dump(), "kind": "full", "run": FULL_RUN},
                            "provenance": {"study": "tiny-w16-mup", "trial": 0, "trial_value": 1.0}})
    assert train(full).status == "completed"
    return root


@pytest.fixture
def cli(swept, run_cli, monkeypatch):
    """`sweep …` in this process, with the sweep's root as SWEEP_ROOT and working folder."""
    monkeypatch.setenv("SWEEP_ROOT", str(swept))
    monkeypatch.chdir(swept)
    return run_cli


def csv_of(text: str) -> pd.DataFrame:
    return pd.read_csv(io.StringIO(text))


def test_curves_join_trials_through_runs_and_the_full_run_joins_its_trial(swept):
    shown = run_sweep(swept, "sql", JOIN, "--format", "csv")
    assert shown.returncode == 0, shown.stderr
    rows = csv_of(shown.stdout)
    study = load(swept)
    values = {t.number: t.value for t in study.get_trials()}
    proxies = rows[rows["kind"] == "proxy"]
    assert list(proxies["number"]) == [0, 1] and list(proxies["value"]) == [values[0], values[1]]
    assert list(proxies["last_step"]) == [20, 20] and list(proxies["rows"]) == [5, 5]  # steps 1, 5, …, 20
    [full] = rows[rows["kind"] == "full"].to_dict("records")
    assert (full["run"], full["study"], full["number"], full["value"], full["last_step"]) == \
        (FULL_RUN, "tiny-w16-mup", 0, values[0], 10)


def test_runs_lists_each_trials_runs_with_provenance(cli, swept):
    code, out, err = cli("sql", "SELECT run, kind, width, batch_size, status, last_step, provenance_study, "
                         "provenance_trial FROM runs ORDER BY kind DESC, run", "--format", "csv", "--study", "tiny")
    assert code == 0, err
    runs = csv_of(out)
    assert runs.to_dict("records") == [
        {"run": f"w16-mup-t0000{n}-s0", "kind": "proxy", "width": 16, "batch_size": 4, "status": "completed",
         "last_step": 20, "provenance_study": "tiny-w16-mup", "provenance_trial": n} for n in (0, 1)] + [
        {"run": FULL_RUN, "kind": "full", "width": 32, "batch_size": 4, "status": "completed", "last_step": 10,
         "provenance_study": "tiny-w16-mup", "provenance_trial": 0}]
    code, out, _ = cli("sql", "SELECT number, unnest(runs) AS run, storage FROM trials ORDER BY number",
                       "--format", "csv")
    trials = csv_of(out)
    assert list(trials["run"]) == ["w16-mup-t00000-s0", "w16-mup-t00001-s0"]
    assert set(trials["storage"]) == {f"sqlite:///{swept / 'tiny' / 'optuna.db'}"}


@pytest.mark.parametrize("statement,kind", [
    ("COPY (SELECT * FROM curves) TO 'leak.csv'", "COPY"),
    ("CREATE TABLE t AS SELECT 1", "CREATE"),
    ("INSERT INTO trials VALUES (1)", "INSERT"),
    ("ATTACH 'leak.db' AS leak", "ATTACH"),
    ("PRAGMA version", "PRAGMA"),
    ("EXPORT DATABASE 'dump'", "EXPORT"),
    ("INSTALL httpfs", "LOAD"),
    ("SET enable_external_access = true", "SET"),
    ("UPDATE runs SET lr = 1", "UPDATE"),
    ("WITH x AS (SELECT 1) DELETE FROM runs", "DELETE"),
])
def test_write_statements_are_refused_and_write_nothing(cli, swept, statement, kind):
    before = file_tree(swept)
    code, out, err = cli("sql", statement)
    assert (code, out, err) == (2, "", f"error: sql: only SELECT queries are allowed (got {kind})\n")
    assert file_tree(swept) == before


def test_two_statements_are_refused_in_a_real_process(swept):
    before = file_tree(swept)
    shown = run_sweep(swept, "sql", "SELECT 1; COPY (SELECT 1) TO 'leak.csv'")
    assert (shown.returncode, shown.stdout) == (2, "")
    assert shown.stderr == "error: sql: only one SELECT query is allowed (got 2 statements)\n"
    assert file_tree(swept) == before


@pytest.mark.parametrize("statement,message", [
    ("SELEC 1", "error: sql: Parser Error: syntax error at or near"),
    ("SELECT nope FROM curves", "error: sql: Binder Error: Referenced column \"nope\" not found"),
    ("SELECT * FROM read_csv('/etc/passwd')", "error: sql: Permission Error: Cannot access file \"/etc/passwd\""),
])
def test_bad_sql_and_reads_outside_the_root_are_one_line_exit_2(cli, statement, message):
    code, out, err = cli("sql", statement)
    assert code == 2 and out == "" and err.startswith(message) and err.count("\n") == 1, err


def test_a_cell_of_gigabytes_is_cut_inside_duckdb_before_it_is_printed(cli):
    """A text of 10^8 characters (and a list of 10^6 numbers) hung the terminal table for minutes: the table shows
    200 characters of it, cut inside DuckDB; CSV keeps the whole value."""
    code, out, err = cli("sql", "SELECT repeat('x', 100000000) AS big, range(1000000) AS many, 1.5 AS small")
    assert code == 0, err
    assert out.count("x") == 200 and out.count("…") == 2 and "1.5" in out and len(out) < 20_000  # folded lines


def test_table_csv_and_parquet_output(cli, swept):
    code, out, _ = cli("sql", "SELECT run, step, train_loss FROM curves WHERE kind = 'proxy' ORDER BY run, step")
    assert code == 0 and "w16-mup-t00001-s0" in out and "train_loss" in out
    code, out, err = cli("sql", "SELECT 1 AS a", "--format", "parquet")
    assert (code, err) == (2, "error: --out: --format parquet needs a file to write\n")
    code, _, err = cli("sql", "SELECT * FROM curves ORDER BY run, step", "--format", "parquet", "--out", "c.parquet")
    assert code == 0, err
    curves = pd.read_parquet(swept / "c.parquet")
    assert len(curves) == 5 + 5 + 3 and {"study", "kind", "run", "step", "val_loss"} <= set(curves.columns)
    code, _, _ = cli("sql", "SELECT number, runs FROM trials", "--format", "csv", "--out", "t.csv")
    assert code == 0 and csv_of((swept / "t.csv").read_text())["runs"].str.startswith("[w16-mup-t0000").all()


def test_csv_to_a_text_only_stdout(cli, monkeypatch):
    # a notebook's or a captured stdout has no binary `buffer`: writing to it was an AttributeError traceback
    from sweep.cli import main

    text = io.StringIO()
    monkeypatch.setattr(sys, "stdout", text)
    monkeypatch.setattr(sys, "argv", ["sweep", "sql", "SELECT number FROM trials ORDER BY number", "--format", "csv"])
    with pytest.raises(SystemExit) as stop:
        main()
    assert stop.value.code == 0 and csv_of(text.getvalue())["number"].tolist() == [0, 1]


@pytest.mark.parametrize("fmt", ["parquet", "csv"])
def test_export_writes_trials_runs_and_curves(cli, swept, fmt):
    code, out, err = cli("export", "tiny", "--format", fmt, "--out", f"export-{fmt}")
    assert code == 0, err
    read = pd.read_parquet if fmt == "parquet" else pd.read_csv
    folder = swept / f"export-{fmt}"
    assert sorted(p.name for p in folder.iterdir()) == sorted(f"{t}.{fmt}" for t in ("curves", "runs", "trials"))
    assert tuple(len(read(folder / f"{table}.{fmt}")) for table in ("trials", "runs", "curves")) == (2, 3, 13)
    assert "curves: 13 rows" in out


def test_compare_a_trial_and_a_run_by_fraction(swept):
    shown = run_sweep(swept, "compare", "tiny-w16-mup#1", FULL_RUN, "--x", "fraction", "--out", "cmp.png")
    assert shown.returncode == 0, shown.stderr
    for cell in ("w16-mup-t00001-s0", FULL_RUN, "tiny-w16-mup#1", "tiny-w16-mup#0", "proxy", "full"):
        assert cell in shown.stdout, cell
    assert (swept / "cmp.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_compare_a_trial_shows_its_full_run_too(cli, swept):
    code, out, err = cli("compare", "tiny-w16-mup#0", "--metric", "train_loss", "--x", "tokens", "--study", "tiny")
    assert code == 0, err
    assert "w16-mup-t00000-s0" in out and FULL_RUN in out and (swept / "compare.png").is_file()


@pytest.mark.parametrize("args,message", [
    (("nope",), "compare: no run or trial 'nope' under"),
    (("tiny-w16-mup#7",), "compare: no run or trial 'tiny-w16-mup#7' under"),
    (("tiny-w16-mup#x",), "compare: 'tiny-w16-mup#x': a trial reference is STUDY#N"),
    ((FULL_RUN, "--x", "time"), "--x: 'time' is not one of step, tokens, fraction"),
])
def test_compare_bad_references_are_one_line_exit_2(cli, args, message):
    code, out, err = cli("compare", *args)
    assert code == 2 and err.startswith(f"error: {message}") and err.count("\n") == 1, err


def test_the_leftover_parts_of_an_interrupted_compaction_are_counted_once(tmp_path):
    from sweep.results.scope import Scope
    from sweep.results.sql import query
    from trainer.curves import CurveWriter, read_run, write_part

    writer = CurveWriter(tmp_path / "s" / "curves", "s", "proxy", "r", flush_rows=2)
    for step in range(1, 7):
        writer.log({"step": step, "train_loss": 1.0 / step})
    write_part(writer.folder, pa.Table.from_pandas(read_run(writer.folder), preserve_index=False))  # killed here
    rows = pa.table(query(Scope(tmp_path, None, ()), "SELECT step FROM curves ORDER BY step"))
    assert rows["step"].to_pylist() == [1, 2, 3, 4, 5, 6]
