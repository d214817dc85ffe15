"""Shared by the sweep benchmarks: run `sweep proxy` as a real command in a scratch root, read its study."""
from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import optuna
import yaml

REPO = Path(__file__).resolve().parents[1]
SHAKESPEARE = REPO.parent / "shared" / "data" / "tinyshakespeare.txt"


def prose_data() -> dict:
    """Byte-level English prose when ../shared has it, else the built-in corpus."""
    if SHAKESPEARE.is_file():
        return {"kind": "text", "path": str(SHAKESPEARE), "seq_len": 64}
    return {"kind": "stdlib", "seq_len": 64}


def run_sweep(root: Path, spec: dict, width: int, workers: int, *flags: str) -> tuple[float, optuna.Study]:
    """(wall seconds of the command, the study) for `sweep proxy SPEC --width W --workers K FLAGS…`."""
    path = root / f"{spec['name']}-{time.monotonic_ns()}.yaml"
    path.write_text(yaml.safe_dump(spec))
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "sweep", "proxy", str(path), "--width", str(width), "--workers", str(workers),
                    *flags], cwd=REPO, env={**os.environ, "SWEEP_ROOT": str(root)}, check=True,
                   stdout=subprocess.DEVNULL)
    wall = time.perf_counter() - start
    study = optuna.load_study(study_name=f"{spec['name']}-w{width}-mup",
                              storage=f"sqlite:///{root / spec['name'] / 'optuna.db'}")
    return wall, study
