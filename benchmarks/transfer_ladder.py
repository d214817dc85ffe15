"""Transfer beyond width, measured against the truth: a μP proxy → targets `--ratio`× wider at m× the batch and m× the
tokens, on each byte-level corpus, four rules against a direct LR sweep at each target.

Per corpus (the built-in one, and `--text PATH`, e.g. ../shared/data/tinyshakespeare.txt): a μP gpt (depth 2,
`--seq` bytes, cosine) tuned by `sweep proxy` at `--proxy-width` (batch `--batch`, `--steps` steps); `sweep verify`
across widths W, 2W (the μP width verdict, an equivalence test), across batch B, 2B (tokens held) and across steps
S/2, S, 2S (batch held) by default (`--widths`, `--batches`, `--horizons`: other multiples), each grid `--grid` LRs
over `--span` × `--ladder-seeds` seeds, refined by up to `--refine` points per value until its optimum is bracketed
(the ladder's run count printed excludes them). Then, per multiple m in
`--multiples`, `sweep transfer` writes the target (width ratio·W, batch m·B, m× the proxy's tokens) four ways:
- none: the proxy's settings;
- textbook: the square-root rule across batch (Malladi et al. 2022), nothing across tokens;
- fitted-no-prior: the measured batch and horizon laws alone (`--prior none`; refused when a law has no interval);
- posterior: the laws as posteriors over their published priors (½ across batch, −0.3 across tokens).
Each trains `--seeds` seeds; the truth is a direct LR sweep at the target (`--direct` LRs half an octave apart around
the textbook LR, the textbook config otherwise, `--seeds` seeds each).

    OMP_NUM_THREADS=1 nice -n 15 .venv/bin/python benchmarks/transfer_ladder.py \
        --text ../shared/data/tinyshakespeare.txt

Goals (issue 37): posterior within 1.005× of the direct best at every target; never worse than textbook by more than
the seed noise; batch and horizon intervals ≤ ±0.2 at the ladder's cost (printed: runs and FLOPs); the μP width
verdict "pass" on both corpora. The last lines print each goal as met or not met.
"""
from __future__ import annotations

import argparse
import multiprocessing
import os
import sys
import tempfile
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np
import yaml

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from rich.console import Console  # noqa: E402 (after the path is set)

from sweep.errors import InputError  # noqa: E402
from trainer.config import RunConfig  # noqa: E402
from trainer.loop import train  # noqa: E402

RULES = {"none": {}, "textbook": {"batch_rule": "sqrt"},
         "fitted-no-prior": {"batch_rule": "fitted", "horizon": "fitted", "prior": "none"},
         "posterior": {"batch_rule": "fitted", "horizon": "fitted", "prior": "published"}}


def spec(args, data: dict) -> dict:
    return {"name": "ladder", "trials": args.trials,
            "run": {"model": {"name": "gpt", "depth": 2, "options": {"block_size": args.seq}},
                    "data": {**data, "seq_len": args.seq},
                    "optimizer": {"name": "adamw", "weight_decay": 0.0, "beta1": 0.9, "beta2": 0.95},
                    "schedule": {"kind": "cosine", "warmup_fraction": 0.05, "min_lr_ratio": 0.1},
                    "batch_size": args.batch, "steps": args.steps, "log_every": 50,
                    "eval": {"every": max(1, args.steps // 2), "batches": 16, "noise_scale_batches": 0, "seed": 0}},
            "search": {"optimizer.lr": {"low": 2 ** -11, "high": 2 ** -3, "log": True}},
            "sampler": {"name": "tpe", "seed": 0}, "pruner": {"name": "none"}}


def final_loss(config_yaml: str, lr: float, seed: int) -> float:
    """One target run's final validation loss (in a worker process: the config travels as YAML)."""
    import torch

    torch.set_num_threads(1)
    config = RunConfig.from_yaml(config_yaml)
    cfg = RunConfig.parse({**config.model_dump(mode="json"), "seed": seed,
                           "optimizer": {**config.optimizer.model_dump(mode="json"), "lr": lr},
                           "output": {**config.output.model_dump(mode="json"), "run": None}})
    result = train(cfg, resume=True)
    return result.val_loss if result.val_loss is not None else float("nan")


def mean_losses(points: list[tuple[RunConfig, float]], seeds: int, workers: int) -> list[tuple[float, list[float]]]:
    """(mean, per seed) of the final loss at each (config, LR), `seeds` seeds each, over `workers` processes."""
    jobs = [(cfg.to_yaml(), lr, seed) for cfg, lr in points for seed in range(seeds)]
    unique = list(dict.fromkeys(jobs))  # the textbook run is also the direct sweep's middle point: trained once
    with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn")) as pool:
        loss = dict(zip(unique, pool.map(final_loss, *zip(*unique, strict=True)), strict=True))
    per_point = [[loss[job] for job in jobs[i * seeds:(i + 1) * seeds]] for i in range(len(points))]
    return [(float(np.mean(v)), v) for v in per_point]


def ladders(spec_path: Path, args, console: Console) -> int:
    """The proxy sweep and the three ladders; returns the ladder's runs."""
    from sweep.proxy.command import run_proxy
    from sweep.proxy.request import SweepRequest
    from sweep.verify.command import run_verify
    from sweep.verify.request import VerifyRequest

    w, s, b = args.proxy_width, args.steps, args.batch
    if run_proxy(SweepRequest(spec_path, width=w, workers=args.workers), console):
        sys.exit("sweep proxy failed")
    grid = f"{args.span},{args.grid}"
    runs = 0
    axes = [f"{name}={','.join(str(round(m * v)) for m in multipliers)}" for name, v, multipliers in
            (("width", w, args.widths), ("batch_size", b, args.batches), ("steps", s, args.horizons))]
    for across in axes:
        code = run_verify(VerifyRequest(spec_path, across=across, span=grid, seeds=args.ladder_seeds,
                                        refine=args.refine, parametrizations="mup", workers=args.workers), console)
        if code not in (0, 1):
            sys.exit(f"sweep verify --across {across} failed ({code})")
        runs += across.count(",") + 1  # axis values, × grid × seeds below
    at_targets = [f"steps={','.join(str(round(m * s)) for m in args.horizons_at_target)}", args.horizons_at_target]
    for batch in (m * b for m in args.multiples if args.horizons_at_target and m * b != b):
        code = run_verify(VerifyRequest(spec_path, across=at_targets[0], span=grid, seeds=args.ladder_seeds,
                                        refine=args.refine, parametrizations="mup", workers=args.workers,
                                        ladder_batch=batch), console)
        if code not in (0, 1):
            sys.exit(f"sweep verify --across {at_targets[0]} --ladder-batch {batch} failed ({code})")
        runs += len(at_targets[1])
    return runs * args.grid * args.ladder_seeds


def transfers(spec_path: Path, root: Path, m: int, args, console: Console) -> dict[str, RunConfig | str]:
    from sweep.rules import Target
    from sweep.transfer.command import run_transfer

    tokens = m * args.steps * args.batch * args.seq
    out = {}
    for name, rule in RULES.items():
        target = Target(width=args.ratio * args.proxy_width, batch_size=m * args.batch, tokens=tokens, **rule)
        try:
            path = run_transfer(spec_path, target, trial="best", proxy_width=None, storage=None, password_env=None,
                                out=root / f"{name}-x{m}.yaml", console=console)
            out[name] = RunConfig.load(path)
        except InputError as err:  # a law without an interval and no prior: nothing to carry the LR with
            out[name] = f"refused: {err}"
    return out


def measure(configs: dict, args) -> dict:
    """Each rule's loss and the direct sweep at the target."""
    textbook = configs["textbook"]
    names = [n for n, c in configs.items() if isinstance(c, RunConfig)]
    lrs = [textbook.optimizer.lr * 2 ** k for k in (np.arange(args.direct) - (args.direct - 1) / 2) * 0.5]
    points = [(configs[n], configs[n].optimizer.lr) for n in names] + [(textbook, lr) for lr in lrs]
    results = mean_losses(points, args.seeds, args.workers)
    direct = dict(zip(lrs, results[len(names):], strict=True))
    best_lr = min(direct, key=lambda lr: direct[lr][0])
    return {"rules": dict(zip(names, results[:len(names)], strict=True)), "direct": direct, "best_lr": best_lr,
            "best": direct[best_lr][0], "noise": float(np.mean([np.std(v[1], ddof=1) for v in direct.values()]))
            if args.seeds > 1 else float("nan")}


def corpus(name: str, data: dict, root: Path, args) -> dict:
    from sweep.rules.summary import read_summary

    root = root / name
    root.mkdir(parents=True, exist_ok=True)
    os.environ["SWEEP_ROOT"] = str(root)
    spec_path = root / "spec.yaml"
    spec_path.write_text(yaml.safe_dump(spec(args, data)))
    console = Console(width=160)
    runs = ladders(spec_path, args, console)
    laws = {axis: (read_summary(root, "ladder", axis=axis) or {}).get("laws", {}).get("mup")
            for axis in ("width", "batch_size", "steps")}
    for m in args.multiples if args.horizons_at_target else []:  # the horizon ladders at the targets' batches
        summary = read_summary(root, "ladder", axis="steps", batch=m * args.batch) or {}
        laws[f"steps at batch {m * args.batch}"] = summary.get("laws", {}).get("mup")
    targets = {}
    for m in args.multiples:
        configs = transfers(spec_path, root, m, args, console)
        targets[m] = {"configs": configs, **measure(configs, args)}
    return {"laws": laws, "targets": targets, "ladder_runs": runs}


def report(name: str, found: dict, args) -> list[tuple[str, bool]]:
    """Print a corpus's table; the goals' verdicts."""
    from sweep.rules.prior import chain_text

    goals = []
    print(f"\n=== {name}: proxy width {args.proxy_width}, ladder {found['ladder_runs']} runs "
          f"({args.grid} LRs × {args.ladder_seeds} seeds per value) ===")
    for axis, law in found["laws"].items():
        if law:
            print(f"law across {axis}: {chain_text(law)}; {law.get('certificate', '')}")
    width = found["laws"]["width"] or {}
    goals.append((f"{name}: μP width verdict pass", width.get("passed") is True))
    for axis in [a for a in found["laws"] if a != "width"]:
        law = found["laws"][axis] or {}
        post = law.get("posterior") or {}
        half = (post.get("high", np.nan) - post.get("low", np.nan)) / 2
        measured = (law.get("high", np.nan) or np.nan) - (law.get("low", np.nan) or np.nan)
        print(f"{axis}: measured half-width {measured / 2:.3f}, posterior half-width {half:.3f}")
        goals.append((f"{name}: {axis} posterior interval ≤ ±0.2 (±{half:.3f})", bool(half <= 0.2)))
    for m, t in found["targets"].items():
        print(f"\ntarget ×{m} batch and tokens, width {args.ratio * args.proxy_width}: direct best LR "
              f"{t['best_lr']:.4g} loss {t['best']:.4f}; seed noise (mean std over the direct grid) {t['noise']:.4f}")
        print(f"{'rule':<18}{'lr':>10}{'val loss':>10}{'/ direct best':>15}   seeds")
        for rule, c in t["configs"].items():
            if not isinstance(c, RunConfig):
                print(f"{rule:<18}{c}")
                continue
            loss, seeds = t["rules"][rule]
            print(f"{rule:<18}{c.optimizer.lr:>10.4g}{loss:>10.4f}{loss / t['best']:>15.4f}   "
                  + ", ".join(f"{v:.4f}" for v in seeds))
        print("direct grid: " + ", ".join(f"{lr:.3g}: {v[0]:.4f}" for lr, v in t["direct"].items()))
        if "posterior" in t["rules"]:
            post, text = t["rules"]["posterior"][0], t["rules"]["textbook"][0]
            goals.append((f"{name} ×{m}: posterior / direct best {post / t['best']:.4f} ≤ 1.005",
                          bool(post / t["best"] <= 1.005)))
            goals.append((f"{name} ×{m}: posterior − textbook {post - text:+.4f} ≤ seed noise {t['noise']:.4f}",
                          bool(post - text <= t["noise"])))
    return goals


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--text", default=None, help="a second byte corpus (e.g. ../shared/data/tinyshakespeare.txt)")
    parser.add_argument("--corpora", default="builtin,text", help="which corpora to run (text needs --text)")
    parser.add_argument("--proxy-width", type=int, default=32)
    parser.add_argument("--ratio", type=int, default=8, help="the target's width over the proxy's")
    parser.add_argument("--multiples", default="2,4", help="targets: m× the batch and m× the tokens, each m")
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--seq", type=int, default=64)
    parser.add_argument("--steps", type=int, default=150, help="the proxy's steps")
    parser.add_argument("--trials", type=int, default=6, help="proxy sweep trials (the LR only)")
    parser.add_argument("--grid", type=int, default=9, help="LRs per ladder value, spread over --span")
    parser.add_argument("--span", default="2^-12,2^-2", help="the ladder grid's lowest and highest LR")
    parser.add_argument("--ladder-seeds", type=int, default=2)
    parser.add_argument("--widths", default="1,2", help="the width ladder: multiples of the proxy's width")
    parser.add_argument("--batches", default="1,2", help="the batch ladder (tokens held): multiples of --batch")
    parser.add_argument("--horizons", default="0.5,1,2", help="the steps ladder (batch held): multiples of --steps")
    parser.add_argument("--horizons-at-target", default="",
                        help="the steps ladder also at each target's batch (verify --ladder-batch): multiples of "
                             "--steps, e.g. 0.25,0.5,1,2 (empty: none; the horizon law then comes from --batch)")
    parser.add_argument("--refine", type=int, default=4, help="extra ladder points per value until bracketed")
    parser.add_argument("--seeds", type=int, default=2, help="seeds per target run and direct point")
    parser.add_argument("--direct", type=int, default=7, help="direct LRs at each target, half an octave apart")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--root", default=str(Path(tempfile.gettempdir()) / "sweep-bench-ladder"))
    args = parser.parse_args()
    args.multiples = [int(m) for m in args.multiples.split(",")]
    args.widths, args.batches, args.horizons = ([float(m) for m in a.split(",")]
                                                for a in (args.widths, args.batches, args.horizons))
    args.horizons_at_target = [float(m) for m in args.horizons_at_target.split(",") if m]
    print(f"sizes: μP gpt depth 2 seq {args.seq}, proxy width {args.proxy_width} batch {args.batch} {args.steps} "
          f"steps, {args.trials} trials; targets width {args.ratio * args.proxy_width} at ×{args.multiples} batch and "
          f"tokens; ladder {args.grid} LRs over {args.span} × {args.ladder_seeds} seeds; target runs and {args.direct} "
          f"direct LRs × {args.seeds} seeds; {args.workers} workers", flush=True)
    corpora = {"builtin": {"kind": "stdlib"}}
    if args.text:
        corpora["text"] = {"kind": "text", "path": str(Path(args.text).resolve())}
    goals = []
    for name, data in ((n, d) for n, d in corpora.items() if n in args.corpora.split(",")):
        goals += report(name, corpus(name, data, Path(args.root), args), args)
    print("\ngoals:")
    for goal, met in goals:
        print(f"  {'met    ' if met else 'NOT met'}  {goal}")


if __name__ == "__main__":
    main()
