"""`--out` replaces what the same command wrote there before, and never the tool's own state or input. Found by an
outside tester: `sweep plan --out studies/NAME/optuna.db` exited 0 and replaced the sweep's storage (every later
command: "file is not a database"), `--out SPEC` the spec it planned from, `--out RUN/config.yaml` a run's config."""
from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
import yaml

from tests.sweep_helpers import spec_dict

EXAMPLES = Path(__file__).resolve().parents[1] / "sweep" / "examples"
COMMANDS = {  # the command's arguments before --out: the check comes first, so they need not name anything real
    "plan": ["plan", EXAMPLES / "demo.yaml", "--tokens", "1000000", "--width", "256", "--flops", "1e20",
             "--goal", "1"],
    "transfer": ["transfer", "spec.yaml", "--width", "256"],
    "report": ["report", "spec.yaml"],
    "compare": ["compare", "tiny#0", "tiny#1"],
    "doctor": ["doctor", "run.yaml"],
    "sql": ["sql", "SELECT 1"],
    "recipe": ["recipe", "run.yaml", "--to", "torch"],
}


def storage(path: Path) -> Path:
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE trials (number INTEGER)")
    return path


def spec(path: Path) -> Path:
    path.write_text(yaml.safe_dump(spec_dict()))
    return path


def run_config(path: Path) -> Path:
    path.write_text(yaml.safe_dump({"model": {"name": "gpt", "width": 16}, "optimizer": {"lr": 0.01}, "steps": 2}))
    return path


@pytest.mark.parametrize("make", [storage, spec, run_config], ids=["optuna.db", "spec", "run config"])
@pytest.mark.parametrize("command", COMMANDS)
def test_out_never_replaces_a_storage_a_spec_or_a_run_config(tmp_path, run_cli, monkeypatch, command, make):
    monkeypatch.setenv("SWEEP_ROOT", str(tmp_path))
    monkeypatch.chdir(tmp_path)
    target = make(tmp_path / {"storage": "optuna.db", "spec": "spec.yaml", "run_config": "config.yaml"}[make.__name__])
    before = target.read_bytes()
    code, out, err = run_cli(*COMMANDS[command], "--out", target)
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert err.startswith(f"error: --out: {target} exists and is not ") and "it is not replaced" in err, err
    assert target.read_bytes() == before


def test_out_replaces_what_the_same_command_wrote_before(tmp_path, run_cli, monkeypatch):
    """The rerun with the same --out, which every user makes: the plan written first is replaced, not refused."""
    monkeypatch.setenv("SWEEP_ROOT", str(tmp_path))
    monkeypatch.chdir(tmp_path)
    out = tmp_path / "plan.yaml"
    for _ in range(2):
        code, _, err = run_cli(*COMMANDS["plan"], "--out", out)
        assert code == 0, err
    assert yaml.safe_load(out.read_text())["plan"] == 1
