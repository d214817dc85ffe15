"""Security, second pass (issue 36): the five holes an outside tester found, each fixed as a class in the boundary
layer, each with the test that would have caught it.

1. a sharded (DCP) checkpoint whose `.metadata` points an entry at a pickle: its bytes entries load as weights only;
   the payload never runs (a marker file that must not appear), and an entry's file never leaves the checkpoint;
2. shell lines in the SLURM batch script (`sweep_slurm_fields.py`, beside this file);
3. writes outside the results root through a study name stored in a storage;
4. markup in the pages (plots.html, the report's title, heading and coordinate-check line);
5. reads through links out of the root: the sweep's storage file, a checkpoint (file, folder, or a file in it).
"""
from __future__ import annotations

import dataclasses
import os
import pickle
from pathlib import Path

import pytest
import torch
import yaml

from tests.sweep_helpers import file_tree
from tests.test_fsdp import config
from trainer.checkpoint import list_checkpoints
from trainer.checkpoint_sharded import SafeReader
from trainer.config import RunConfig
from trainer.loop import train

TINY = {"steps": 2, "eval": {"every": 2, "batches": 1, "noise_scale_batches": 0}}


class Payload:
    """Unpickling it touches `marker` (what an edited checkpoint would run)."""

    def __init__(self, marker: Path):
        self.marker = marker

    def __reduce__(self):
        return os.system, (f"touch {self.marker}",)


@pytest.fixture(scope="module")
def sharded(tmp_path_factory) -> tuple[dict, Path]:
    """A finished 2-step FSDP run (one process): its config and its sharded checkpoint folder."""
    root = tmp_path_factory.mktemp("sharded")
    data = config(root / "results", "r", **TINY)
    assert train(RunConfig.parse(data)).status == "completed"
    [last] = list_checkpoints(RunConfig.parse(data).run_dir() / "checkpoints")
    return data, last


def write_config(folder: Path, data: dict) -> Path:
    path = folder / "run.yaml"
    path.write_text(yaml.safe_dump({**data, "steps": 3}))
    return path


def edit_index(folder: Path, entry: str, relative_path: str, payload: bytes) -> None:
    """Point the index's `entry` (a bytes entry: the optimizer's param_groups hold them) at `payload` in the file
    `relative_path` of the checkpoint folder, as a hostile edit would."""
    metadata = SafeReader(folder).read_metadata()
    target = folder / relative_path
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(payload)
    for index, info in metadata.storage_data.items():
        if index.fqn == entry:
            metadata.storage_data[index] = dataclasses.replace(info, relative_path=relative_path, offset=0,
                                                               length=len(payload))
    metadata.storage_meta = None
    (folder / ".metadata").write_bytes(pickle.dumps(metadata))


@pytest.mark.parametrize("where", ["beside", "outside"])
def test_a_pickled_bytes_entry_of_a_sharded_checkpoint_is_refused_and_never_runs(sharded, tmp_path, run_cli,
                                                                                 monkeypatch, where):
    """`sweep train --resume` of an FSDP run whose index points a bytes entry at a pickled payload, in a file of the
    checkpoint (torch's own loader unpickles bytes entries with weights_only=False) or in a file outside it
    (`../`): one line naming the checkpoint, exit 2, the marker never appears, nothing written."""
    import shutil

    data, original = sharded
    root = tmp_path / "results"
    shutil.copytree(Path(data["output"]["root"]), root, symlinks=True)
    data = {**data, "output": {**data["output"], "root": str(root)}}
    [folder] = list_checkpoints(RunConfig.parse(data).run_dir() / "checkpoints")
    marker = tmp_path / "the-payload-ran"
    payload = io_bytes(Payload(marker))
    relative = "evil.distcp" if where == "beside" else "../../../../../../outside.distcp"
    edit_index(folder, "optimizer.param_groups.0.lr", relative, payload)
    # the edit is live: DCP's own planner runs it
    if where == "beside":
        import torch.distributed.checkpoint as dcp

        dcp.load({"optimizer.param_groups.0.lr": 0.0}, checkpoint_id=folder, no_dist=True)
        assert marker.exists()
        marker.unlink()
    path = write_config(tmp_path, data)
    monkeypatch.chdir(tmp_path)
    before = file_tree(tmp_path)

    code, out, err = run_cli("train", path, "--resume")

    assert code == 2 and err.count("\n") == 1, (out, err)
    assert err.startswith(f"error: checkpoint: {folder} is refused"), err
    assert not marker.exists() and file_tree(tmp_path) == before


def io_bytes(value) -> bytes:
    import io

    buffer = io.BytesIO()
    torch.save(value, buffer)
    return buffer.getvalue()


# ------------------------------------------------------------------ 5. reads through links out of the root

def unsharded_run(root: Path) -> dict:
    return {"model": {"name": "gpt", "width": 16, "depth": 1, "options": {"block_size": 16}},
            "data": {"kind": "synthetic-tokens", "seq_len": 16, "options": {"n_tokens": 4000}},
            "batch_size": 2, "steps": 2, "checkpoint": {"every": 2}, "log_every": 1,
            "eval": {"every": 2, "batches": 1, "noise_scale_batches": 0},
            "output": {"root": str(root), "study": "s", "run": "r"}}


def link_out(path: Path, outside: Path) -> None:
    """Move `path` out of the root to `outside` and leave a link to it in its place."""
    outside.parent.mkdir(parents=True, exist_ok=True)
    path.rename(outside)
    path.symlink_to(outside, target_is_directory=outside.is_dir())


@pytest.mark.parametrize("what", ["checkpoint-file", "checkpoints-folder", "sharded-folder", "file-in-sharded"])
def test_a_checkpoint_linked_out_of_the_root_is_refused_and_never_read(sharded, tmp_path, run_cli, monkeypatch,
                                                                      what):
    """`sweep train --resume` where the checkpoint (a file; the checkpoints folder; a sharded checkpoint's folder or a
    file in it) is a link out of the results root: one line naming it, exit 2, nothing written."""
    import shutil

    root = tmp_path / "results"
    if what.startswith(("checkpoint-", "checkpoints-")):
        data = unsharded_run(root)
        assert train(RunConfig.parse(data)).status == "completed"
    else:
        data, _ = sharded
        shutil.copytree(Path(data["output"]["root"]), root, symlinks=True)
        data = {**data, "output": {**data["output"], "root": str(root)}}
    folder = RunConfig.parse(data).run_dir() / "checkpoints"
    [last] = list_checkpoints(folder)
    target = {"checkpoint-file": last, "checkpoints-folder": folder, "sharded-folder": last,
              "file-in-sharded": last / "__0_0.distcp"}[what]
    link_out(target, tmp_path / "elsewhere" / target.name)
    path = write_config(tmp_path, data)
    monkeypatch.chdir(tmp_path)
    before = file_tree(tmp_path)

    code, out, err = run_cli("train", path, "--resume")

    assert code == 2 and err.count("\n") == 1, (out, err)
    assert err.startswith("error: checkpoint: ") and "leads out of the results root" in err, err
    assert file_tree(tmp_path) == before


# ------------------------------------------------------------------ 3, 4. stored study names; markup in the pages

def sweep_db(path: Path, study_name: str, trials: int = 3) -> None:
    """An Optuna storage holding sweep `ro`'s study, named `study_name`, with `trials` COMPLETE trials."""
    import optuna

    path.parent.mkdir(parents=True, exist_ok=True)
    storage = optuna.storages.RDBStorage(f"sqlite:///{path}")
    study = optuna.create_study(storage=storage, study_name=study_name)
    for key, value in {"spec_name": "ro", "width": 16, "parametrization": "mup"}.items():
        study.set_user_attr(key, value)
    study.optimize(lambda t: (t.suggest_float("optimizer.lr", 1e-3, 1e-1, log=True) - 0.01) ** 2
                   + t.suggest_float("optimizer.weight_decay", 0.0, 0.1), n_trials=trials)
    storage.remove_session()
    storage.engine.dispose()


HOSTILE_NAMES = {"dotdot": "../../../X", "markup": "<script>alert(1)</script>", "dotdot-in-suffix": "ro-w16-../../X",
                 "newline": "ro\n<b>x", "hidden": ".ro-w16-mup"}


@pytest.mark.parametrize("command", ["results", "report"])
@pytest.mark.parametrize("name", HOSTILE_NAMES)
def test_a_stored_study_name_that_is_not_a_name_is_refused_and_nothing_is_written(tmp_path, run_cli, monkeypatch,
                                                                                   command, name):
    """`sweep results ro` / `sweep report ro` where the storage holds sweep ro's study under a name with `../` or
    markup: one line naming the study, exit 2, nothing written inside or outside the root."""
    root = tmp_path / "root"
    sweep_db(root / "ro" / "optuna.db", HOSTILE_NAMES[name])
    monkeypatch.setenv("SWEEP_ROOT", str(root))
    monkeypatch.chdir(tmp_path)
    before = file_tree(tmp_path)

    code, out, err = run_cli(command, "ro")

    assert code == 2 and err.count("\n") == 1, (out, err)
    assert err.startswith("error: study: sqlite:///") and "refused" in err, err
    assert file_tree(tmp_path) == before


MARKUP = "<img src=x onerror=alert(1)>"


def test_every_text_of_the_report_and_plots_page_is_escaped(tmp_path, run_cli, monkeypatch):
    """A results root whose path holds markup (it reaches the coordinate-check line) and a study whose plots page
    is titled with markup: the pages hold the text escaped, never the tag."""
    import pandas as pd

    from sweep.results.plots import save_html

    root = tmp_path / MARKUP
    sweep_db(root / "ro" / "optuna.db", "ro-w16-mup")
    check = root / "coord-check" / "gpt-mup"
    check.mkdir(parents=True)
    (check / "coord_check.png").write_bytes(io_png())
    pd.DataFrame({"passed": [True, False]}).to_parquet(check / "verdict.parquet")
    monkeypatch.setenv("SWEEP_ROOT", str(root))
    monkeypatch.chdir(tmp_path)

    code, out, err = run_cli("report", "ro")

    assert code == 0, (out, err)
    page = (root / "ro" / "report.html").read_text()
    assert MARKUP not in page and "1 of 2 module checks pass" in page
    assert "&lt;img src=x onerror=alert(1)&gt;" in page
    import plotly.graph_objects as go

    titled = save_html([("history", go.Figure()), (MARKUP, go.Figure())], tmp_path / "plots.html", MARKUP)
    text = titled.read_text()
    assert MARKUP not in text and text.count("&lt;img src=x onerror=alert(1)&gt;") == 3


def io_png() -> bytes:
    import io

    from PIL import Image

    buffer = io.BytesIO()
    Image.new("RGB", (4, 4)).save(buffer, format="png")
    return buffer.getvalue()


@pytest.mark.parametrize("command", [("results", "ro"), ("sql", "SELECT count(*) FROM trials"),
                                     ("sql", "SELECT count(*) FROM trials", "--study", "ro"), ("report", "ro"),
                                     ("export", "ro")])
def test_a_storage_file_linked_out_of_the_root_is_refused_and_never_read(tmp_path, run_cli, monkeypatch, command):
    """ROOT/ro/optuna.db a link to a storage outside the root: results, sql (every sweep, one sweep), report and
    export refuse it in one line, exit 2, and write nothing."""
    root = tmp_path / "root"
    sweep_db(tmp_path / "elsewhere" / "optuna.db", "ro-w16-mup")
    (root / "ro").mkdir(parents=True)
    (root / "ro" / "optuna.db").symlink_to(tmp_path / "elsewhere" / "optuna.db")
    monkeypatch.setenv("SWEEP_ROOT", str(root))
    monkeypatch.chdir(tmp_path)
    before = file_tree(tmp_path)

    code, out, err = run_cli(*command)

    assert code == 2 and err.count("\n") == 1, (out, err)
    assert err.startswith("error: storage: ") and "leads out of the results root" in err, err
    assert file_tree(tmp_path) == before
