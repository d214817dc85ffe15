"""Transfer quality: does the LR tuned at the smallest width still win at the largest?

A μP and an SP gpt (depth 2, head dim 16, seq 64, batch 16, cosine, `--steps` steps) on the built-in
corpus, widths 32 → 256, a log₂ LR grid, 2 seeds per point, run through `sweep verify` (its own
studies, resumable). Reported:
1. the drift of the fitted optimum across widths per parametrization, with its seed noise
   (goals: μP ≤ 0.5 octave, SP ≥ 1.5 over 8×);
2. at the largest width, the validation loss of the LR transferred from the smallest width (the μP
   vertex there, trained at the largest width on the same seeds) against the best point of the
   direct LR grid at the largest width (goal: within 0.5%).

    .venv/bin/python benchmarks/transfer_quality.py                 # ~25 min on 2 idle cores
    .venv/bin/python benchmarks/transfer_quality.py --steps 100 --widths 32,128   # a quick look

The Figure-1 plot is ROOT/bench-transfer-verify-lr/figure1.png (ROOT: --root). The last line is
`transferred / direct best loss at width W: X.XXXX`.
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

from trainer.config import RunConfig
from trainer.loop import train


def spec(steps: int) -> dict:
    return {"name": "bench-transfer", "trials": 1,
            "run": {"model": {"name": "gpt", "depth": 2, "options": {"block_size": 64}},
                    "data": {"kind": "stdlib", "seq_len": 64},
                    "optimizer": {"name": "adamw", "weight_decay": 0.0, "beta1": 0.9, "beta2": 0.95},
                    "schedule": {"kind": "cosine", "warmup_fraction": 0.05, "min_lr_ratio": 0.1},
                    "batch_size": 16, "steps": steps, "log_every": 50,
                    "eval": {"every": max(1, steps // 4), "batches": 8, "noise_scale_batches": 0}},
            "search": {"optimizer.lr": {"low": 1e-4, "high": 0.1, "log": True}},
            "pruner": {"name": "none"}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--widths", default="32,64,128,256")
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--range", default="2^-12,2^-4,9", help="LO,HI,N of the LR grid")
    parser.add_argument("--seeds", type=int, default=2)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--root", default=str(Path(tempfile.gettempdir()) / "sweep-bench-transfer"))
    args = parser.parse_args()
    root = Path(args.root)
    root.mkdir(parents=True, exist_ok=True)
    spec_path = root / "spec.yaml"
    spec_path.write_text(yaml.safe_dump(spec(args.steps)))
    verify = [sys.executable, "-m", "sweep", "verify", str(spec_path), "--trials-from", "spec", "--widths", args.widths,
              "--range", args.range, "--seeds", str(args.seeds), "--workers", str(args.workers), "--max-drift", "0.5"]
    done = subprocess.run(verify, cwd=REPO, env={**os.environ, "SWEEP_ROOT": str(root)})
    if done.returncode not in (0, 1):
        sys.exit(f"sweep verify failed ({done.returncode})")
    out = root / "bench-transfer-verify-lr"
    summary = json.loads((out / "summary.json").read_text())
    optima = pd.read_parquet(out / "optima.parquet")
    points = pd.read_parquet(out / "points.parquet")

    widths = sorted(optima["width"].unique())
    small, large = widths[0], widths[-1]
    mup = optima[optima["parametrization"] == "mup"].set_index("width")
    lr = float(mup.loc[small, "optimum"])
    direct = (points[(points["parametrization"] == "mup") & (points["width"] == large)]
              .groupby("value")["loss"].apply(lambda s: s.mean(skipna=False)).dropna())
    run = spec(args.steps)["run"]
    run["model"].update(width=int(large), parametrization="mup")
    run["optimizer"]["lr"] = lr
    transferred = []
    for seed in range(args.seeds):
        cfg = RunConfig.parse({**run, "seed": seed,
                               "output": {"root": str(root), "study": "bench-transfer-full", "kind": "full"}})
        result = train(cfg, resume=True)
        transferred.append(result.val_loss)
    moved = sum(transferred) / len(transferred)

    print(f"\n{'parametrization':<16}{'drift (octaves)':>16}{'seed noise':>12}   optimum log2 lr per width")
    for p, v in summary["parametrizations"].items():
        row = optima[optima["parametrization"] == p]
        per_width = ", ".join(f"{w}: {x:.2f}" for w, x in zip(row["width"], row["optimum_x"], strict=True))
        print(f"{p:<16}{v['drift']:>16.2f}{v['noise']:>12.2f}   {per_width}")
    print(f"\nat width {large}: transferred lr {lr:.4g} (μP vertex at width {small}) → val loss {moved:.4f} "
          f"(seeds {', '.join(f'{v:.4f}' for v in transferred)})")
    print(f"at width {large}: best of the direct grid lr {direct.idxmin():.4g} → val loss {direct.min():.4f}")
    print(f"figure: {out / 'figure1.png'}")
    print(f"transferred / direct best loss at width {large}: {moved / direct.min():.4f}")


if __name__ == "__main__":
    main()
