"""Sweep overhead of the local backend, and trials per hour with 2 workers against 1 on this machine.

1. Per-trial overhead. A study of `--trials` trials of a μP gpt (width 64, depth 2, seq 64, batch 16)
   sized to train about `--trial-seconds` each. Per trial: Optuna's duration (datetime_start →
   datetime_complete) minus the trainer's own wall time (the last curve row's `wall_time`, which
   counts from the first training step to the last, evaluations included). The rest is what the
   sweep adds per trial: claiming and sampling, the RunConfig, opening the data, building the
   model, heartbeats and attrs, the final checkpoint, curves, result, objective and tell. Worker
   start (spawn and imports, once per worker) is reported apart. Beside it, plain Optuna's own
   cost per trial (ask, 5 suggests, tell) on a SQLite storage of the same kind.
2. Throughput. The same `--short-trials` trials with `--workers 1` (all cores to one worker) and
   `--workers 2` (half each), each the wall time of the whole `sweep proxy` command.

    .venv/bin/python benchmarks/sweep_overhead.py            # ~4 min on 2 idle cores
The last line is `2 workers / 1 worker trials per hour: X.XX`.
"""
from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import optuna
import pandas as pd
from bench_sweeps import run_sweep

SPEC = {
    "name": "bench",
    "run": {"model": {"name": "gpt", "depth": 2, "options": {"block_size": 64}},
            "data": {"kind": "stdlib", "seq_len": 64}, "batch_size": 16, "log_every": 50},
    "search": {"optimizer.lr": {"low": 1.0e-3, "high": 3.0e-2, "log": True},
               "optimizer.weight_decay": {"low": 0.0, "high": 0.2},
               "schedule.warmup_fraction": {"low": 0.0, "high": 0.3},
               "optimizer.beta1": {"low": 0.8, "high": 0.95},
               "optimizer.beta2": {"type": "halflife", "low": 6.5, "high": 700}},
    "pruner": {"name": "none"},
    "sampler": {"name": "tpe", "seed": 0},
}


def sweep(root: Path, steps: int, trials: int, workers: int, width: int = 64) -> tuple[float, optuna.Study]:
    spec = {**SPEC, "trials": trials, "run": {**SPEC["run"], "steps": steps, "eval": {"every": steps, "batches": 4,
                                                                                   "noise_scale_batches": 0}}}
    return run_sweep(root, spec, width, workers)


def per_trial_overhead(study: optuna.Study, root: Path) -> list[tuple[float, float]]:
    """(trial duration, trainer wall time) per trial (its curve's folder is stored relative to the results root)."""
    out = []
    for t in study.trials:
        curve = pd.read_parquet(root / t.user_attrs["curves"])
        out.append(((t.datetime_complete - t.datetime_start).total_seconds(), float(curve["wall_time"].max())))
    return out


def optuna_cost(root: Path, n: int = 200) -> float:
    study = optuna.create_study(storage=f"sqlite:///{root / 'plain.db'}", sampler=optuna.samplers.RandomSampler(0))
    start = time.perf_counter()
    for _ in range(n):
        trial = study.ask()
        x = sum(trial.suggest_float(f"p{i}", 0.0, 1.0) for i in range(5))
        study.tell(trial, x)
    return (time.perf_counter() - start) / n


def calibrate_steps(seconds: float) -> int:
    """Steps of the benchmark's trial that take about `seconds` on this machine (from a 60-step probe)."""
    with tempfile.TemporaryDirectory() as tmp:
        _, study = sweep(Path(tmp), steps=60, trials=1, workers=1)
        step_s = float(pd.read_parquet(Path(tmp) / study.trials[0].user_attrs["curves"])["wall_time"].max()) / 60
    return max(60, int(seconds / step_s))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=6, help="trials for the per-trial overhead")
    parser.add_argument("--trial-seconds", type=float, default=20.0, help="training time of each of those trials")
    parser.add_argument("--short-trials", type=int, default=12, help="trials for the throughput comparison")
    parser.add_argument("--short-seconds", type=float, default=4.0, help="training time of each of those")
    args = parser.parse_args()
    optuna.logging.set_verbosity(optuna.logging.WARNING)

    steps = calibrate_steps(args.trial_seconds)
    with tempfile.TemporaryDirectory() as tmp:
        wall, study = sweep(Path(tmp), steps, args.trials, workers=1)
        pairs = per_trial_overhead(study, Path(tmp))
        plain = optuna_cost(Path(tmp))
    overheads = [d - w for d, w in pairs]
    trial_s = statistics.median(d for d, _ in pairs)

    short = calibrate_steps(args.short_seconds)
    rates = {}
    for workers in (1, 2):
        with tempfile.TemporaryDirectory() as tmp:
            seconds, _ = sweep(Path(tmp), short, args.short_trials, workers)
        rates[workers] = args.short_trials / seconds * 3600

    print(f"per-trial overhead ({args.trials} trials of {steps} steps, median trial {trial_s:.1f} s, 1 worker):")
    print(f"  sweep overhead per trial   median {statistics.median(overheads):.3f} s   max {max(overheads):.3f} s"
          f"   = {100 * statistics.median(overheads) / trial_s:.1f}% of a trial")
    print(f"  plain Optuna ask+5 suggests+tell on SQLite: {1000 * plain:.1f} ms per trial")
    print(f"  whole command {wall:.1f} s for {args.trials} trials "
          f"({wall - sum(d for d, _ in pairs):.1f} s outside trials: start-up, worker spawn, study creation)")
    print(f"throughput ({args.short_trials} trials of {short} steps):")
    print(f"  1 worker: {rates[1]:.0f} trials/h   2 workers: {rates[2]:.0f} trials/h")
    print(f"2 workers / 1 worker trials per hour: {rates[2] / rates[1]:.2f}")


if __name__ == "__main__":
    main()
