"""`sweep status`: the state of a launched run that ended without a result, from what it left behind.

A run stopped by SIGTERM (or SIGUSR2) checkpoints the step it is in and leaves (trainer/preemption.py):
`stopped`, with the resume hint; a run that crashed before its first checkpoint: `failed`. An outside tester saw
the first called failed. The run folders here are what a launch and the trainer leave, written by hand: no training.
"""
import json
from pathlib import Path

import pytest

from sweep.cluster.processes import machine_id
from sweep.runs.record import RECORD
from trainer.checkpoint_names import FOLDER, RING, checkpoint_path


def ended_run(root: Path, name: str) -> Path:
    """ROOT/full/runs/NAME as `sweep launch` (local) leaves it when its process has ended without a result."""
    run_dir = root / "full" / "runs" / name
    run_dir.mkdir(parents=True)
    record = {"run": name, "study": "full", "kind": "full", "run_dir": str(run_dir),
              "checkpoints": str(run_dir / FOLDER), "curve": str(root / "full" / "curves" / f"run={name}"),
              "backend": "local", "job": "pid 1",
              "process": {"machine": machine_id(), "pid": 1, "start": "not the start of pid 1"}}  # ended
    (run_dir / RECORD).write_text(json.dumps(record))
    return run_dir


def states(run_cli) -> dict:
    code, out, err = run_cli("status", "--format", "json")
    assert code == 0, err
    return {row["run"]: (row["state"], row["detail"]) for row in json.loads(out)}


@pytest.mark.parametrize("folder", [FOLDER, RING])
def test_a_run_that_ended_with_a_checkpoint_is_stopped_and_one_without_is_failed(tmp_path, monkeypatch, run_cli,
                                                                                folder):
    monkeypatch.setenv("SWEEP_ROOT", str(tmp_path))
    (ended_run(tmp_path, "sigterm") / folder).mkdir()
    checkpoint_path(tmp_path / "full" / "runs" / "sigterm" / folder, 20).write_bytes(b"")  # only its name is read
    ended_run(tmp_path, "crashed")
    found = states(run_cli)
    assert found["sigterm"] == ("stopped", "ended without a result, checkpointed at step 20; "
                                           "`sweep launch` again resumes it"), found
    assert found["crashed"][0] == "failed" and "starts it over" in found["crashed"][1], found
    code, out, err = run_cli("status")
    assert code == 0 and "stopped" in out and "failed" in out, err


def test_a_checkpoints_folder_linked_out_of_the_root_is_refused_not_listed(tmp_path, monkeypatch, run_cli):
    root, outside = tmp_path / "root", tmp_path / "elsewhere"
    monkeypatch.setenv("SWEEP_ROOT", str(root))
    outside.mkdir()
    checkpoint_path(outside, 20).write_bytes(b"")
    (ended_run(root, "linked") / FOLDER).symlink_to(outside)
    code, out, err = run_cli("status")
    assert code == 2 and err.count("\n") == 1 and "leads out of the results root" in err, err
