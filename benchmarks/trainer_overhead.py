"""Trainer overhead: `trainer.loop.train` against a bare ~20-line PyTorch loop doing the same work.

Both sides train the same model (`build_model("gpt", W, D, "mup", ...)`), with the same μP AdamW
(`build_optimizer`), the same cosine LambdaLR, grad clipping at 1.0, the same data source, batch and
precision. They alternate in one process, trainer round then bare round, R rounds of S steps each,
after a warm-up of each side; the medians of the rounds' tokens/s are compared. The last line is

    trainer/bare throughput ratio: X.XX

How the two alternate: one `train(cfg)` call runs warm-up + R·S + 1 steps and reports through
`on_log` every `log_every` steps. At the warm-up's end and at the end of every trainer round, the
`on_log` callback runs the bare loop's warm-up / next timed round (the trainer is paused inside its
callback meanwhile), so the two share the process, the allocator and the caches.

How the trainer is timed: wall time from the moment one boundary callback returns to the moment the
next boundary callback is entered. That window holds every trainer step of the round and all the
work the trainer does per logged row (the loss/grad-norm host syncs, the row, the Parquet curve
buffer, the divergence check), and nothing of the bare loop, which runs inside the callback.
The rows' own `tokens_per_s` is printed too but is not used for the ratio: the trainer stops its
clock before building a row and restarts it after `on_log`, so it leaves out its own logging work
and would flatter the trainer. The run's last step (where the trainer always evaluates) and the
final checkpoint come after the last window and are not timed; eval.every is set past the run,
noise-scale batches to 0 and checkpoint.every to 0 (only at the end), in a temporary output root.

Why alternate rather than run one side after the other: other processes come and go, and steps
change speed as training goes on. Alternating rounds keeps both sides at the same step counts and
in the same conditions, round by round. (On CPU fp32 subnormals appear in the attention backward
after ~50 steps and made steps ~1.4× slower; the trainer flushes them to zero on CPU, and so does
this script, before the first torch op, for both sides.)

    .venv/bin/python benchmarks/trainer_overhead.py                      # CPU defaults: ~2.5 min on 2 idle cores
    .venv/bin/python benchmarks/trainer_overhead.py --device cuda --width 1024 --depth 12 \\
        --seq 1024 --batch 16 --dtype bf16 --compile                     # a GPU run, with MFU
"""
from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import tempfile
import time
from contextlib import nullcontext
from pathlib import Path

T0 = time.perf_counter()
REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import torch
import torch.nn.functional as F

from proxies.data import open_data
from proxies.registry import build_model
from trainer.config import RunConfig
from trainer.flops import flops_per_token, peak_flops
from trainer.loop import train
from trainer.optim import build_optimizer
from trainer.schedule import Schedule

DEFAULT_TEXT = REPO.parent / "shared" / "data" / "tinyshakespeare.txt"
SEED = 0


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--width", type=int, default=256)
    p.add_argument("--depth", type=int, default=4)
    p.add_argument("--seq", type=int, default=128)
    p.add_argument("--batch", type=int, default=16)
    p.add_argument("--rounds", type=int, default=9, help="timed rounds per side (default 9)")
    p.add_argument("--steps", type=int, default=30,
                   help="timed steps per round; a multiple of --log-every (default 30)")
    p.add_argument("--warmup", type=int, default=None, help="untimed warm-up steps per side (default: --log-every)")
    p.add_argument("--log-every", type=int, default=10, help="the trainer's log cadence (default 10)")
    p.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    p.add_argument("--compile", action="store_true", help="torch.compile the model on both sides")
    p.add_argument("--dtype", choices=("fp32", "bf16"), default="fp32", help="fp32, or bf16 autocast (both sides)")
    p.add_argument("--lr", type=float, default=2 ** -6, help="base LR at the base width (μP groups scale it)")
    p.add_argument("--threads", type=int, default=None,
                   help="torch CPU threads (default: torch's own, one per core); "
                        "1 keeps a busy host from stalling the steps")
    p.add_argument("--data", type=Path, default=None,
                   help=f"a text file (byte-level); default {DEFAULT_TEXT} if it exists, else the stdlib corpus")
    args = p.parse_args()
    args.warmup = args.log_every if args.warmup is None else args.warmup
    for name in ("width", "depth", "seq", "batch", "rounds", "steps", "log_every", "warmup", "threads"):
        if getattr(args, name) is not None and getattr(args, name) < 1:
            p.error(f"--{name.replace('_', '-')} must be ≥ 1")
    for name in ("steps", "warmup"):
        if getattr(args, name) % args.log_every:
            p.error(f"--{name} {getattr(args, name)} must be a multiple of --log-every {args.log_every} "
                    "(rounds start and end at the trainer's on_log calls)")
    if args.device == "cuda" and not torch.cuda.is_available():
        p.error("--device cuda: torch sees no CUDA device")
    return args


def data_source(args) -> tuple[str, str | None, str]:
    """(kind, path, description) of the data both sides read."""
    if args.data is not None:
        return "text", str(args.data.resolve()), f"text: {args.data.resolve()}"
    if DEFAULT_TEXT.is_file():
        return "text", str(DEFAULT_TEXT), f"text: {DEFAULT_TEXT}"
    return "stdlib", None, f"stdlib: this Python's standard library sources ({DEFAULT_TEXT} not found)"


def busy_cores(seconds: float = 1.0) -> float | None:
    """How many cores other processes keep busy now, from /proc/stat over `seconds` (this process idles);
    None off Linux."""
    def read() -> list[int]:
        with open("/proc/stat") as f:
            return [int(v) for v in f.readline().split()[1:]]
    try:
        before = read()
        time.sleep(seconds)
        after = read()
    except (OSError, ValueError):
        return None
    delta = [b - a for a, b in zip(before, after, strict=True)]
    idle, total = delta[3] + delta[4], sum(delta[:8])  # idle + iowait; user … steal
    return (os.cpu_count() or 1) * (1 - idle / total) if total else None


def busy_note(args, busy: float | None) -> str | None:
    """A warning when other processes already keep the CPU cores busy (CPU runs with several threads only)."""
    if args.device != "cpu" or torch.get_num_threads() == 1 or busy is None or busy < 0.3:
        return None
    # Seen on a shared 2-core host: with 2 torch threads beside another busy process, OpenMP threads
    # wait on each other and a step took ~3.2 s instead of ~0.4 s with 1 thread; timings swing by 10×.
    return (f"note: other processes keep {busy:.1f} of {os.cpu_count()} cores busy; "
            f"with {torch.get_num_threads()} torch threads the steps may stall on each other's OpenMP threads "
            "and timings can swing widely; --threads 1 is steadier")


def main() -> None:
    args = parse_args()
    if args.device == "cpu":  # what trainer.runtime.start does; it must precede torch's first parallel op (see there)
        torch.set_flush_denormal(True)
    if args.threads is not None:
        torch.set_num_threads(args.threads)
    device = torch.device(args.device)
    cuda = device.type == "cuda"
    kind, path, data_desc = data_source(args)
    W, R, S, L = args.warmup, args.rounds, args.steps, args.log_every
    total_steps = W + R * S + 1  # the +1: the trainer's final step (with its eval), outside every window

    def sync() -> None:
        if cuda:
            torch.cuda.synchronize()

    # ---------------------------------------------------------------- the bare side, set up before train()
    data = open_data(kind, path=path, seq_len=args.seq)
    torch.manual_seed(SEED)
    model = build_model("gpt", args.width, args.depth, "mup", vocab_size=data.vocab_size,
                        block_size=args.seq).to(device)
    opt = build_optimizer(model, lr=args.lr)  # the trainer's defaults: betas (0.9, 0.95), eps 1e-8, wd 0; fused on CUDA
    sched = torch.optim.lr_scheduler.LambdaLR(opt, Schedule("cosine", total_steps, 0))
    fwd = torch.compile(model) if args.compile else model
    gen = torch.Generator().manual_seed(SEED)
    autocast = (lambda: torch.autocast(device.type, dtype=torch.bfloat16)) if args.dtype == "bf16" else nullcontext
    if cuda:  # what trainer.runtime.start sets for CUDA runs (it runs again inside train(), before any bare step)
        torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = True

    def bare_steps(n: int) -> None:
        # The textbook loop. It leaves out what the trainer adds: the curves (Parquet rows), the
        # loss/grad-norm host syncs and log rows every log_every steps, the divergence check, eval
        # and noise scale, checkpoints, the GradScaler and the DDP / grad-accum plumbing.
        for _ in range(n):
            x, y = data.batch("train", args.batch, gen)
            if cuda:
                x, y = x.pin_memory().to(device, non_blocking=True), y.pin_memory().to(device, non_blocking=True)
            with autocast():
                logits = fwd(x)
                loss = F.cross_entropy(logits.view(-1, logits.size(-1)), y.view(-1))
            opt.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            sched.step()

    # ---------------------------------------------------------------- the trainer side
    tmp = tempfile.TemporaryDirectory(prefix="trainer-overhead-")
    cfg = RunConfig.parse({
        "model": {"name": "gpt", "width": args.width, "depth": args.depth, "parametrization": "mup"},
        "data": {"kind": kind, "path": path, "seq_len": args.seq},
        "optimizer": {"name": "adamw", "lr": args.lr, "grad_clip": 1.0},
        "schedule": {"kind": "cosine", "warmup_steps": 0},
        "batch_size": args.batch, "grad_accum": 1, "steps": total_steps, "seed": SEED,
        "precision": args.dtype, "compile": args.compile, "device": args.device, "log_every": L,
        "eval": {"every": total_steps + 1, "batches": 1, "noise_scale_batches": 0},  # only the forced final eval
        "checkpoint": {"every": 0, "keep": 1},  # only at the end
        "output": {"root": tmp.name, "study": "bench", "run": "trainer-overhead"},
    })
    tokens_per_step = args.batch * args.seq
    boundaries = {W + k * S: k for k in range(R + 1)}  # step -> round that ends there (0: the warm-up)
    trainer_rates, bare_rates, row_rates, row_mfus = [], [], [], []
    trainer_cpu, bare_cpu = [], []  # process CPU seconds per step, all threads (a host-side view of the same windows)
    clock = {"window_start": None, "cpu_start": None}

    def on_log(row: dict) -> None:
        sync()
        entered, entered_cpu = time.perf_counter(), time.process_time()
        step = row["step"]
        if W < step <= W + R * S:
            row_rates.append(row["tokens_per_s"])
            if row.get("mfu") is not None:
                row_mfus.append(row["mfu"])
        if step not in boundaries:
            return
        k = boundaries[step]
        if k == 0:
            bare_steps(W)  # the bare side's warm-up, untimed
        else:
            trainer_rates.append(S * tokens_per_step / (entered - clock["window_start"]))
            trainer_cpu.append((entered_cpu - clock["cpu_start"]) / S)
            sync()
            t0, c0 = time.perf_counter(), time.process_time()
            bare_steps(S)
            sync()
            bare_rates.append(S * tokens_per_step / (time.perf_counter() - t0))
            bare_cpu.append((time.process_time() - c0) / S)
            print(f"  round {k}/{R}: trainer {trainer_rates[-1]:,.0f} tok/s, bare {bare_rates[-1]:,.0f} tok/s",
                  flush=True)
        sync()
        clock["window_start"], clock["cpu_start"] = time.perf_counter(), time.process_time()

    print(f"trainer overhead: gpt width {args.width} depth {args.depth}, seq {args.seq}, batch {args.batch} "
          f"({tokens_per_step:,} tokens/step), {args.device}, {args.dtype}{', compiled' if args.compile else ''}"
          )
    print(f"data: {data_desc}")
    print(f"rounds: {R} × {S} timed steps per side, after {W} warm-up steps each; trainer log_every {L}; "
          f"torch {torch.__version__}, {torch.get_num_threads()} threads"
          + (f", {torch.cuda.get_device_name(device)}" if cuda else f", {platform.processor() or platform.machine()}"),
          flush=True)
    busy = busy_cores() if not cuda else None
    if busy is not None:
        print(f"host: other processes busy on {busy:.1f} of {os.cpu_count()} cores just before the start", flush=True)
    note = busy_note(args, busy)
    if note:
        print(note, flush=True)
    started = time.perf_counter()
    try:
        result = train(cfg, on_log=on_log)
    finally:
        tmp.cleanup()
    if result.status != "completed" or len(trainer_rates) != R or len(bare_rates) != R:
        sys.exit(f"trainer run ended {result.status} at step {result.step} ({result.reason}); "
                 f"{len(trainer_rates)} of {R} rounds timed")

    # ---------------------------------------------------------------- report
    flops = flops_per_token(model, args.seq)
    peak = peak_flops(device)

    def mfu(rate: float) -> str:
        return f"{flops * rate / peak:.1%}" if peak else "n/a"

    t_med, b_med = statistics.median(trainer_rates), statistics.median(bare_rates)
    r_med = statistics.median(row_rates)
    t_cpu, b_cpu = statistics.median(trainer_cpu), statistics.median(bare_cpu)
    table = [("side", "median tok/s", "ms/step", "CPU ms/step", "MFU", "rounds (tok/s)"),
             ("trainer (wall, between on_log)", f"{t_med:,.0f}", f"{1e3 * tokens_per_step / t_med:.1f}",
              f"{1e3 * t_cpu:.1f}", mfu(t_med), " ".join(f"{r:,.0f}" for r in trainer_rates)),
             ("bare loop", f"{b_med:,.0f}", f"{1e3 * tokens_per_step / b_med:.1f}", f"{1e3 * b_cpu:.1f}",
              mfu(b_med), " ".join(f"{r:,.0f}" for r in bare_rates)),
             ("trainer rows' tokens_per_s *", f"{r_med:,.0f}", f"{1e3 * tokens_per_step / r_med:.1f}", "",
              f"{statistics.median(row_mfus):.1%}" if row_mfus else "n/a", f"{len(row_rates)} rows")]
    widths = [max(len(line[i]) for line in table) for i in range(len(table[0]))]
    print()
    for i, line in enumerate(table):
        cells = enumerate(zip(line, widths, strict=True))
        print("  ".join(cell.ljust(w) if j in (0, 5) else cell.rjust(w) for j, (cell, w) in cells))
        if i == 0:
            print("  ".join("-" * w for w in widths))
    print("* the trainer's own log rows: they leave out the logging work itself (not used for the ratio)")
    print("CPU ms/step: process CPU time (all threads) per step, median of rounds; "
          "about threads × ms/step on an idle CPU host")
    paired = [t / b for t, b in zip(trainer_rates, bare_rates, strict=True)]
    print(f"paired rounds trainer/bare: {' '.join(f'{p:.3f}' for p in paired)} "
          f"(median {statistics.median(paired):.3f})")
    print(f"FLOPs/token {flops / 1e6:,.1f} M; "
          f"device peak {f'{peak / 1e12:,.0f} TFLOP/s' if peak else 'unknown (CPU)'}; "
          f"wall time {time.perf_counter() - started:.0f} s in train(), {time.perf_counter() - T0:.0f} s in all")
    print(f"trainer/bare throughput ratio: {t_med / b_med:.2f}")


if __name__ == "__main__":
    main()
