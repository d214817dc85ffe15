"""`sweep status`: the state of a launched run that ended without a result, from what it left behind.

A run stopped by SIGTERM (or SIGUSR2) checkpoints the step it is in and leaves (trainer/preemption.py):
`stopped`, with the resume hint; a run that crashed before its first checkpoint: `failed`. An outside tester saw
the first called failed. The run folders here are what a launch and the trainer leave, written by hand: no training.
"""
import json
from pathlib import Path

import pytest
import yaml

from sweep.cluster.processes import machine_id
from sweep.runs.record import RECORD
from trainer.checkpoint_names import FOLDER, RING, checkpoint_path
from trainer.config import RunConfig


def ended_run(root: Path, name: str) -> Path:
    """ROOT/full/runs/NAME as `sweep launch` (local) leaves it when its process has ended without a result."""
    run_dir = root / "full" / "runs" / name
    run_dir.mkdir(parents=True)
    record = {"run": name, "study": "full", "kind": "full", "run_dir": str(run_dir),
              "checkpoints": str(run_dir / FOLDER), "curve": str(root / "full" / "curves" / f"run={name}"),
              "backend": "local", "job": "pid 1",
              "process": {"machine": machine_id(), "pid": 1, "start": "not the start of pid 1"}}  # ended
    (run_dir / RECORD).write_text(json.dumps(record))
    (run_dir / "config.yaml").write_text("steps: 100\n")  # the trainer writes it before its first step
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


@pytest.mark.parametrize("high,outside", [(2.1, False), (1.95, True)])
def test_a_stopped_run_shows_the_final_its_own_curve_predicts(tmp_path, monkeypatch, run_cli, high, outside):
    """sweep/forecast/live.py's `ratios`: the trainer logs predicted_final at each evaluation; status shows the
    latest while the run has not finished, and flags it where that interval lies wholly above the one the run is
    held to (it will end outside its prediction, though still inside its band)."""
    import yaml

    from trainer.curves import rows_to_table, write_part

    monkeypatch.setenv("SWEEP_ROOT", str(tmp_path))
    run_dir = ended_run(tmp_path, "held")
    (run_dir / FOLDER).mkdir()
    checkpoint_path(run_dir / FOLDER, 60).write_bytes(b"")
    refine = {"fraction": [0.5, 0.6], "ratio": [1.3, 1.2], "half": [0.05, 0.04]}
    prediction = {"loss": 1.93, "low": 1.9, "high": high, "refine": refine}
    (run_dir / "config.yaml").write_text(yaml.safe_dump({"steps": 100, "provenance": {"prediction": prediction}}))
    curve = tmp_path / "full" / "curves" / "run=held"
    curve.mkdir(parents=True)
    logged = [(50, 2.6, 2.0, 1.95, 2.0952), (60, 2.4, 2.0, 1.9677, 2.069)]
    names = ("step", "val_loss", "predicted_final", "predicted_final_low", "predicted_final_high")
    write_part(curve, rows_to_table([dict(zip(names, row, strict=True)) for row in logged]))
    state, detail = states(run_cli)["held"]
    assert state == "stopped" and "its own curve at step 60 predicts a final 2.0000 [1.9677, 2.0690]" in detail, detail
    assert ("above the interval it is held to: learning slower" in detail) == outside
    code, out, _ = run_cli("status", "--format", "json")
    assert json.loads(out)[0]["outside"] == outside


def test_a_run_that_trained_without_its_config_is_named_after_the_others_are_listed(tmp_path, monkeypatch, run_cli):
    """Found by an outside tester: a launched run's config.yaml deleted by hand, `sweep status` listed the run
    without a word (and without the prediction it is held to). It is named as a refused run is, the others listed;
    a run not yet at its first step has no config yet and is listed as before."""
    monkeypatch.setenv("SWEEP_ROOT", str(tmp_path))
    for name in ("kept", "lost"):
        (ended_run(tmp_path, name) / FOLDER).mkdir()
        checkpoint_path(tmp_path / "full" / "runs" / name / FOLDER, 20).write_bytes(b"")
    (tmp_path / "full" / "runs" / "lost" / "config.yaml").unlink()
    (ended_run(tmp_path, "unstarted") / "config.yaml").unlink()
    code, out, err = run_cli("status")
    assert code == 2 and err.count("\n") == 1, err
    assert "lost/config.yaml is missing, though the run lost trained" in err and "config it was launched with" in err
    assert "│ kept " in out and "│ unstarted " in out and "│ lost " not in out, out


def test_a_finished_run_run_again_puts_back_its_deleted_config(tmp_path, monkeypatch, run_cli):
    """Found by an outside tester: the run's config.yaml deleted, the same config launched again said "done" and
    left it missing, so `sweep status` kept refusing the run. Run again, it is put back, the result untouched."""
    run = {"model": {"name": "gpt", "width": 16, "depth": 1, "options": {"block_size": 16}},
           "data": {"kind": "synthetic-tokens", "seq_len": 16, "options": {"n_tokens": 20000}}, "batch_size": 4,
           "steps": 2, "eval": {"every": 2, "batches": 1, "noise_scale_batches": 0},
           "output": {"root": str(tmp_path), "study": "full"}}
    monkeypatch.setenv("SWEEP_ROOT", str(tmp_path))
    config = tmp_path / "run.yaml"
    config.write_text(yaml.safe_dump(run))
    code, _, err = run_cli("train", config, "--quiet")
    assert code == 0, err
    (run_dir,) = (tmp_path / "full" / "runs").iterdir()
    result = (run_dir / "result.json").read_text()
    (run_dir / "config.yaml").unlink()
    code, _, err = run_cli("train", config, "--quiet", "--resume")
    assert code == 0, err
    assert RunConfig.load(run_dir / "config.yaml").run_id() == run_dir.name
    assert (run_dir / "result.json").read_text() == result
