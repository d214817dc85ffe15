"""Memory and time of the run's layouts: DDP against FSDP2 at N processes, and activation checkpointing.

Per process, after one optimizer step of the trainer's own build (`trainer.build.build`: the μP model, laid out as
the RunConfig says, and its μP AdamW), the bytes it holds of
    parameters + gradients + optimizer state   (a DTensor counts its local shard)
which is what FSDP2 divides by N (goal: ≈ 1/2 of DDP's at 2 processes); the activations autograd keeps for the
backward in one forward (the bytes of the distinct storages its saved-tensor hook sees), which activation
checkpointing cuts; and the median step time (forward + backward + clip + step) over `--steps` steps after one
warm-up step. Each layout runs as N processes under torchrun (gloo on CPU, NCCL on CUDA); the table's memory is
rank 0's (every rank holds the same amount), the time the slowest rank's median.

    .venv/bin/python benchmarks/scale.py                           # CPU: gpt width 256 depth 4, 2 processes
    .venv/bin/python benchmarks/scale.py --device cuda --model llama --width 1024 --depth 8 --seq 1024 --nproc 1
The last line is `fsdp/ddp state bytes per process: X.XX`.
"""
from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch
from torch.distributed.tensor import DTensor

REPO = Path(__file__).resolve().parents[1]
LAYOUTS = {"ddp": {}, "fsdp": {"parallel": {"kind": "fsdp"}}, "ddp+ac": {"activation_checkpointing": True},
           "fsdp+ac": {"parallel": {"kind": "fsdp"}, "activation_checkpointing": True}}


def local_bytes(t: torch.Tensor) -> int:
    t = t.to_local() if isinstance(t, DTensor) else t
    return t.numel() * t.element_size()


def worker(args) -> None:
    """One process of one layout: build, step, measure; rank r writes OUT.r.json."""
    from torch.nn.parallel import DistributedDataParallel as DDP

    from trainer import runtime as rt
    from trainer.build import build
    from trainer.config import RunConfig
    from trainer.evaluate import loss_fn
    from trainer.resolve import resolve

    cfg = resolve(RunConfig.load(args.config))
    run = rt.start(cfg.device, cfg.precision, group=cfg.sharded())
    built = build(cfg, run)
    model, optimizer = built.model, built.optimizer
    forward = DDP(model) if run.distributed and not cfg.sharded() else model
    g = torch.Generator().manual_seed(0)
    x, y = built.data.batch("train", cfg.batch_size // run.world, g)
    x, y = x.to(run.device), y.to(run.device)
    saved: dict[int, int] = {}

    def keep(t):
        if not isinstance(t, torch.nn.Parameter):  # weights kept for the backward are the model's, not activations
            saved[t.untyped_storage().data_ptr()] = t.untyped_storage().nbytes()
        return t

    times = []
    for step in range(args.steps + 1):
        optimizer.zero_grad(set_to_none=True)
        if run.device.type == "cuda":
            torch.cuda.synchronize()
        start = time.perf_counter()
        with run.autocast(), torch.autograd.graph.saved_tensors_hooks(keep, lambda t: t) if step == 0 else \
                torch.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t):
            loss = loss_fn(forward, x, y)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(list(model.parameters()), 1.0)
        optimizer.step()
        if run.device.type == "cuda":
            torch.cuda.synchronize()
        if step:
            times.append(time.perf_counter() - start)
        if step == 0:
            state = {"params": sum(local_bytes(p) for p in model.parameters()),
                     "grads": sum(local_bytes(p.grad) for p in model.parameters() if p.grad is not None),
                     "optimizer": sum(local_bytes(v) for s in optimizer.state.values() for v in s.values()
                                      if isinstance(v, torch.Tensor))}
    Path(f"{args.out}.{run.rank}.json").write_text(json.dumps({**state, "activations": sum(saved.values()),
                                                               "step_s": statistics.median(times)}))
    rt.stop(run)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def measure(args, layout: str, folder: Path) -> list[dict]:
    cfg = {"model": {"name": args.model, "width": args.width, "depth": args.depth},
           "data": {"kind": "synthetic-tokens", "seq_len": args.seq, "options": {"n_tokens": 200_000}},
           "batch_size": args.batch, "steps": 1, "device": args.device, "output": {"root": str(folder)},
           **LAYOUTS[layout]}
    path = folder / f"{layout}.yaml"
    path.write_text(json.dumps(cfg))
    command = [sys.executable, "-m", "torch.distributed.run", f"--nproc_per_node={args.nproc}", "--master_addr",
               "127.0.0.1", "--master_port", str(free_port()), __file__, "--worker", "--config", str(path),
               "--out", str(folder / layout), "--steps", str(args.steps)]
    paths = [str(REPO), *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))]  # keep the caller's
    env = {**os.environ, "OMP_NUM_THREADS": str(args.threads), "PYTHONPATH": os.pathsep.join(paths)}
    subprocess.run(command, check=True, env=env, cwd=REPO)
    return [json.loads((folder / f"{layout}.{r}.json").read_text()) for r in range(args.nproc)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default="gpt")
    parser.add_argument("--width", type=int, default=256)
    parser.add_argument("--depth", type=int, default=4)
    parser.add_argument("--seq", type=int, default=128)
    parser.add_argument("--batch", type=int, default=8, help="global batch")
    parser.add_argument("--nproc", type=int, default=2)
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--threads", type=int, default=1, help="OMP threads per process")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--config", help=argparse.SUPPRESS)
    parser.add_argument("--out", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        return worker(args)
    print(f"{args.model} width {args.width} depth {args.depth} seq {args.seq} batch {args.batch}, {args.nproc} "
          f"processes on {args.device}, load {os.getloadavg()[0]:.2f}")
    rows = {}
    with tempfile.TemporaryDirectory() as tmp:
        for layout in LAYOUTS:
            ranks = measure(args, layout, Path(tmp))
            rows[layout] = {**ranks[0], "step_s": max(r["step_s"] for r in ranks)}
    mib = 2 ** 20
    print(f"{'layout':<9}{'params':>9}{'grads':>9}{'optim':>9}{'state':>9}{'activ.':>9}{'step s':>9}   (MiB/process)")
    for layout, r in rows.items():
        state = r["params"] + r["grads"] + r["optimizer"]
        print(f"{layout:<9}{r['params'] / mib:9.2f}{r['grads'] / mib:9.2f}{r['optimizer'] / mib:9.2f}"
              f"{state / mib:9.2f}{r['activations'] / mib:9.2f}{r['step_s']:9.3f}")
    state = {k: r["params"] + r["grads"] + r["optimizer"] for k, r in rows.items()}
    print(f"activation checkpointing: activations ×{rows['ddp+ac']['activations'] / rows['ddp']['activations']:.2f}, "
          f"step time ×{rows['ddp+ac']['step_s'] / rows['ddp']['step_s']:.2f} (ddp); "
          f"fsdp/ddp step time: {rows['fsdp']['step_s'] / rows['ddp']['step_s']:.2f}")
    print(f"fsdp/ddp state bytes per process: {state['fsdp'] / state['ddp']:.2f}")


if __name__ == "__main__":
    main()
