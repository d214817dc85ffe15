"""Per optimizer: does μP hold the LR optimum across width, and how do they compare at the largest width?

For each optimizer, the gpt proxy of `transfer_quality.py` (depth 2, head dim 16, seq 64, batch 16, `--steps`
steps, constant schedule with 5% warmup: Schedule-Free needs it, the others share it) on the built-in corpus,
a log₂ LR grid one octave apart around the optimizer's own centre (Lion 3–10× below AdamW: Chen et al. 2023),
`--seeds` seeds per point, μP and SP, each width. The grid is `sweep verify`'s, and so is the analysis
(`sweep.verify.analysis`: the optimum per width as the vertex of the parabola through the best points, the
drift across widths, the seed noise); the runs are trained here in one pool of `--workers` processes instead
of `sweep verify`'s studies, because each of its studies starts its own workers (a torch import each), which
on a loaded 2-core machine costs more than the short runs themselves. Reported per optimizer:
1. the drift of the fitted LR optimum across widths, μP and SP (goals: μP ≤ 0.5 octave, SP ≥ 1);
2. the best seed-mean val loss at the largest width and its LR (μP grid, equal steps);
3. training throughput at the largest width against AdamW's (median tokens/s of one short run each, same
   settings; Muon's cost over AdamW is its Newton–Schulz iterations, 5 × 3 matrix products per hidden matrix,
   in bf16 as torch.optim.Muon runs them: on a CPU without bf16 units each product is far slower than in
   float32, so on CPU keep Muon's widths ≤ 128).

    .venv/bin/python benchmarks/optimizers.py                      # widths 32-256, 2 seeds: hours on 2 CPU cores
    .venv/bin/python benchmarks/optimizers.py --optimizers adamw,muon,lion,adam_atan2,schedulefree_adamw \
        --widths 32,64,128 --steps 30 --batch-size 8 --evals 1 --points 5 --seeds 1   # the small one (README)
Finished runs are kept under --root: the same command again (or with more seeds) trains only what is missing.
"""
from __future__ import annotations

import argparse
import math
import sys
import tempfile
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import pandas as pd
import torch

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from sweep.verify.analysis import optima, verdicts  # noqa: E402
from trainer.config import RunConfig  # noqa: E402
from trainer.curves import read_curves  # noqa: E402
from trainer.loop import train  # noqa: E402

OPTIMIZERS = ("adamw", "muon", "lion", "adam_atan2", "schedulefree_adamw", "sgd")
# log₂ lr at the grid's centre; Muon's and Lion's moved up one and two octaves after their optima sat on the top edge
# of the grid here (Muon's matrices and its AdamW part share one lr; Lion's is still 4× below AdamW's)
CENTRE = {"adamw": -7, "muon": -5, "lion": -9, "adam_atan2": -7, "schedulefree_adamw": -7, "sgd": -3}


def run(name: str, steps: int, width: int, parametrization: str = "mup", lr: float = 2 ** -7, seed: int = 0,
        root: Path | str = ".", run_name: str = "r", log_every: int = 10, evals: int = 4,
        batch_size: int = 16) -> RunConfig:
    """The benchmark's run (`evals` evaluations of 8 batches; the objective is the last)."""
    return RunConfig.parse({
        "model": {"name": "gpt", "width": width, "depth": 2, "parametrization": parametrization,
                  "options": {"block_size": 64, "head_dim": 16}},
        "data": {"kind": "stdlib", "seq_len": 64}, "seed": seed,
        "optimizer": {"name": name, "lr": lr, "weight_decay": 0.0},
        "schedule": {"kind": "constant", "warmup_fraction": 0.05},
        "batch_size": batch_size, "steps": steps, "log_every": log_every,
        "eval": {"every": max(1, steps // evals), "batches": 8, "noise_scale_batches": 0},
        "output": {"root": str(root), "study": f"bench-opt-{name}", "run": run_name}})


def point(name: str, steps: int, width: int, parametrization: str, x: int, seed: int, root: str, evals: int,
          batch_size: int) -> dict:
    """One grid point trained (or read back when finished): its final val loss (NaN if diverged) and first
    train loss (≈ the loss at init), as `sweep verify` collects them."""
    torch.set_num_threads(1)
    run_name = f"w{width}-{parametrization}-x{x}-s{seed}"
    cfg = run(name, steps, width, parametrization, 2.0 ** x, seed, root, run_name, evals=evals, batch_size=batch_size)
    curve = read_curves(cfg.curves_root(), run=run_name)
    if curve.empty or curve["step"].max() < steps:
        status = train(cfg, resume=cfg.run_dir().exists()).status
        curve = read_curves(cfg.curves_root(), run=run_name)
    else:
        status = "completed"
    curve = curve.sort_values("step")
    val = curve["val_loss"].dropna()
    loss = float(val.iloc[-1]) if status == "completed" and len(val) and math.isfinite(val.iloc[-1]) else math.nan
    return {"optimizer": name, "parametrization": parametrization, "width": width, "value": 2.0 ** x, "x": float(x),
            "seed": seed, "loss": loss, "loss_init": float(curve["train_loss"].dropna().iloc[0])}


def throughput(name: str, width: int, steps: int, root: Path, batch_size: int) -> float:
    """Median tokens/s over the logged steps of one run at `width` (its first logged step, with the warm-up of
    the first calls, left out)."""
    torch.set_num_threads(1)
    cfg = run(name, steps, width, root=root, run_name=f"speed-w{width}", log_every=2, evals=1,
              batch_size=batch_size)
    curve = read_curves(cfg.curves_root(), run=f"speed-w{width}")
    if curve.empty or curve["step"].max() < steps:
        train(cfg, resume=cfg.run_dir().exists())
        curve = read_curves(cfg.curves_root(), run=f"speed-w{width}")
    curve = curve.sort_values("step")
    return float(curve["tokens_per_s"].iloc[1:].median())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--optimizers", default=",".join(OPTIMIZERS))
    parser.add_argument("--widths", default="32,64,128,256")
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--points", type=int, default=7, help="LR grid points, one octave apart")
    parser.add_argument("--seeds", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=16, help="sequences of 64 tokens per step")
    parser.add_argument("--evals", type=int, default=4, help="evaluations per run (8 batches each; the last counts)")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--speed-steps", type=int, default=12)
    parser.add_argument("--root", default=str(Path(tempfile.gettempdir()) / "sweep-bench-optimizers"))
    args = parser.parse_args()
    names, widths = args.optimizers.split(","), sorted(int(w) for w in args.widths.split(","))
    largest, half = widths[-1], args.points // 2
    jobs = [(n, args.steps, w, p, x, s, args.root, args.evals, args.batch_size) for n in names for p in ("mup", "sp")
            for w in widths for x in range(CENTRE[n] - half, CENTRE[n] - half + args.points) for s in range(args.seeds)]
    with ProcessPoolExecutor(args.workers) as pool:
        points = pd.DataFrame(pool.map(point, *zip(*jobs, strict=True)))
        speed = dict(zip(names, pool.map(throughput, names, [largest] * len(names), [args.speed_steps] * len(names),
                                         [Path(args.root) / "speed"] * len(names), [args.batch_size] * len(names)),
                         strict=True))
    points.to_parquet(Path(args.root) / "points.parquet")
    rows = []
    for name, group in points.groupby("optimizer", sort=False):
        judged = {v.parametrization: v for v in verdicts(optima(group), max_drift=0.5)}
        top = group[(group["parametrization"] == "mup") & (group["width"] == largest)]
        best = top.groupby("x")["loss"].apply(lambda s: s.mean(skipna=False)).dropna()
        rows.append({"optimizer": name, "μP drift": judged["mup"].drift, "μP noise": judged["mup"].noise,
                     "SP drift": judged["sp"].drift, "best loss": best.min(), "at log2 lr": best.idxmin(),
                     "tokens/s": speed[name]})
    table = pd.DataFrame(rows)
    if "adamw" in names:
        table["vs adamw"] = table["tokens/s"] / speed["adamw"]
    print(f"\nwidths {args.widths}, {args.steps} steps of {args.batch_size} × 64 tokens, {args.seeds} seed(s), "
          f"{args.points}-point octave LR grid, drift in octaves; best loss (μP) and throughput ({args.speed_steps} "
          f"steps) at width {largest}")
    print(table.to_string(index=False, float_format=lambda v: f"{v:.3g}"))


if __name__ == "__main__":
    main()
