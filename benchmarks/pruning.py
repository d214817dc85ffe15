"""Search quality and pruning on a μP gpt proxy (width 64, depth 2, seq 64, batch 16, 300 steps,
evaluations every 50 steps), on byte-level English prose (../shared/data/tinyshakespeare.txt when
present, else the built-in corpus).

1. Search quality: 40-trial multivariate TPE over lr, weight decay, warmup, β1, β2 (half-life)
   against an LR-only grid (12 log-spaced learning rates, the other settings at RunConfig defaults).
2. Pruning: the compute (training steps summed over trials in order of completion, pruned ones at
   the steps they ran) to reach the target, the median over sampler seeds of plain TPE's best
   without pruning; per method the median over seeds of that compute, divided by plain TPE's (inf
   when a seed never reaches it). A pruned trial costs less, so the pruned methods get twice the
   trials (`--pruned-trials`): a trial budget equal to plain TPE's would end them with compute to
   spare. Beside it, the best each method found within plain TPE's total compute. Methods:
   - tpe: no pruning (the reference, 1.0×);
   - tpe+hyperband: Optuna's Hyperband, rungs at the evaluation cadence;
   - tpe+wilcoxon: the Wilcoxon signed-rank test over the whole evaluation curve against the best
     trial's (a pruner that reads the curve, not one rung);
   - tpe+hyperband+warm: μP warm start: a Hyperband study at width 32 (half the trials) first, then its best
     3 enqueued at width 64 (`--warm-start 32`); the width-32 study's steps are charged at the
     ratio of the two widths' FLOPs per token.
   Trials run on 2 local workers, so the order of completion (and the compute counted before the
   target) is that of a real sweep.

    .venv/bin/python benchmarks/pruning.py               # ~35 min on 2 idle cores
    .venv/bin/python benchmarks/pruning.py --seeds 1 --trials 20   # a quick look
The last line is `hyperband compute to target vs plain TPE: X.XX×`.
"""
from __future__ import annotations

import argparse
import math
import os
import statistics
import sys
import tempfile
from pathlib import Path

import numpy as np
import optuna
from bench_sweeps import REPO, prose_data, run_sweep
from optuna.trial import TrialState

sys.path.insert(0, str(REPO))
from proxies.registry import build_model
from trainer.flops import flops_per_token

STEPS, EVERY = int(os.environ.get("BENCH_STEPS", 300)), 50
RUN = {"model": {"name": "gpt", "depth": 2, "options": {"block_size": 64}}, "data": prose_data(), "batch_size": 16,
       "steps": STEPS, "log_every": EVERY, "eval": {"every": EVERY, "batches": 4, "noise_scale_batches": 0}}
SEARCH = {"optimizer.lr": {"low": 2.0e-4, "high": 0.25, "log": True},
          "optimizer.weight_decay": {"low": 0.0, "high": 0.3},
          "schedule.warmup_fraction": {"low": 0.0, "high": 0.3},
          "optimizer.beta1": {"low": 0.7, "high": 0.95},
          "optimizer.beta2": {"type": "halflife", "low": 6.5, "high": 700}}


def spec(name: str, trials: int, seed: int, pruner: str) -> dict:
    return {"name": name, "trials": trials, "run": RUN, "search": SEARCH, "sampler": {"name": "tpe", "seed": seed},
            "pruner": {"name": pruner}}


def history(study: optuna.Study) -> list[tuple[int, float]]:
    """(training steps of the trial, its value or inf) in order of completion."""
    done = sorted((t for t in study.trials if t.datetime_complete), key=lambda t: t.datetime_complete)
    return [(t.user_attrs.get("steps", 0), t.value if t.state == TrialState.COMPLETE else math.inf) for t in done]


def steps_to(hist: list[tuple[int, float]], target: float, start: float = 0.0) -> float:
    spent, best = start, math.inf
    for steps, value in hist:
        spent += steps
        best = min(best, value)
        if best <= target:
            return spent
    return math.inf


def best_within(hist: list[tuple[int, float]], budget: float, start: float = 0.0) -> float:
    """The best value among the trials completed before the compute spent passes `budget`."""
    spent, best = start, math.inf
    for steps, value in hist:
        spent += steps
        if spent > budget:
            break
        best = min(best, value)
    return best


def flop_ratio(narrow: int, wide: int) -> float:
    def fpt(width: int) -> float:
        return flops_per_token(build_model("gpt", width, 2, "mup", vocab_size=256, block_size=64), 64)
    return fpt(narrow) / fpt(wide)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--trials", type=int, default=40)
    parser.add_argument("--pruned-trials", type=int, default=None,
                        help="trials of the pruned methods [default: 2 × --trials]")
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    ratio32 = flop_ratio(32, 64)
    pruned_trials = args.pruned_trials or 2 * args.trials
    runs: dict[str, list] = {m: [] for m in ("tpe", "tpe+hyperband", "tpe+wilcoxon", "tpe+hyperband+warm")}
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        for seed in range(args.seeds):
            for method, pruner in (("tpe", "none"), ("tpe+hyperband", "hyperband"), ("tpe+wilcoxon", "wilcoxon")):
                trials = args.trials if pruner == "none" else pruned_trials
                name = f"{method.replace('+', '-')}-{seed}"
                _, study = run_sweep(root, spec(name, trials, seed, pruner), 64, args.workers)
                runs[method].append((history(study), 0.0))
            name = f"warm-{seed}"
            _, narrow = run_sweep(root, spec(name, pruned_trials // 2, seed, "hyperband"), 32, args.workers)
            _, wide = run_sweep(root, spec(name, pruned_trials, seed, "hyperband"), 64, args.workers,
                                "--warm-start", "32")
            runs["tpe+hyperband+warm"].append((history(wide), ratio32 * sum(s for s, _ in history(narrow))))
        grid = {"name": "grid", "trials": 12, "run": RUN, "sampler": {"name": "grid", "options": {"points": 12}},
                "search": {"optimizer.lr": SEARCH["optimizer.lr"]}, "pruner": {"name": "none"}}
        _, grid_study = run_sweep(root, grid, 64, args.workers)

    bests = {m: [min(v for _, v in h) for h, _ in r] for m, r in runs.items()}
    target = statistics.median(bests["tpe"])
    reference = statistics.median(steps_to(h, target, c) for h, c in runs["tpe"])
    budget = statistics.median(sum(s for s, _ in h) for h, _ in runs["tpe"])
    print(f"μP gpt w64, {STEPS} steps, {args.trials} trials ({pruned_trials} when pruned) × {args.seeds} "
          f"sampler seeds, data {RUN['data']['kind']}")
    print(f"LR-only grid (12 points) best: {grid_study.best_value:.4f} "
          f"at lr {grid_study.best_params['optimizer.lr']:.3g}")
    print(f"target (median of plain TPE's best): {target:.4f}; plain TPE's compute: {budget:,.0f} steps")
    print(f"{'method':<20}{'best per seed':<26}{'best within TPE compute':>25}{'steps to target':>17}{'vs tpe':>8}"
          f"{'total steps':>13}")
    ratios = {}
    for method, r in runs.items():
        med = statistics.median(steps_to(h, target, c) for h, c in r)
        ratios[method] = med / reference
        within = statistics.median(best_within(h, budget, c) for h, c in r)
        total = statistics.median(c + sum(s for s, _ in h) for h, c in r)
        print(f"{method:<20}{', '.join(f'{b:.4f}' for b in bests[method]):<26}{within:>25.4f}{med:>17,.0f}"
              f"{ratios[method]:>7.2f}×{total:>13,.0f}")
    print(f"TPE (5 params) beats the LR-only grid: {np.median(bests['tpe']):.4f} vs {grid_study.best_value:.4f}")
    print(f"hyperband compute to target vs plain TPE: {ratios['tpe+hyperband']:.2f}×")


if __name__ == "__main__":
    main()
