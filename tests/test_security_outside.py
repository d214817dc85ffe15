"""Security, an outside tester's pass over the issue-36 fixes: variants the first fixes did not cover, each kept.

- a sharded (DCP) checkpoint whose `train_state.pt` is damaged (no `sharded` list, a part this run does not have,
  not a mapping) or whose index builds an allowed record from wrong arguments: one CheckpointError, no traceback,
  and a pickled payload in the index never runs;
- a study's stored spec naming its model (`spec.run.model.name`): a name read back, so `report` refuses a
  non-name (a mapping where a name should be, a newline, `../`) in one line, exit 2, nothing written;
- text read back shown in a table (`sql`, `results`, `compare`, `status`): Rich reads no markup in it (a stored
  `[/x]` was a MarkupError traceback) and a terminal escape is shown as its escape, never sent to the terminal;
- a trial's stored `curves` folder is read only inside the results root (`results`, `report` and `transfer` read
  it at any path the storage named);
- a run config's `output.root` with a control character or past the file system's lengths: one line naming
  `output.root`, exit 2 (it reaches folders and the SLURM script's `#SBATCH` lines; ENAMETOOLONG was a traceback).
"""
from __future__ import annotations

import os
import pickle
from pathlib import Path
from types import SimpleNamespace

import optuna
import pandas as pd
import pyarrow.parquet as pq
import pytest
import torch
import torch.distributed.checkpoint as dcp
import yaml

from sweep.study.lookup import read_curve
from tests.sweep_helpers import file_tree
from trainer.checkpoint import CheckpointError, check_in_root
from trainer.checkpoint_sharded import REST, load_sharded

RUN = {"model": {"name": "gpt", "width": 16, "depth": 1, "options": {"block_size": 16}},
       "data": {"kind": "synthetic-tokens", "seq_len": 16, "options": {"n_tokens": 4000}},
       "batch_size": 2, "steps": 2}
PARTS = {"model": lambda: {"w": torch.zeros(3)}, "optim": lambda: {"groups": [{"lr": 0.0, "name": ""}]}}


class Payload:
    def __init__(self, marker: Path):
        self.marker = marker

    def __reduce__(self):
        return os.system, (f"touch {self.marker}",)


def sharded(folder: Path) -> Path:
    """A sharded checkpoint as the trainer writes one: DCP's files and `train_state.pt` naming its parts."""
    dcp.save({"model": {"w": torch.ones(3)}, "optim": {"groups": [{"lr": 0.1, "name": "x"}]}}, checkpoint_id=folder,
             no_dist=True)
    torch.save({"sharded": ["model", "optim"], "step": 1}, folder / REST)
    return folder


def test_a_sharded_checkpoint_as_written_loads(tmp_path):
    state = load_sharded(sharded(tmp_path / "step"), PARTS)
    assert torch.equal(state["model"]["w"], torch.ones(3)) and state["step"] == 1


@pytest.mark.parametrize("rest", [{"step": 1}, {"sharded": ["elsewhere"]}, {"sharded": 5}, [1, 2], {"sharded": [3]}],
                         ids=["no-list", "unknown-part", "not-a-list", "not-a-mapping", "not-a-name"])
def test_a_damaged_train_state_of_a_sharded_checkpoint_is_one_refusal(tmp_path, rest):
    folder = sharded(tmp_path / "step")
    torch.save(rest, folder / REST)
    with pytest.raises(CheckpointError, match="train_state.pt is refused"):
        load_sharded(folder, PARTS)


# allowed records of DCP's index built from wrong arguments (torch.Size of a str; a layout that does not exist),
# a record's state that is no mapping, and a payload: each refused, none runs
INDEXES = {"size-of-a-str": b"\x80\x02ctorch\nSize\nX\x03\x00\x00\x00abc\x85R.",
           "unknown-layout": b"\x80\x02ctorch.serialization\n_get_layout\nX\x04\x00\x00\x00evil\x85R.",
           "state-not-a-dict": b"\x80\x02ctorch.distributed.checkpoint.metadata\nMetadata\n)\x81K\x05b."}


@pytest.mark.parametrize("index", [*INDEXES, "payload"])
def test_a_damaged_or_hostile_sharded_index_is_one_refusal_and_runs_nothing(tmp_path, index):
    folder, marker = sharded(tmp_path / "step"), tmp_path / "ran"
    (folder / ".metadata").write_bytes(pickle.dumps(Payload(marker)) if index == "payload" else INDEXES[index])
    with pytest.raises(CheckpointError, match="its sharded parts do not load"):
        load_sharded(folder, PARTS)
    assert not marker.exists()


@pytest.mark.parametrize("where", ["checkpoint", "sharded-part"])
def test_a_fifo_in_a_checkpoints_place_is_refused_before_it_is_read(tmp_path, where):
    """`train --resume` hung on a FIFO named like a checkpoint (or a sharded checkpoint's train_state.pt)."""
    folder = tmp_path / "root" / "runs" / "r" / "checkpoints"
    if where == "checkpoint":
        folder.mkdir(parents=True)
        path = folder / "step-000000002.pt"
        os.mkfifo(path)
    else:
        path = sharded(folder / "step-000000002")
        (path / REST).unlink()
        os.mkfifo(path / REST)
    with pytest.raises(CheckpointError, match="not a regular file or folder"):
        check_in_root(path, tmp_path / "root")


def stored_sweep(root: Path, name: str, spec: object = None, status: str = "ok", curves: str | None = None) -> Path:
    """ROOT/NAME/optuna.db with one μP study at width 32 (three complete trials), as a sweep leaves it, whose
    stored spec, trials' status text and curves folder are the given ones."""
    optuna.logging.set_verbosity(optuna.logging.ERROR)
    (root / name).mkdir(parents=True, exist_ok=True)
    study = optuna.create_study(study_name=f"{name}-w32-mup", storage=f"sqlite:///{root / name / 'optuna.db'}")
    for key, value in {"spec_name": name, "width": 32, "parametrization": "mup", "spec": spec}.items():
        if value is not None:
            study.set_user_attr(key, value)
    for i in range(3):
        trial = study.ask({"lr": optuna.distributions.FloatDistribution(1e-4, 1e-1, log=True)})
        trial.set_user_attr("status", status)
        if curves:
            trial.set_user_attr("curves", curves)
        study.tell(trial, 1.0 + i)
    return root / name / "optuna.db"


@pytest.mark.parametrize("spec", ["a string", {"run": ["x"]}, {"run": {"model": {"name": "a\nb"}}},
                                  {"run": {"model": {"name": "../../../../x"}}}, {"run": {"model": {"name": 5}}}],
                         ids=["spec-not-a-mapping", "run-not-a-mapping", "newline", "dot-dot", "not-a-str"])
def test_a_stored_model_name_that_is_not_a_name_is_refused_by_report_and_nothing_is_written(
        tmp_path, monkeypatch, run_cli, spec):
    root = tmp_path / "root"
    stored_sweep(root, "s1", spec=spec)
    monkeypatch.setenv("SWEEP_ROOT", str(root))
    before = file_tree(tmp_path)
    code, out, err = run_cli("report", "s1")
    assert code == 2 and err.count("\n") == 1 and "spec.run.model.name" in err, err
    assert file_tree(tmp_path) == before


def test_text_read_back_is_shown_in_a_table_as_text_never_markup_nor_a_terminal_escape(tmp_path, monkeypatch,
                                                                                       run_cli):
    root = tmp_path / "root"
    stored_sweep(root, "s1", status="ok\x1b]0;PWNED\x07[bold red]x[/]")
    monkeypatch.setenv("SWEEP_ROOT", str(root))
    code, out, err = run_cli("sql", "SELECT '[/x]' AS \"[/]\", status FROM trials")
    assert code == 0, err
    assert "[/x]" in out and "[/]" in out and "[bold red]x[/]" in out  # shown, not read as markup
    assert "\x1b" not in out and "\\x1b" in out  # the escape is shown, not sent
    code, out, err = run_cli("results", "s1")
    assert code == 0 and "\x1b" not in out, err


def curve_at(folder: Path) -> Path:
    folder.mkdir(parents=True)
    pd.DataFrame({"step": [1, 2], "train_loss": [3.0, 2.0], "val_loss": [3.1, 2.1]}).to_parquet(
        folder / "part-00000.parquet")
    return folder


def test_a_stored_curves_folder_is_read_only_inside_the_results_root(tmp_path, monkeypatch):
    root = tmp_path / "root"
    monkeypatch.setenv("SWEEP_ROOT", str(root))
    inside, outside = curve_at(root / "s1" / "curves" / "run=a"), curve_at(tmp_path / "elsewhere" / "run=b")
    (root / "s1" / "curves" / "run=link").symlink_to(outside)
    trial = lambda folder: SimpleNamespace(user_attrs={"curves": folder})  # noqa: E731
    assert read_curve(trial(str(inside)))["step"].tolist() == [1, 2]
    for stored in (str(outside), str(root / "s1" / "curves" / "run=link"), str(root / ".." / "elsewhere" / "run=b"),
                   5, ["x"], "a\0b"):
        assert read_curve(trial(stored)) is None, stored


def test_results_never_reads_a_curve_the_storage_places_out_of_the_root(tmp_path, monkeypatch, run_cli):
    """The plots of `results` drew a curve read from any folder a storage named."""
    root = tmp_path / "root"
    outside = curve_at(tmp_path / "elsewhere" / "run=b")
    stored_sweep(root, "s1", curves=str(outside))
    monkeypatch.setenv("SWEEP_ROOT", str(root))
    opened = []
    original = pq.read_table
    monkeypatch.setattr(pq, "read_table", lambda path, *a, **k: opened.append(str(path)) or original(path, *a, **k))
    code, out, err = run_cli("results", "s1")
    assert code == 0, err
    assert not [p for p in opened if "elsewhere" in p]
    assert not (next((root / "s1" / "plots").iterdir()) / "curves.png").exists()


@pytest.mark.parametrize("root", ["with\nnewline", "with\0nul", "x" * 300, "/".join(["y" * 200] * 21)],
                         ids=["newline", "nul", "name-past-255-bytes", "path-past-4095-bytes"])
def test_an_output_root_with_a_control_character_or_past_the_file_systems_lengths_is_one_line(
        tmp_path, monkeypatch, run_cli, root):
    config = tmp_path / "run.yaml"
    config.write_text(yaml.safe_dump({**RUN, "output": {"root": str(tmp_path / root)}}))
    monkeypatch.chdir(tmp_path)
    before = file_tree(tmp_path)
    code, out, err = run_cli("launch", str(config))
    assert code == 2 and err.count("\n") == 1 and "output.root" in err, err
    assert file_tree(tmp_path) == before


def test_sql_skips_a_sweep_folder_linked_out_of_the_root_says_so_once_and_answers_from_the_rest(
        tmp_path, monkeypatch, run_cli):
    """An outside tester's one stray link ROOT/linkdir → elsewhere broke every `sweep sql` query (`status` and
    `report` listed the rest); what is behind it, a sweep's storage and curves, is never read."""
    root, outside = tmp_path / "root", tmp_path / "elsewhere"
    stored_sweep(root, "s1")
    stored_sweep(outside, "s2")
    curve_at(outside / "s2" / "curves" / "study=s2" / "kind=proxy" / "run=b")
    (root / "linkdir").symlink_to(outside / "s2")
    monkeypatch.setenv("SWEEP_ROOT", str(root))
    for table, rows in (("trials", 3), ("runs", 0), ("curves", 0)):
        code, out, err = run_cli("sql", f"SELECT count(*) AS n FROM {table}", "--format", "csv")
        assert code == 0 and out.split() == ['"n"', str(rows)], (table, out, err)
        assert err.count("\n") == 1 and str(root / "linkdir") in err and "leads out of the results root" in err, err
    code, out, err = run_cli("compare", "nope")  # compare looks at the same sweeps
    assert code == 2 and err.startswith(f"compare: {root / 'linkdir'} leads out of the results root"), err
    assert "no run or trial 'nope'" in err.splitlines()[1], err
    code, out, err = run_cli("status")
    assert code == 0 and err == "", err
