"""The trainer's CUDA path, measured: fp32 against bf16 autocast, eager against `torch.compile`, one process against
FSDP2 (a process group of one), each with the AdamW the trainer builds (fused on CUDA).

One μP model (`--model`, default a llama of width 1024, depth 8, seq 1024, batch 16: ~130M parameters) trains
`--steps` steps from the same seed in each layout, in one process, one after another, through `trainer.loop.train`.
Per layout: the median of the trainer's own logged tokens/s and MFU (trainer/flops.py: 6·N·T plus attention's
12·L·d·T per token against the device's dense bf16 peak; the compiling step is outside every window), the peak
GPU memory, and the train loss at the last step against fp32 eager's (bf16 rounds, compile reorders: the gap is
the precision's, and should stay within a few % after `--steps`). Before training, the optimizer the trainer builds
for each layout is checked fused (`defaults["fused"]`).

    python benchmarks/cuda_path.py                     # needs one CUDA device
    python benchmarks/cuda_path.py --model gpt --width 768 --depth 12

Last line: `bf16 compiled / fp32 eager throughput: X.XX`.
"""
from __future__ import annotations

import argparse
import re
import statistics
import sys
import tempfile
from pathlib import Path

import torch

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from trainer import runtime as rt  # noqa: E402 (after the path is set)
from trainer.build import build  # noqa: E402
from trainer.config import RunConfig  # noqa: E402
from trainer.loop import train  # noqa: E402
from trainer.resolve import resolve  # noqa: E402

LAYOUTS = {  # name: (precision, compile, parallel)
    "fp32 (TF32) eager": ("fp32", False, None),
    "bf16 eager": ("bf16", False, None),
    "bf16 compiled": ("bf16", True, None),
    "bf16 compiled, FSDP2": ("bf16", True, {"kind": "fsdp"}),
}


def config(args, root: Path, name: str, precision: str, compiled: bool, parallel: dict | None) -> RunConfig:
    return RunConfig.parse({
        "model": {"name": args.model, "width": args.width, "depth": args.depth,
                  "options": {"block_size": args.seq}},
        "data": {"kind": "synthetic-tokens", "seq_len": args.seq, "vocab_size": args.vocab},
        "optimizer": {"name": "adamw", "lr": 2 ** -7},
        "schedule": {"kind": "cosine", "warmup_fraction": 0.1}, "batch_size": args.batch, "steps": args.steps,
        "precision": precision, "compile": compiled, "device": args.device, "log_every": args.log_every,
        "eval": {"every": 10 ** 9, "batches": 1, "noise_scale_batches": 0},
        **({"parallel": parallel} if parallel else {}),
        "output": {"root": str(root), "study": "cuda", "kind": "proxy", "run": re.sub(r"[^a-z0-9]+", "-", name)}})


def fused(cfg: RunConfig) -> bool:
    """Whether the optimizer the trainer builds for `cfg` is fused AdamW."""
    cfg = resolve(cfg)
    run = rt.start(cfg.device, cfg.precision, group=cfg.sharded())
    try:
        built = build(cfg, run)
        answer = bool(built.optimizer.defaults.get("fused"))
        del built
        return answer
    finally:
        rt.stop(run)


def measure(cfg: RunConfig) -> dict:
    rows, cuda = [], cfg.device == "cuda"
    if cuda:
        torch.cuda.reset_peak_memory_stats()
    result = train(cfg, on_log=rows.append)
    timed = [r for r in rows[1:] if r.get("tokens_per_s")]  # the first window holds the warm-up (and compile)
    return {"tokens_per_s": statistics.median(r["tokens_per_s"] for r in timed),
            "mfu": statistics.median(r["mfu"] for r in timed) if timed[0].get("mfu") is not None else float("nan"),
            "memory_gb": torch.cuda.max_memory_allocated() / 2 ** 30 if cuda else float("nan"),
            "loss": result.train_loss}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="llama")
    parser.add_argument("--width", type=int, default=1024)
    parser.add_argument("--depth", type=int, default=8)
    parser.add_argument("--seq", type=int, default=1024)
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--vocab", type=int, default=32768, help="synthetic tokens' vocabulary")
    parser.add_argument("--steps", type=int, default=120)
    parser.add_argument("--log-every", type=int, default=20)
    parser.add_argument("--device", default="cuda", choices=("cuda", "cpu"), help="cpu: a smoke test of the script")
    args = parser.parse_args()
    if args.device == "cuda" and not torch.cuda.is_available():
        sys.exit("cuda_path: no CUDA device is visible")
    device = torch.cuda.get_device_name() if args.device == "cuda" else "CPU"
    print(f"{device}, torch {torch.__version__}; {args.model} width {args.width} depth "
          f"{args.depth}, seq {args.seq}, batch {args.batch}, {args.steps} steps")
    root = Path(tempfile.mkdtemp(prefix="cuda-path-"))
    results = {}
    for name, (precision, compiled, parallel) in LAYOUTS.items():
        cfg = config(args, root, name, precision, compiled, parallel)
        results[name] = {"fused": fused(cfg), **measure(cfg)}
    base = results["fp32 (TF32) eager"]
    print(f"{'layout':<22} {'fused':>5} {'tokens/s':>10} {'× fp32':>7} {'MFU':>6} {'GiB':>6} {'loss':>7} {'Δ loss':>7}")
    for name, r in results.items():
        speedup = r["tokens_per_s"] / base["tokens_per_s"]
        print(f"{name:<22} {str(r['fused']):>5} {r['tokens_per_s']:>10.0f} {speedup:>7.2f}"
              f" {r['mfu']:>6.1%} {r['memory_gb']:>6.1f} {r['loss']:>7.4f} {r['loss'] / base['loss'] - 1:>+7.2%}")
    print(f"bf16 compiled / fp32 eager throughput: "
          f"{results['bf16 compiled']['tokens_per_s'] / base['tokens_per_s']:.2f}")


if __name__ == "__main__":
    main()
