"""A results root copied or moved elsewhere reads its own files: the paths a sweep stores (a trial's `runs` and
`curves`, a launch record's folders, a transferred config's `output.root`) are read under the root they are read
from (sweep/paths.py `stored_path`, `load_run_config`), whether written relative (now) or absolute (before).

From the copy, `results` (its runs and curves plot), `sql`, `status`, `report` and `launch` answer as from the
original, with the original gone; and with it in place, nothing under it is stat'ed, listed or opened."""
import builtins
import io
import json
import os
import re
import shutil
import sqlite3
from contextlib import contextmanager
from pathlib import Path

import pytest

from sweep.errors import InputError
from sweep.paths import stored_path
from sweep.study.lookup import read_curve
from tests.sweep_helpers import load, run_sweep, write_spec
from trainer.config import RunConfig

JOIN = ("SELECT c.kind, c.run, t.study, t.number, t.value, max(c.step) AS last_step, count(*) AS rows "
        "FROM curves c JOIN runs r ON c.study = r.sweep AND c.run = r.run "
        "JOIN trials t ON t.study = r.provenance_study AND t.number = r.provenance_trial "
        "GROUP BY ALL ORDER BY c.kind, t.number")

COMMANDS = {"results": ("results", "tiny", "--format", "json"), "report": ("report", "tiny"),
            "join": ("sql", JOIN, "--format", "csv"), "status": ("status", "--format", "json"),
            "trials": ("sql", "SELECT study, number, value, runs FROM trials ORDER BY number", "--format", "csv")}


@pytest.fixture(scope="module")
def original(tmp_path_factory):
    """A 2-trial proxy sweep and a full run from trial 0, launched from its config under ROOT/tiny/transfer/ (its
    output.root this root, absolute, as `sweep transfer` writes it)."""
    root = tmp_path_factory.mktemp("original").resolve()
    done = run_sweep(root, "proxy", write_spec(root, trials=2), "--width", "16")
    assert done.returncode == 0, done.stderr
    proxy = RunConfig.load(root / "tiny" / "runs" / "w16-mup-t00000-s0" / "config.yaml")
    full = RunConfig.parse({**proxy.model_dump(), "steps": 10,
                            "output": {**proxy.output.model_dump(), "root": str(root), "kind": "full", "run": "full"},
                            "provenance": {"study": "tiny-w16-mup", "trial": 0, "created_by": "sweep transfer"}})
    config = root / "tiny" / "transfer" / "w16.yaml"
    config.parent.mkdir()
    config.write_text(full.to_yaml())
    launched = run_sweep(root, "launch", config)
    assert launched.returncode == 0, launched.stderr
    return root


@pytest.fixture(params=["now", "before"])
def copied(request, original, tmp_path) -> Path:
    """The original root copied elsewhere; its trials' paths as written now (relative) or before (absolute)."""
    copy = tmp_path / "elsewhere" / "studies"
    shutil.copytree(original, copy, symlinks=True)
    if request.param == "before":
        with sqlite3.connect(copy / "tiny" / "optuna.db") as db:
            rows = db.execute("SELECT trial_user_attribute_id, key, value_json FROM trial_user_attributes "
                              "WHERE key IN ('runs', 'curves')").fetchall()
            for row, key, value in rows:
                value = json.loads(value)
                absolute = [str(original / v) for v in value] if key == "runs" else str(original / value)
                db.execute("UPDATE trial_user_attributes SET value_json = ? WHERE trial_user_attribute_id = ?",
                           (json.dumps(absolute), row))
    return copy


def answers(root: Path, run_cli, monkeypatch) -> dict:
    """What the readers of stored paths say with `root` as SWEEP_ROOT, its own path written ROOT."""
    monkeypatch.setenv("SWEEP_ROOT", str(root))
    monkeypatch.chdir(root.parent)
    shutil.rmtree(root / "tiny" / "plots", ignore_errors=True)
    said = {}
    for name, args in {**COMMANDS, "launch": ("launch", root / "tiny" / "transfer" / "w16.yaml")}.items():
        code, out, err = run_cli(*args)
        assert code == 0, (name, out, err)
        said[name] = out.replace("\n", "").replace(str(root), "ROOT")  # rich wraps long lines
    page = (root / "tiny" / "report.html").read_text()
    said["report"] = re.findall(r'<section id="([a-z-]+)"><h2>[^<]*</h2><p class="missing">', page)
    said["plots"] = sorted(p.name for p in (root / "tiny" / "plots" / "tiny-w16-mup").iterdir())
    said["curves"] = [read_curve(t, root)["val_loss"].dropna().tolist() for t in load(root).trials]
    return said


def test_a_copied_root_answers_as_its_original_with_the_original_gone(original, copied, run_cli, monkeypatch):
    """Before: the copy's trials named the old root's curves (refused: no curves plot), its status read the old
    root's curve (refused, or no step once it was gone) and its launch resumed the run in the old root's place."""
    expected = answers(original, run_cli, monkeypatch)
    assert "curves.png" in expected["plots"] and expected["report"] == ["coord-check", "verify"]
    assert '"state": "done"' in expected["status"] and '"step": 10' in expected["status"]
    gone = original.rename(original.with_name("gone"))
    try:
        assert answers(copied, run_cli, monkeypatch) == expected
        assert not original.exists()  # nothing written where it was
    finally:
        shutil.rmtree(original, ignore_errors=True)  # what a launch wrote in its place, had it written there
        gone.rename(original)


@contextmanager
def watched(folder: Path):
    """The paths under `folder` this process stats, lists or opens meanwhile (os.stat, os.lstat, os.scandir,
    os.listdir, open: how pathlib, glob and realpath reach a file before Arrow or DuckDB read it)."""
    top, touched = Path(os.path.abspath(folder)), []

    def watching(call):
        def wrapper(path=".", *args, **kwargs):
            if isinstance(path, str | os.PathLike) and Path(os.path.abspath(os.fspath(path))).is_relative_to(top):
                touched.append(f"{call.__name__} {path}")
            return call(path, *args, **kwargs)
        return wrapper

    with pytest.MonkeyPatch.context() as patch:
        for owner, name in ((os, "stat"), (os, "lstat"), (os, "scandir"), (os, "listdir"), (builtins, "open"),
                            (io, "open")):
            patch.setattr(owner, name, watching(getattr(owner, name)))
        yield touched


def test_a_copied_root_reads_nothing_under_its_original(original, copied, run_cli, monkeypatch):
    """Before: ~300 paths of the old root stat'ed (each trial's curves, the launch record's folders, the launched
    config's run folder), a boundary violation, though the copy held all of them."""
    with watched(original) as touched:
        said = answers(copied, run_cli, monkeypatch)
    assert touched == []
    assert "curves.png" in said["plots"] and '"step": 10' in said["status"] and "done: step 10" in said["launch"]


def test_a_stored_path_is_read_under_the_root_it_is_read_from_and_nothing_outside_it(tmp_path):
    root, old = tmp_path / "copy", "/old/studies/tiny"
    assert stored_path("tiny/runs/r", root, "runs") == root / "tiny" / "runs" / "r"  # as written now
    assert stored_path(str(root / "tiny/runs/r"), root, "runs") == root / "tiny" / "runs" / "r"
    assert stored_path(f"{old}/runs/r", root, "runs") == root / "tiny" / "runs" / "r"  # as written before
    assert stored_path(f"{old}/curves/study=tiny/kind=proxy/run=r", root, "curves") == \
        root / "tiny" / "curves" / "study=tiny" / "kind=proxy" / "run=r"
    assert stored_path(f"{root}/../x/tiny/runs/r", root, "runs") == root / "tiny" / "runs" / "r"  # `..` folded first
    for value in ("../x", "tiny/../../x", "", "a\0b", 5, ["tiny/runs/r"], None):
        with pytest.raises(InputError):
            stored_path(value, root, "runs")


def test_a_copied_launch_record_names_the_copys_folders_to_every_reader(original, tmp_path):
    """`sweep status` re-rooted the record's folders, but `sweep launch` (which re-attaches a SLURM job and follows
    its curve) read them as written: the old root's. The record is re-rooted where it is read."""
    from sweep.runs.record import read_record

    copy = tmp_path / "moved"
    shutil.copytree(original, copy, symlinks=True)
    record = read_record(copy / "tiny" / "runs" / "full")
    assert json.loads((copy / "tiny" / "runs" / "full" / "launch.json").read_text())["curve"].startswith(str(original))
    assert {key: Path(record[key]) for key in ("run_dir", "checkpoints", "curve")} == {
        "run_dir": copy / "tiny" / "runs" / "full", "checkpoints": copy / "tiny" / "runs" / "full" / "checkpoints",
        "curve": copy / "tiny" / "curves" / "study=tiny" / "kind=full" / "run=full"}
