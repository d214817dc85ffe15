"""Per-trial overhead of the Ray and SLURM backends against local, on the same 8-trial study, in one run.

The study is sweep_overhead.py's (a μP gpt, width 64), each trial sized to train about
`--trial-seconds`, one trial at a time on each backend (local `--workers 1`, ray `--max-concurrent 1`,
slurm one array task), each trial with all the machine's cores as torch threads (local's default; ray
`--cpus-per-trial`, slurm `--cpus-per-task`), on a journal storage. Per backend:
- overhead per trial, all in: (the whole command's wall time − the trainer's own wall time summed over
  trials) / trials, and its excess over local's. It holds everything that is not training: Python and
  imports, Ray's start and shutdown, Tune's scheduling and worker start, SLURM's submission, scheduling
  and the task's start, the polling between them.
- in-trial overhead: median of Optuna's trial duration (ask → tell) minus the trainer's wall time.
  For ray it includes starting the Tune trial's Ray worker (the trial is asked in the driver and waits
  for its worker); for slurm and local the worker is already up when it asks.
Subtracting the training time keeps the figures apart from how fast training runs (a loaded machine).
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
CORES = str(os.cpu_count())
BACKENDS = {"local": [], "ray": ["--max-concurrent", "1", "--cpus-per-trial", CORES],
            "slurm": ["--cpus-per-task", CORES]}


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
        train = sum(w for _, w in pairs)
        rows[backend] = (wall, train, (wall - train) / args.trials, statistics.median(d - w for d, w in pairs))
    local = rows["local"][2]
    print(f"{args.trials} trials of {steps} steps, one at a time, {CORES} torch threads, journal storage")
    print(f"{'backend':8} {'command s':>10} {'train s':>8} {'overhead s/trial':>17} {'vs local s/trial':>17} "
          f"{'in-trial overhead s':>20}")
    for backend, (wall, train, overhead, inside) in rows.items():
        print(f"{backend:8} {wall:10.1f} {train:8.1f} {overhead:17.2f} {overhead - local:17.2f} {inside:20.2f}")


if __name__ == "__main__":
    main()
