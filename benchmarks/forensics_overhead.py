"""Cost of the training forensics: signals every 10 steps, and the spike guard's checkpoint ring, against a plain run.

One process trains the same model three ways, in alternating rounds (plain, signals, guard, plain, …), each a
fresh `train()` of W + S steps; a round's throughput is S steps' tokens over the wall time between the
trainer's on_log at step W and at step W + S (so model building, the first steps and the final eval and
checkpoint are outside). Medians over rounds are compared (`signals/plain throughput ratio`, `guard/plain …`).

- signals: `signals.every: 10` (hooks on the measured steps, a copy of the weights for ‖ΔW‖/‖W‖).
- guard: `guard: {enabled: true, action: rewind, ring_every: 50, ring_size: 3, rewind_steps: 100}`: one host
  sync per step for the loss, and a ring checkpoint every 50 steps, i.e. 2 per rewind window of N = 100 steps.
  No spike happens, so this is the guard's standing cost; the ring checkpoint's size and save time are
  printed too.

On a shared host whole runs swing by 2× between rounds, so the script also times the signals' own work in
paired blocks, which drift cancels: in one model and optimizer, blocks of 10 steps alternate between
"no step measured" and "the 10th step measured" (the trainer's cadence), `--blocks` pairs, and the median of
the paired throughput ratios (plain block time / measured block time) is the last line:

    signals/plain throughput, paired blocks of 10 steps: X.XXX   (goal ≥ 0.97)

    .venv/bin/python benchmarks/forensics_overhead.py            # CPU defaults: ~3 min on 2 idle cores
"""
from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import torch

from proxies.data import open_data
from proxies.registry import build_model
from trainer.checkpoint import list_checkpoints
from trainer.config import RunConfig
from trainer.evaluate import objective
from trainer.loop import train
from trainer.optim import build_optimizer
from trainer.signals import Signals

DEFAULT_TEXT = REPO.parent / "shared" / "data" / "tinyshakespeare.txt"
GUARD = {"enabled": True, "action": "rewind", "ring_every": 50, "ring_size": 3, "rewind_steps": 100}


def paired_blocks(args, data: dict, blocks: int) -> list[float]:
    """Throughput ratios (10 plain steps' time) / (10 steps with the last one measured), block pairs alternating."""
    source = open_data(data["kind"], path=data.get("path"), seq_len=args.seq)
    torch.manual_seed(0)
    model = build_model("gpt", args.width, args.depth, "mup", **source.model_options())
    optimizer = build_optimizer(model, lr=2 ** -6)
    signals = Signals(model, optimizer, every=10)
    gen = torch.Generator().manual_seed(0)

    def block(measured: bool) -> float:
        t0 = time.perf_counter()
        for i in range(10):
            measure = measured and i == 9
            if measure:
                signals.attach()
            optimizer.zero_grad(set_to_none=True)
            x, y = source.batch("train", args.batch, gen)
            loss = objective(model, x, y, 0.0)
            loss.backward()
            if measure:
                signals.detach()
                signals.after_unscale()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            if measure:
                signals.after_step()
        loss.item()
        return time.perf_counter() - t0

    block(False), block(True)  # warm-up
    return [block(False) / block(True) for _ in range(blocks)]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--width", type=int, default=128)
    p.add_argument("--depth", type=int, default=4)
    p.add_argument("--seq", type=int, default=128)
    p.add_argument("--batch", type=int, default=16)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--steps", type=int, default=100, help="timed steps per run (a multiple of 10)")
    p.add_argument("--blocks", type=int, default=20, help="paired blocks of 10 steps for the signals' own cost")
    p.add_argument("--threads", type=int, default=None)
    args = p.parse_args()
    torch.set_flush_denormal(True)
    if args.threads:
        torch.set_num_threads(args.threads)
    data = {"kind": "text", "path": str(DEFAULT_TEXT)} if DEFAULT_TEXT.is_file() else {"kind": "stdlib"}
    W, S = 10, args.steps
    sides = {"plain": {}, "signals": {"signals": {"every": 10}}, "guard": {"guard": GUARD}}
    rates: dict[str, list[float]] = {k: [] for k in sides}
    ring_bytes = None
    tmp = tempfile.TemporaryDirectory(prefix="forensics-")
    print(f"forensics overhead: gpt width {args.width} depth {args.depth}, seq {args.seq}, batch {args.batch}, "
          f"{args.rounds} rounds × {S} timed steps per side, {torch.get_num_threads()} threads, "
          f"data {data['kind']}", flush=True)
    for r in range(args.rounds):
        for name, extra in sides.items():
            cfg = RunConfig.parse({
                "model": {"name": "gpt", "width": args.width, "depth": args.depth},
                "data": {**data, "seq_len": args.seq}, "schedule": {"kind": "constant"},
                "batch_size": args.batch, "steps": W + S + 1, "log_every": 10,
                "eval": {"every": W + S + 2, "batches": 1, "noise_scale_batches": 0},
                "output": {"root": tmp.name, "study": "bench", "run": f"{name}-{r}"}, **extra})
            marks = {}

            def on_log(row, marks=marks):
                if row["step"] in (W, W + S):
                    marks[row["step"]] = time.perf_counter()

            assert train(cfg, on_log=on_log).status == "completed"
            rates[name].append(S * args.batch * args.seq / (marks[W + S] - marks[W]))
            if name == "guard":
                ring = list_checkpoints(cfg.run_dir() / "guard-ring")
                ring_bytes = ring[-1].stat().st_size
        print(f"  round {r + 1}: " + ", ".join(f"{k} {v[-1]:,.0f} tok/s" for k, v in rates.items()), flush=True)

    # the ring checkpoint's save time, measured on its own
    state = torch.load(ring[-1], weights_only=True)
    saves = []
    for _ in range(5):
        t0 = time.perf_counter()
        torch.save(state, Path(tmp.name) / "probe.pt")
        saves.append(time.perf_counter() - t0)
    tmp.cleanup()
    med = {k: statistics.median(v) for k, v in rates.items()}
    step_s = args.batch * args.seq / med["plain"]
    save_s = statistics.median(saves)
    print()
    print(f"{'side':<10}{'median tok/s':>14}{'ratio to plain':>16}")
    for k, v in med.items():
        print(f"{k:<10}{v:>14,.0f}{v / med['plain']:>16.3f}")
    print(f"ring checkpoint: {ring_bytes / 2 ** 20:.1f} MiB, save {1e3 * save_s:.0f} ms; per rewind window of "
          f"{GUARD['rewind_steps']} steps: {GUARD['rewind_steps'] // GUARD['ring_every']} saves = "
          f"{100 * (GUARD['rewind_steps'] // GUARD['ring_every']) * save_s / (GUARD['rewind_steps'] * step_s):.2f}% "
          f"of the window's {GUARD['rewind_steps'] * step_s:.1f} s of training")
    print(f"guard/plain throughput ratio: {med['guard'] / med['plain']:.2f}")
    print(f"signals/plain throughput ratio: {med['signals'] / med['plain']:.2f}")
    paired = paired_blocks(args, data, args.blocks)
    print(f"signals/plain throughput, paired blocks of 10 steps: {statistics.median(paired):.3f} "
          f"(quartiles {statistics.quantiles(paired, n=4)[0]:.3f} … {statistics.quantiles(paired, n=4)[2]:.3f}, "
          f"{len(paired)} pairs)")


if __name__ == "__main__":
    main()
