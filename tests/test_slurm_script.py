"""Shell lines in the SLURM batch script (issue 36, hole 2): every text bound for sbatch's script passes one rule of
the backend settings model (sweep/cluster/settings.py) before a script is written.

sbatch reads `#SBATCH --account=VALUE` to the end of its line: a newline in VALUE starts a line of the job script,
which bash runs as a command. Each SLURM text setting (partition, account, qos) is given with a newline or shell
metacharacters through every door: `sweep launch` and `sweep proxy`/`sweep verify` flags and the spec's `slurm:`
section. A stub `sbatch` first on PATH captures every script it is given: a refused value is one line naming the
flag or key, exit 2, no script captured, nothing written. A good value reaches the captured script on its
`#SBATCH` line (the stub is wired: the refusals are not for want of a SLURM).
"""
from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
import yaml

from tests.sweep_helpers import file_tree, write_spec

FIELDS = ("partition", "account", "qos")
HOSTILE = {"newline": "gpu\ntouch {marker}", "carriage-return": "gpu\rtouch {marker}",
           "semicolon": "gpu;touch {marker}", "substitution": "$(touch {marker})", "backtick": "`touch {marker}`",
           "space": "gpu touch", "quote": "gpu'x"}  # more forms: tests/fuzz (scheduler_text)
RUN = {"model": {"name": "gpt", "width": 16, "depth": 1, "options": {"block_size": 16}},
       "data": {"kind": "synthetic-tokens", "seq_len": 16, "options": {"n_tokens": 4000}},
       "batch_size": 2, "steps": 2}
STUB = """#!/bin/sh
# a stand-in for SLURM's {name}: sbatch keeps the script it is given and answers with a job id
case "{name}" in
  sbatch) n=$(ls "{capture}" | wc -l); cp "$1" "{capture}/script-$n.sh"; echo "Submitted batch job 4242";;
  squeue) echo PENDING;;
  *) exit 0;;
esac
"""


@pytest.fixture
def stub_slurm(tmp_path, monkeypatch) -> Path:
    """sbatch, sinfo, squeue, scontrol, sacct and scancel stubs first on PATH; returns the folder of captured
    scripts."""
    capture, bin_dir = tmp_path / "captured", tmp_path / "bin"
    capture.mkdir()
    bin_dir.mkdir()
    for name in ("sbatch", "sinfo", "squeue", "scontrol", "sacct", "scancel"):
        path = bin_dir / name
        path.write_text(STUB.format(name=name, capture=capture))
        path.chmod(path.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("SWEEP_ROOT", str(tmp_path / "root"))
    monkeypatch.chdir(tmp_path)
    return capture


def command(door: str, field: str, value: str, folder: Path) -> list[str]:
    """The command line that gives `value` to `field` through `door`."""
    if door == "launch":
        config = folder / "run.yaml"
        config.write_text(yaml.safe_dump(RUN))
        return ["launch", str(config), "--backend", "slurm", f"--{field}", value, "--detach"]
    journal = f"journal:{folder / 'shared' / 'j.log'}"
    if door == "spec":
        return ["proxy", str(write_spec(folder, trials=1, slurm={field: value})), "--width", "16", "--backend",
                "slurm", "--storage", journal, "--detach"]
    shape = ["--width", "16"] if door == "proxy" else ["--widths", "16,32", "--trials-from", "spec"]
    return [door, str(write_spec(folder, trials=1)), *shape,
            "--backend", "slurm", "--storage", journal, f"--{field}", value, *(["--detach"] if door == "proxy" else [])]


@pytest.mark.parametrize("kind", HOSTILE)
@pytest.mark.parametrize("field", FIELDS)
@pytest.mark.parametrize("door", ["launch", "proxy", "verify", "spec"])
def test_a_newline_or_shell_metacharacter_in_a_slurm_field_is_refused_before_a_script_is_written(
        stub_slurm, tmp_path, run_cli, door, field, kind):
    marker = tmp_path / "injected"
    argv = command(door, field, HOSTILE[kind].format(marker=marker), tmp_path)
    before = file_tree(tmp_path)

    code, out, err = run_cli(*argv)

    named = f"slurm.{field}" if door == "spec" else f"--{field}"
    assert code == 2 and err.count("\n") == 1 and err.startswith(f"error: {named}: "), (out, err)
    assert list(stub_slurm.iterdir()) == [] and not marker.exists()
    assert file_tree(tmp_path) == before


@pytest.mark.parametrize("door", ["launch", "spec"])
def test_a_good_value_reaches_the_captured_script_on_its_sbatch_line(stub_slurm, tmp_path, run_cli, door):
    """The control: the stub is on PATH and a value the rule admits reaches it, each setting on one #SBATCH line."""
    argv = command(door, "account", "proj-42_a.b", tmp_path)
    argv += ["--qos", "high"] if door == "launch" else []

    code, out, err = run_cli(*argv)

    assert code == 0, (out, err)
    [script] = list(stub_slurm.iterdir())
    lines = script.read_text().splitlines()
    assert "#SBATCH --account=proj-42_a.b" in lines
    assert all(line.startswith(("#", "export ", "srun ")) or not line.strip() for line in lines), lines


@pytest.mark.parametrize("door", ["launch", "proxy"])
def test_a_results_root_with_a_newline_is_refused_before_a_script_is_written(stub_slurm, tmp_path, run_cli,
                                                                             monkeypatch, door):
    """The log folder is written into the script's `#SBATCH --output=` line too: a results root holding a newline
    is refused by the SLURM pre-flight, one line, nothing written, no script."""
    root = tmp_path / "results\ntouch x"
    if door == "launch":
        config = tmp_path / "run.yaml"
        config.write_text(yaml.safe_dump({**RUN, "output": {"root": str(root), "study": "s"}}))
        argv = ["launch", str(config), "--backend", "slurm", "--detach"]
    else:
        monkeypatch.setenv("SWEEP_ROOT", str(root))
        argv = ["proxy", str(write_spec(tmp_path, trials=1)), "--width", "16", "--backend", "slurm", "--storage",
                f"journal:{tmp_path / 'j.log'}", "--detach"]
    before = file_tree(tmp_path)

    code, out, err = run_cli(*argv)

    # launch: refused as its config loads; proxy: by the SLURM pre-flight
    said = "error: output.root: a path without control" if door == "launch" else "error: --backend slurm: the log"
    assert code == 2 and err.count("\n") == 1 and err.startswith(said), (out, err)
    assert list(stub_slurm.iterdir()) == [] and file_tree(tmp_path) == before
