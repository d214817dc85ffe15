"""Tests for trainer.curves: round trip, buffering, atomic parts, crash safety, resume truncation, schema."""

import io

import pandas as pd
import pyarrow.dataset as ds
import pyarrow.parquet as pq
import pytest

from trainer.curves import CurveWriter, read_curves, read_run, rows_to_table, write_part


def files_in(folder):
    return sorted(p.name for p in folder.iterdir()) if folder.exists() else []


def log_steps(writer, steps, loss=lambda s: 1.0 / (s + 1)):
    for s in steps:
        writer.log({"step": s, "train_loss": loss(s), "lr": 0.01})


def test_rows_round_trip_with_partition_columns_restored(tmp_path):
    w = CurveWriter(tmp_path, "s1", "proxy", "r-0")
    log_steps(w, range(3))
    w.close()
    df = pd.read_parquet(tmp_path)
    assert df["step"].tolist() == [0, 1, 2] and df["train_loss"].tolist() == [1.0, 0.5, 1 / 3]
    assert {c: df[c].astype(str).unique().tolist() for c in ("study", "kind", "run")} == \
        {"study": ["s1"], "kind": ["proxy"], "run": ["r-0"]}
    assert "run" not in pq.read_schema(next(w.folder.glob("part-*.parquet"))).names  # hive adds it on read


def test_read_curves_filters_sorts_and_keeps_partition_values_as_strings(tmp_path):
    for run in ("010", "007"):  # digit-only names that hive type inference would turn into ints
        w = CurveWriter(tmp_path, "s", "proxy", run)
        log_steps(w, [2, 0, 1])
        w.close()
    CurveWriter(tmp_path, "other", "proxy", "007").close()  # empty writer writes nothing
    w = CurveWriter(tmp_path, "other", "full", "007")
    log_steps(w, [5])
    w.close()
    df = read_curves(tmp_path, study="s")
    assert df["run"].tolist() == ["007"] * 3 + ["010"] * 3 and df["step"].tolist() == [0, 1, 2] * 2
    assert read_curves(tmp_path, study="other", run="007")["step"].tolist() == [5]
    assert read_curves(tmp_path / "missing").empty


def test_a_run_without_a_whole_part_reads_back_with_the_curve_columns(tmp_path):
    """A run killed inside its first curve write leaves only a hidden temp file: read_curves gives no rows but
    the columns a logged run has (it gave step and the partitions only, and `frame[["step", "wall_time"]]`
    raised KeyError); the columns and their types match those of a run with parts."""
    folder = tmp_path / "study=s" / "kind=full" / "run=r"
    folder.mkdir(parents=True)
    (folder / ".part-000000001-000000005.parquet.x1y2.tmp").write_bytes(b"PAR1 torn")
    empty = read_curves(tmp_path, run="r")
    assert empty.empty and {"step", "wall_time", "train_loss", "val_loss", "study", "kind", "run"} <= set(empty.columns)
    write_part(folder, rows_to_table([{"step": 1, "train_loss": 2.0}]))
    logged = read_curves(tmp_path, run="r")
    assert list(empty.columns) == list(logged.columns) and empty.dtypes.equals(logged.dtypes)


def test_rows_are_buffered_until_flush_rows_or_flush(tmp_path):
    w = CurveWriter(tmp_path, "s", "k", "r", flush_rows=5)
    log_steps(w, range(4))
    assert files_in(w.folder) == []
    w.log({"step": 4})
    assert files_in(w.folder) == ["part-000000000-000000004.parquet"]
    log_steps(w, range(5, 7))
    w.flush()
    w.flush()  # nothing buffered: no empty part
    assert files_in(w.folder) == ["part-000000000-000000004.parquet", "part-000000005-000000006.parquet"]


def test_each_flush_is_one_whole_part_and_no_temp_files_remain(tmp_path):
    w = CurveWriter(tmp_path, "s", "k", "r")
    log_steps(w, range(3))
    w.flush()
    assert files_in(w.folder) == ["part-000000000-000000002.parquet"]  # hidden temp files would show here
    assert pq.read_table(w.folder / "part-000000000-000000002.parquet").num_rows == 3


def test_a_crash_while_writing_leaves_no_partial_file_and_keeps_previous_parts(tmp_path, monkeypatch):
    w = CurveWriter(tmp_path, "s", "k", "r")
    log_steps(w, range(3))
    w.flush()
    before = read_curves(tmp_path)
    real_write = pq.write_table

    def torn_write(table, where, **kwargs):
        buffer = io.BytesIO()
        real_write(table, buffer, **kwargs)
        with open(where, "wb") as f:
            f.write(buffer.getvalue()[: len(buffer.getvalue()) // 2])
        raise OSError("disk full")

    monkeypatch.setattr(pq, "write_table", torn_write)
    log_steps(w, range(3, 6))
    with pytest.raises(OSError, match="disk full"):
        w.flush()
    assert files_in(w.folder) == ["part-000000000-000000002.parquet"]
    pd.testing.assert_frame_equal(read_curves(tmp_path), before)
    pd.read_parquet(tmp_path)  # the dataset still opens

    monkeypatch.setattr(pq, "write_table", real_write)
    w.flush()  # the buffer survived the failed write
    assert read_curves(tmp_path)["step"].tolist() == list(range(6))


@pytest.mark.parametrize("cut", [-1, 2, 3, 5, 8, 20])
def test_truncate_after_removes_exactly_the_later_rows_so_a_resume_counts_none_twice(tmp_path, cut):
    w = CurveWriter(tmp_path, "s", "k", "r", flush_rows=4)
    log_steps(w, range(10))  # parts 0-3 and 4-7 on disk, 8-9 buffered
    w.truncate_after(cut)
    kept = min(max(cut + 1, 0), 10)  # rows 0 … cut survive
    log_steps(w, range(kept, 12), loss=lambda s: -s)  # the resumed run logs different values
    w.close()
    df = read_curves(tmp_path)
    assert df["step"].tolist() == list(range(12))
    expected = [1.0 / (s + 1) for s in range(kept)] + [-float(s) for s in range(kept, 12)]
    assert df["train_loss"].tolist() == expected
    assert all(n.startswith("part-") for n in files_in(w.folder))
    for path in w.folder.iterdir():
        assert "run" not in pq.read_schema(path).names


def test_straddling_part_is_rewritten_with_its_new_step_range(tmp_path):
    w = CurveWriter(tmp_path, "s", "k", "r", flush_rows=4)
    log_steps(w, range(8))
    w.truncate_after(5)
    assert files_in(w.folder) == ["part-000000000-000000003.parquet", "part-000000004-000000005.parquet"]


def test_rows_with_and_without_val_loss_read_as_one_table(tmp_path):
    w = CurveWriter(tmp_path, "s", "k", "r", flush_rows=3)
    for s in range(6):  # the first part has no val_loss and no extra column at all
        row = {"step": s, "train_loss": 1, "tokens": 100 * s}
        if s == 4:
            row |= {"val_loss": 0.5, "note": "eval"}
        w.log(row)
    w.close()
    for df in (pd.read_parquet(tmp_path), read_curves(tmp_path)):
        assert df["val_loss"].isna().tolist() == [True] * 4 + [False, True] and df["val_loss"][4] == 0.5
        assert df["train_loss"].dtype == "float64" and df["tokens"].dtype == "float64"  # ints kept float64
    df = read_curves(tmp_path)  # extra columns that start in a later part are unified in
    assert df["note"].isna().tolist() == [True] * 4 + [False, True] and df["note"][4] == "eval"
    table = ds.dataset(tmp_path, format="parquet", partitioning="hive").to_table()
    assert table.num_rows == 6 and "val_loss" in table.schema.names


@pytest.mark.parametrize("field,value", [("study", "a/b"), ("kind", "x y"), ("run", ""), ("run", ".."), ("run", "r=1")])
def test_bad_partition_values_raise_naming_the_field(tmp_path, field, value):
    names = {"study": "s", "kind": "k", "run": "r"} | {field: value}
    with pytest.raises(ValueError, match=rf"^{field}: "):
        CurveWriter(tmp_path, **names)


@pytest.mark.parametrize("row", [{"loss": 1.0}, {"step": 1.5}, {"step": 1, "run": "x"}, {"step": 1, "x": [1]}])
def test_bad_rows_raise(tmp_path, row):
    with pytest.raises(ValueError, match="curves row"):
        CurveWriter(tmp_path, "s", "k", "r").log(row)


def test_compact_merges_a_runs_parts_into_one_with_every_row_once(tmp_path):
    w = CurveWriter(tmp_path, "s", "proxy", "r", flush_rows=3)
    log_steps(w, range(1, 9))
    w.log({"step": 9, "train_loss": 0.1, "val_loss": 0.2, "signal": "x"})  # a column the earlier parts lack
    before = read_curves(tmp_path)
    w.compact()
    assert files_in(w.folder) == ["part-000000001-000000009.parquet"]
    after = read_curves(tmp_path)
    pd.testing.assert_frame_equal(after, before[after.columns])
    assert read_run(w.folder)["step"].tolist() == list(range(1, 10))


def test_an_interrupted_compaction_is_read_once_and_cleaned_by_the_next_writer(tmp_path):
    # a kill between writing the merged part and removing the old ones leaves both on disk
    w = CurveWriter(tmp_path, "s", "proxy", "r", flush_rows=2)
    log_steps(w, range(1, 7))
    merged = ds.dataset(str(w.folder)).to_table().sort_by("step")
    write_part(w.folder, merged)
    assert len(files_in(w.folder)) == 4
    assert read_curves(tmp_path)["step"].tolist() == [1, 2, 3, 4, 5, 6]
    assert read_run(w.folder)["step"].tolist() == [1, 2, 3, 4, 5, 6]
    CurveWriter(tmp_path, "s", "proxy", "r")
    assert files_in(w.folder) == ["part-000000001-000000006.parquet"]


def test_a_part_is_a_leftover_only_inside_a_part_of_its_own_run(tmp_path):
    w = CurveWriter(tmp_path, "s", "proxy", "r", flush_rows=2)
    log_steps(w, range(1, 5))  # parts 1-2 and 3-4
    other = CurveWriter(tmp_path, "s", "proxy", "r2", flush_rows=2)
    log_steps(other, range(1, 3))  # the same range in another run is not inside this run's parts
    assert len(read_curves(tmp_path)) == 6
