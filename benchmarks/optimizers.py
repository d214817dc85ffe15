"""Per optimizer: does μP hold the LR optimum across width, and how do they compare at the largest width?

For each optimizer, the gpt proxy of `transfer_quality.py` (depth 2, head dim 16, seq 64, batch 16, `--steps`
steps, constant schedule with 5% warmup: Schedule-Free needs it, the others share it) on the built-in corpus,
widths 32 → 256, a log₂ LR grid around the optimizer's own centre (Lion 3–10× below AdamW: Chen et al. 2023),
2 seeds per point, μP and SP, through `sweep verify` (its own studies, resumable). Reported per optimizer:
1. the drift of the fitted LR optimum across widths, μP and SP, with seed noise (goals: μP ≤ 0.5 octave,
   SP ≥ 1);
2. the best seed-mean val loss at the largest width (μP grid, equal steps);
3. training throughput at the largest width against AdamW's (tokens/s of one short run each, same settings;
   Muon's cost over AdamW is its Newton–Schulz iterations, 5 × 3 matrix products per hidden matrix, in bf16
   as torch.optim.Muon runs them: on a CPU without bf16 units each product is far slower than in float32).

    .venv/bin/python benchmarks/optimizers.py                      # hours on 2 CPU cores; a GPU for Muon
    .venv/bin/python benchmarks/optimizers.py --optimizers adamw,lion --widths 32,64 --steps 60 --points 5
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pandas as pd
import yaml

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from trainer.config import RunConfig  # noqa: E402
from trainer.curves import read_curves  # noqa: E402
from trainer.loop import train  # noqa: E402

OPTIMIZERS = ("adamw", "muon", "lion", "adam_atan2", "schedulefree_adamw", "sgd")
CENTRE = {"adamw": -7, "muon": -7, "lion": -10, "adam_atan2": -7, "schedulefree_adamw": -7, "sgd": -3}  # log₂ lr


def run(name: str, steps: int) -> dict:
    return {"model": {"name": "gpt", "depth": 2, "options": {"block_size": 64, "head_dim": 16}},
            "data": {"kind": "stdlib", "seq_len": 64},
            "optimizer": {"name": name, "weight_decay": 0.0},
            "schedule": {"kind": "constant", "warmup_fraction": 0.05},
            "batch_size": 16, "steps": steps, "log_every": 10,
            "eval": {"every": max(1, steps // 4), "batches": 8, "noise_scale_batches": 0}}


def verify(name: str, args, root: Path) -> Path:
    spec = {"name": f"bench-opt-{name}", "trials": 1, "run": run(name, args.steps),
            "search": {"optimizer.lr": {"low": 1e-6, "high": 1.0, "log": True}}, "pruner": {"name": "none"}}
    path = root / f"{name}.yaml"
    path.write_text(yaml.safe_dump(spec))
    half = args.points // 2
    grid = f"2^{CENTRE[name] - half},2^{CENTRE[name] + half},{args.points}"
    command = [sys.executable, "-m", "sweep", "verify", str(path), "--trials-from", "spec", "--widths", args.widths,
               "--range", grid, "--seeds", str(args.seeds), "--workers", str(args.workers), "--max-drift", "0.5"]
    done = subprocess.run(command, cwd=REPO, env={**os.environ, "SWEEP_ROOT": str(root)})
    if done.returncode not in (0, 1):
        sys.exit(f"sweep verify of {name} failed ({done.returncode})")
    return root / f"bench-opt-{name}-verify-lr"


def throughput(name: str, width: int, steps: int, root: Path) -> float:
    """Median tokens/s over the logged steps of one run at `width` (its first logged step, with the warm-up of
    the first calls, left out)."""
    cfg = RunConfig.parse({**run(name, steps), "model": {**run(name, steps)["model"], "width": width},
                           "eval": {"every": steps, "batches": 1, "noise_scale_batches": 0},
                           "output": {"root": str(root), "study": "bench-opt-speed", "kind": "full", "run": name}})
    train(cfg, resume=True)
    curve = read_curves(cfg.curves_root(), run=name).sort_values("step")
    return float(curve["tokens_per_s"].iloc[1:].median())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--optimizers", default=",".join(OPTIMIZERS))
    parser.add_argument("--widths", default="32,64,128,256")
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--points", type=int, default=7, help="LR grid points, one octave apart")
    parser.add_argument("--seeds", type=int, default=2)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--speed-steps", type=int, default=20)
    parser.add_argument("--root", default=str(Path(tempfile.gettempdir()) / "sweep-bench-optimizers"))
    args = parser.parse_args()
    root = Path(args.root)
    root.mkdir(parents=True, exist_ok=True)
    names = args.optimizers.split(",")
    largest = max(int(w) for w in args.widths.split(","))
    rows = []
    for name in names:
        out = verify(name, args, root)
        summary = json.loads((out / "summary.json").read_text())["parametrizations"]
        points = pd.read_parquet(out / "points.parquet")
        at_largest = points[(points["parametrization"] == "mup") & (points["width"] == largest)]
        best = at_largest.groupby("value")["loss"].apply(lambda s: s.mean(skipna=False)).dropna()
        rows.append({"optimizer": name, "mup drift": summary["mup"]["drift"], "mup noise": summary["mup"]["noise"],
                     "sp drift": summary.get("sp", {}).get("drift"), "best loss": best.min(),
                     "at lr": best.idxmin(), "tokens/s": throughput(name, largest, args.speed_steps, root / "speed")})
    table = pd.DataFrame(rows)
    if "adamw" in names:
        table["vs adamw"] = table["tokens/s"] / float(table.loc[table["optimizer"] == "adamw", "tokens/s"].iloc[0])
    print(f"\nwidths {args.widths}, {args.steps} steps, {args.seeds} seeds, {args.points}-point octave LR grid; "
          f"best loss and throughput at width {largest}")
    print(table.to_string(index=False, float_format=lambda v: f"{v:.4g}"))


if __name__ == "__main__":
    main()
