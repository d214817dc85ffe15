"""The classes of input that ended in tracebacks, hangs or a wrong success (issue 36), through the `sweep` command:
sizes and counts past what a machine can do, numbers past machine range, deep YAML, files the tool wrote and
someone damaged, paths the file system refuses, storages that cannot work, a half-installed scheduler. Each case:
exit 2, one line on stderr naming the field or the file, the folder trees unchanged, no study created (the
machinery of tests/test_bad_input.py). A case per kind of bound (sweep/study/bounds.py), not per flag.
"""
from __future__ import annotations

import json
import os
import stat
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.sweep_helpers import write_spec
from tests.test_bad_input import Case, file, proxy, run_config, spec_text, studies, tree

BIG = "9" * 5000  # past Python's 4,300-digit limit for int()
LONG_NAME = "x" * 300  # past NAME_MAX
DEEP_PATH = "/".join(["d" * 200] * 25)  # past PATH_MAX


def cli(*args) -> Callable[[Path], list]:
    return lambda root: [a(root) if callable(a) else a for a in args]


def launched(root: Path, run: str = "r", **changes) -> Path:
    """A tiny run launched locally (in this process) to the end: launch.json, result.json, curve, checkpoint."""
    from sweep.cli import main

    path = run_config(root, f"{run}.yaml", **{"output.run": run, **changes})
    argv = os.sys.argv
    os.sys.argv = ["sweep", "launch", str(path)]
    try:
        main()
    except SystemExit as stop:
        assert stop.code == 0
    finally:
        os.sys.argv = argv
    return root / "results" / "bad" / "runs" / run


def damaged(edit: Callable[[Path], None], *args) -> Callable[[Path], list]:
    """Runs `r` and `s` launched, then `edit(run folder of r)`, then the command `args` (callables get the root)."""
    def make(root: Path) -> list:
        launched(root, "s")
        edit(launched(root, "r"))
        return [a(root) if callable(a) else a for a in args]
    return make


def part_of(run_dir: Path) -> Path:
    return next((run_dir.parents[1] / "curves").glob(f"study=bad/kind=*/run={run_dir.name}/part-*.parquet"))


def cut_part(run_dir: Path) -> None:
    part = part_of(run_dir)
    part.write_bytes(part.read_bytes()[:40])


def record_edit(**fields) -> Callable[[Path], None]:
    """launch.json with `fields` set (None: removed); result.json removed, so the record is what is read."""
    def edit(run_dir: Path) -> None:
        record = json.loads((run_dir / "launch.json").read_text())
        for key, value in fields.items():
            record.pop(key) if value is None else record.update({key: value})
        (run_dir / "launch.json").write_text(json.dumps(record))
        (run_dir / "result.json").unlink()
    return edit


def checkpoints_a_file(run_dir: Path) -> None:
    for path in (run_dir / "checkpoints").iterdir():
        path.unlink()
    (run_dir / "checkpoints").rmdir()
    (run_dir / "checkpoints").write_text("not a folder")


def half_installed_slurm(root: Path) -> list:
    """sinfo answers, nothing else of SLURM is on PATH (stub binaries only)."""
    stubs = root / "stubs"
    stubs.mkdir()
    (stubs / "sinfo").write_text("#!/bin/sh\necho 'slurm 23.02.0'\n")
    (stubs / "sinfo").chmod(stat.S_IRWXU)
    os.environ["PATH"] = str(stubs)  # restored by monkeypatch (the test sets PATH first)
    return ["launch", run_config(root), "--backend", "slurm"]


RANGE_1E20 = {"batch_size": {"type": "int", "low": 1, "high": 10**20}}
CASES = {
    # ---- sizes and counts: one bound per kind (sweep/study/bounds.py)
    "count-trials-flag": Case(proxy("--width", "16", "--trials", str(10**23)), ("--trials:", "at most 1000000")),
    "count-trials-spec": Case(proxy(trials=10**17), ("trials:", "less than or equal to 1000000")),
    "count-coord-check-steps": Case(cli("coord-check", "--model", "mlp", "--steps", str(10**9)),
                                    ("--steps:", "at most 1000")),
    "count-widths-list": Case(cli("coord-check", "--model", "mlp", "--widths", ",".join(map(str, range(8, 10_008)))),
                              ("--widths:", "at most 64 values, got 10000")),
    "count-inspect-width": Case(cli("inspect", "gpt", "--width", str(10**9)), ("--width:", "at most 1048576")),
    "count-doctor-width": Case(lambda root: ["doctor", run_config(root), "--width", str(10**9)],
                               ("--width:", "at most 1048576")),
    "count-workers": Case(proxy("--width", "16", "--workers", str(10**6)), ("--workers:", "at most 1024")),
    "count-nproc": Case(lambda root: ["launch", run_config(root), "--nproc", "5000"], ("--nproc:", "at most 1024")),
    "count-verify-seeds": Case(lambda root: ["verify", write_spec(root), "--seeds", str(10**11)],
                               ("--seeds:", "at most 1000")),
    # ---- numbers past machine range
    "range-5000-digit-seed": Case(spec_text(f"name: tiny\nsampler: {{name: tpe, seed: {BIG}}}\n"
                                            "search: {optimizer.lr: 0.01}\n"), ("spec:", "an integer of 5000")),
    "range-5000-digit-flag": Case(proxy("--width", "16", "--trials", BIG), ("--trials",)),
    "range-int-search-to-1e20": Case(proxy(search=RANGE_1E20), ("search.batch_size", "at most 2^53")),
    "range-lr-max-1e300": Case(lambda root: ["doctor", run_config(root), "--lr-max", "1e300"],
                               ("--lr-max:", "at most 10000")),
    # ---- deep YAML, under 1 MiB
    "yaml-50000-nested-lists": Case(spec_text("name: x\nrun: " + "[" * 50_000 + "]" * 50_000 + "\n"),
                                    ("spec:", "nests deeper than 100")),
    "yaml-30000-nested-mappings": Case(lambda root: ["train", file(root, "run.yaml", "run: " + "{a: " * 30_000 + "1"
                                                                   + "}" * 30_000 + "\n")],
                                       ("config:", "nests deeper than 100")),
    # ---- files the tool wrote, damaged
    "damaged-part-sql": Case(damaged(cut_part, "sql", "SELECT count(*) AS n FROM curves"),
                             ("curve part:", "part-", "is damaged")),
    "damaged-part-export": Case(damaged(cut_part, "export", "bad"), ("curve part:", "is damaged")),
    "damaged-part-compare": Case(damaged(cut_part, "compare", "r", "s"), ("curve part:", "is damaged")),
    "damaged-record-missing-field-status": Case(damaged(record_edit(curve=None), "status"),
                                                ("launch record:", "launch.json is damaged", "'curve'")),
    "damaged-record-mistyped-field-launch": Case(damaged(record_edit(process="x"), lambda root: "launch",
                                                         lambda root: root / "r.yaml"),
                                                 ("launch record:", "launch.json is damaged", "'process'")),
    "damaged-result-train-resume": Case(damaged(lambda run: (run / "result.json").write_text("{bad"), "train",
                                                lambda root: root / "r.yaml", "--resume"),
                                        ("run result:", "result.json is damaged")),
    "damaged-checkpoints-a-file": Case(damaged(checkpoints_a_file, "train", lambda root: root / "r.yaml",
                                               "--resume"), ("output.run:", "checkpoints is a file")),
    # ---- wrong success: another config's finished run is not this one's
    "wrong-success-launch-of-another-config": Case(damaged(lambda run: None, "launch",
                                                           lambda root: run_config(root, "other.yaml", **{
                                                               "output.run": "r", "model.width": 32})),
                                                   ("output.run:", "holds another run's config")),
    "wrong-success-demo-workers-0": Case(cli("demo", "--workers", "0"), ("--workers:", "at least 1")),
    # ---- paths the file system refuses; storages that cannot work
    "path-storage-name-over-255": Case(proxy("--width", "16", "--storage", f"sqlite:////tmp/{LONG_NAME}.db"),
                                       ("storage:", "names of at most 255 bytes")),
    "path-journal-name-over-255": Case(lambda root: ["proxy", write_spec(root), "--width", "16", "--storage",
                                                     f"journal:{root}/{LONG_NAME}.log"], ("storage:", "255 bytes")),
    "path-storage-over-4096": Case(proxy("--width", "16", "--storage", f"sqlite:////tmp/{DEEP_PATH}/x.db"),
                                   ("storage:", "a path of at most 4095 bytes")),
    "path-study-name-over-255": Case(cli("results", LONG_NAME, "--no-plots"), ("STUDY:", "names of at most 255")),
    "storage-sqlite-in-memory": Case(proxy("--width", "16", "--storage", "sqlite://"),
                                     ("storage:", "in memory", "sqlite:///PATH")),
    "storage-sqlite-in-proc": Case(proxy("--width", "16", "--storage", "sqlite:////proc/x.db"),
                                   ("storage:", "cannot open")),
    "scheduler-half-installed": Case(half_installed_slurm, ("--backend slurm:", "half installed", "srun")),
}


@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
def test_each_class_is_one_line_exit_2_and_nothing_written(tmp_path, run_cli, monkeypatch, case):
    results = tmp_path / "results"
    results.mkdir()
    monkeypatch.setenv("SWEEP_ROOT", str(results))
    monkeypatch.setenv("PATH", os.environ["PATH"])  # restored after a case that narrows it
    monkeypatch.chdir(tmp_path)
    args = case.make(tmp_path)
    before, before_studies = tree(tmp_path), studies(tmp_path)

    code, out, err = run_cli(*args)

    assert code == 2, (out, err)
    assert err.startswith("error: ") and err.endswith("\n") and err.count("\n") == 1, err
    for expected in case.expect:
        assert expected in err, f"{expected!r} not in {err!r}"
    assert "Traceback" not in out + err
    assert tree(tmp_path) == before and studies(tmp_path) == before_studies


def float_flags() -> list[tuple[str, str]]:
    """(command, option) of every float option of every command, as the command line builds them."""
    import typer

    from sweep.argv.values import is_float
    from sweep.cli import app

    commands = typer.main.get_command(app).commands
    return [(name, param.opts[0]) for name, command in commands.items() for param in command.params
            if is_float(param)]


@pytest.mark.parametrize("value", ["nan", "inf", "-Infinity", "1e400"])
def test_every_float_flag_refuses_a_nan_or_an_infinity_as_not_finite(run_cli, value):
    """The class, not one flag: typer's range check met a nan or infinity first, so `--device-memory nan` read
    "less than or equal to 1048576" and `doctor --lr-max nan` "greater than or equal to 0", bounds it never passed.
    Checked as typed, before any argument is missing or any file read."""
    flags = float_flags()
    assert ("transfer", "--device-memory") in flags and ("doctor", "--lr-max") in flags and len(flags) > 10
    for command, flag in flags:
        code, out, err = run_cli(command, flag, value)
        assert code == 2 and err.count("\n") == 1, (command, err)
        assert err.startswith(f"error: {flag}: must be a finite number") and err.endswith(f", got {value}\n"), err


@pytest.mark.parametrize("root", [f"/tmp/{LONG_NAME}", f"/tmp/{DEEP_PATH}"], ids=["name-over-255", "over-4096"])
def test_a_sweep_root_the_file_system_refuses_is_one_line(tmp_path, run_cli, monkeypatch, root):
    monkeypatch.setenv("SWEEP_ROOT", root)
    code, _, err = run_cli("status")
    assert code == 2 and err.startswith("error: results root ($SWEEP_ROOT):") and err.count("\n") == 1, err


def test_status_lists_the_other_runs_beside_a_damaged_record(tmp_path, run_cli, monkeypatch):
    monkeypatch.setenv("SWEEP_ROOT", str(tmp_path / "results"))
    monkeypatch.chdir(tmp_path)
    damaged(record_edit(job=7), "status")(tmp_path)

    code, out, err = run_cli("status")

    assert code == 2 and "launch.json is damaged" in err and err.count("\n") == 1, err
    assert "│ s " in out and "│ r " not in out, out


@pytest.mark.parametrize("command", [("proxy", "--width", "256"),
                                     ("verify", "--widths", "16,256", "--seeds", "1", "--range", "2^-7,2^-3,3"),
                                     ("plan", "--width", "1024", "--tokens", "40960", "--proxy-width", "256")])
def test_a_user_builder_that_raises_is_one_line_exit_2_and_nothing_written(tmp_path, run_cli, monkeypatch, command):
    """Found by an outside tester: a builder raising anything but a ValueError or TypeError (a RuntimeError of its
    own) was a traceback and exit 1, the code verify gives a drifting model and plan a budget short of its goal."""
    results = tmp_path / "results"
    results.mkdir()
    monkeypatch.setenv("SWEEP_ROOT", str(results))
    spec = write_spec(tmp_path, run={"model": {"name": "tests.failing:gpt_failing_at_256"}})
    if command[0] == "verify":  # it starts from the proxy's sweep, which builds at width 16
        assert run_cli("proxy", spec, "--width", "16", "--trials", "1")[0] == 0
    before = tree(tmp_path)
    code, out, err = run_cli(command[0], spec, *command[1:])
    assert code == 2 and err.count("\n") == 1 and "Traceback" not in out + err, (out, err)
    said = "model.name: builder 'tests.failing:gpt_failing_at_256' raised RuntimeError at width 256, depth 1: this "
    assert err.startswith("error: ") and said in err and err.endswith("cannot be built at width 256\n"), err
    assert tree(tmp_path) == before
