"""Per-trial overhead of the Ray and SLURM backends against local, on the same 8-trial study, in one run.

The study is sweep_overhead.py's (a μP gpt, width 64), each trial sized to train about
`--trial-seconds`, one trial at a time on each backend (local `--workers 1`, ray `--max-concurrent 1`,
slurm one array task), on a journal storage. Per backend:
- in-trial overhead: median of Optuna's trial duration (ask → tell) minus the trainer's own wall
  time. For ray it includes starting the Tune trial's Ray worker (the trial is asked in the driver
  and waits for its worker); for slurm and local the worker is already up when it asks.
- per trial, all in: (the whole command's wall time − local's) / trials, on top of local's — where
  the rest goes: Ray's start and shutdown, SLURM's scheduling and the task's Python start.
Needs the SLURM test cluster (scripts/slurm-test-cluster.sh start, SLURM_CONF exported) for slurm.

    .venv/bin/python benchmarks/backends_overhead.py          # ~4 min on 2 idle cores
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import optuna
import yaml
from optuna.storages.journal import JournalFileBackend, JournalStorage
from sweep_overhead import SPEC, calibrate_steps, per_trial_overhead

REPO = Path(__file__).resolve().parents[1]
BACKENDS = {"local": [], "ray": ["--max-concurrent", "1"], "slurm": []}


def run(root: Path, spec: dict, backend: str) -> tuple[float, optuna.Study]:
    path = root / "spec.yaml"
    path.write_text(yaml.safe_dump(spec))
    journal = root / "journal.log"
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "sweep", "proxy", str(path), "--width", "64", "--workers", "1",
                    "--backend", backend, "--storage", f"journal:{journal}", *BACKENDS[backend]], cwd=REPO,
                   env={**os.environ, "SWEEP_ROOT": str(root)}, check=True, stdout=subprocess.DEVNULL)
    wall = time.perf_counter() - start
    return wall, optuna.load_study(study_name="bench-w64-mup", storage=JournalStorage(JournalFileBackend(str(journal))))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=8)
    parser.add_argument("--trial-seconds", type=float, default=3.0, help="training time of each trial")
    args = parser.parse_args()
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    steps = calibrate_steps(args.trial_seconds)
    spec = {**SPEC, "trials": args.trials, "run": {**SPEC["run"], "steps": steps,
                                                   "eval": {"every": steps, "batches": 4, "noise_scale_batches": 0}}}
    rows = {}
    for backend in BACKENDS:
        with tempfile.TemporaryDirectory() as tmp:
            wall, study = run(Path(tmp), spec, backend)
            pairs = per_trial_overhead(study)
        rows[backend] = (wall, statistics.median(d - w for d, w in pairs), statistics.median(w for _, w in pairs))
    local_wall = rows["local"][0]
    print(f"{args.trials} trials of {steps} steps, one at a time, journal storage")
    print(f"{'backend':8} {'command s':>10} {'per trial s':>12} {'vs local s/trial':>17} {'in-trial overhead s':>20} {'train s':>8}")
    for backend, (wall, inside, train) in rows.items():
        print(f"{backend:8} {wall:10.1f} {wall / args.trials:12.2f} {(wall - local_wall) / args.trials:17.2f} "
              f"{inside:20.2f} {train:8.2f}")
    print("ratios of whole-command time to local: " + ", ".join(
        f"{b} {rows[b][0] / local_wall:.2f}" for b in ("ray", "slurm")))


if __name__ == "__main__":
    main()
