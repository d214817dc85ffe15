"""Transfer beyond width, measured: a μP proxy → a target 4× wider, at 2× the batch and 2× the tokens.

A μP gpt (depth 2, head dim 16, seq 64, cosine) on the built-in corpus. The proxy sweep tunes the LR at
`--proxy-width` (batch 16, `--steps` steps); the ladder measures, at the proxy's width, the optimal LR across
batch 16, 32 (tokens held) and across steps S/2, S, 2S (batch held), and across widths W, 2W for the loss law,
and across steps S, 2S at width 2W (the loss law's width × tokens term: the target sits off the cross the other
ladders draw).
`sweep transfer` then writes the target (width 4W, batch 32, twice the tokens) three ways: (a) no rule (the
proxy's settings), (b) the textbook rules (square root across batch, Malladi et al. 2022; β2 half-life and AdamW
timescale), (c) the fitted laws (batch and horizon). Each trains on `--seeds` seeds; the truth is a direct LR
sweep at the target (7 points half an octave apart around the textbook LR, whatever a rule under test says, with the
textbook config's other settings, which the fitted config shares: `--seeds` seeds each).

    nice -n 15 .venv/bin/python benchmarks/transfer_ladder.py            # see the sizes printed first
    nice -n 15 .venv/bin/python benchmarks/transfer_ladder.py --steps 60 --grid 5   # a smoke run

Goals (issue 20): fitted within 0.5% of the direct best and never worse than textbook by more than seed noise;
the measured loss inside the predicted interval with an error ≤ 2%. The last line is
`fitted / direct best loss: X.XXXX`.
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

from trainer.config import RunConfig  # noqa: E402
from trainer.loop import train  # noqa: E402


def spec(steps: int, trials: int) -> dict:
    return {"name": "ladder", "trials": trials,
            "run": {"model": {"name": "gpt", "depth": 2, "options": {"block_size": 64}},
                    "data": {"kind": "stdlib", "seq_len": 64},
                    "optimizer": {"name": "adamw", "weight_decay": 0.0, "beta1": 0.9, "beta2": 0.95},
                    "schedule": {"kind": "cosine", "warmup_fraction": 0.05, "min_lr_ratio": 0.1},
                    "batch_size": 16, "steps": steps, "log_every": 50,
                    "eval": {"every": max(1, steps // 2), "batches": 16, "noise_scale_batches": 0, "seed": 0}},
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


def ladder(spec_path: Path, args, console: Console) -> None:
    from sweep.proxy.command import run_proxy
    from sweep.proxy.request import SweepRequest
    from sweep.verify.command import run_verify
    from sweep.verify.request import VerifyRequest

    w, s = args.proxy_width, args.steps
    if run_proxy(SweepRequest(spec_path, width=w, workers=args.workers), console):
        sys.exit("sweep proxy failed")
    grid = f"{args.span},{args.grid}"
    widths = ",".join(str(int(w * 2.0 ** k)) for k in range(-args.narrower, 2))
    ladders = [(f"width={widths}", None), (f"batch_size={args.batches}", None), (f"steps={s // 2},{s},{2 * s}", None),
               (f"steps={s},{2 * s}", 2 * w)]  # the second width: the loss law's width × tokens term
    for across, at_width in ladders:
        code = run_verify(VerifyRequest(spec_path, across=across, span=grid, seeds=args.ladder_seeds,
                                        parametrizations="mup", ladder_width=at_width, workers=args.workers), console)
        if code not in (0, 1):
            sys.exit(f"sweep verify --across {across} failed ({code})")


def transfers(spec_path: Path, root: Path, args, console: Console) -> dict[str, RunConfig]:
    from sweep.rules import Target
    from sweep.transfer.command import run_transfer

    tokens = 2 * args.steps * 16 * 64
    rules = {"none": {}, "textbook": {"batch_rule": "sqrt"},
             "fitted": {"batch_rule": "fitted", "horizon": "fitted"}}
    out = {}
    for name, rule in rules.items():
        target = Target(width=4 * args.proxy_width, batch_size=32, tokens=tokens, **rule)
        path = run_transfer(spec_path, target, trial="best", proxy_width=None, storage=None, password_env=None,
                            out=root / f"{name}.yaml", console=console)
        out[name] = RunConfig.load(path)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--proxy-width", type=int, default=32)
    parser.add_argument("--steps", type=int, default=150, help="the proxy's steps at batch 16")
    parser.add_argument("--trials", type=int, default=6, help="proxy sweep trials (the LR only)")
    parser.add_argument("--grid", type=int, default=7, help="LRs per ladder value, spread over --span")
    parser.add_argument("--span", default="2^-11,2^-3", help="the ladder grid's lowest and highest LR")
    parser.add_argument("--batches", default="16,32", help="the batch ladder (tokens held)")
    parser.add_argument("--narrower", type=int, default=0, help="widths below the proxy's in the width ladder")
    parser.add_argument("--ladder-seeds", type=int, default=1)
    parser.add_argument("--seeds", type=int, default=2, help="seeds per target run and direct point")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--skip-direct", action="store_true", help="train the fitted config only, for the prediction "
                        "(no other rule, no direct sweep at the target: the LR goals need them)")
    parser.add_argument("--root", default=str(Path(tempfile.gettempdir()) / "sweep-bench-ladder"))
    args = parser.parse_args()
    root = Path(args.root)
    root.mkdir(parents=True, exist_ok=True)
    os.environ["SWEEP_ROOT"] = str(root)
    spec_path = root / "spec.yaml"
    spec_path.write_text(yaml.safe_dump(spec(args.steps, args.trials)))
    print(f"sizes: proxy gpt width {args.proxy_width} depth 2 seq 64, batch 16, {args.steps} steps; target width "
          f"{4 * args.proxy_width}, batch 32, {args.steps} steps (2× tokens); ladder grid {args.grid} LRs over "
          f"{args.span}, batches {args.batches}, {args.narrower} width(s) below the proxy's, × "
          f"{args.ladder_seeds} seed(s); target runs and direct sweep {args.seeds} seeds", flush=True)
    console = Console(width=140)
    ladder(spec_path, args, console)
    configs = transfers(spec_path, root, args, console)
    report(configs, args)


def report(configs: dict[str, RunConfig], args) -> None:
    fitted, textbook = configs["fitted"], configs["textbook"]
    names = [name for name in configs if name == "fitted" or not args.skip_direct]
    lrs = [] if args.skip_direct else [textbook.optimizer.lr * 2 ** k for k in np.arange(-1.5, 1.51, 0.5)]
    points = [(configs[name], configs[name].optimizer.lr) for name in names] + [(textbook, lr) for lr in lrs]
    results = mean_losses(points, args.seeds, args.workers)
    measured = dict(zip(names, results[:len(names)], strict=True))
    if args.skip_direct:
        for name, (loss, seeds) in measured.items():
            shown = ", ".join(f"{v:.4f}" for v in seeds)
            print(f"{name:<10}{configs[name].optimizer.lr:>10.4g}{loss:>10.4f}   {shown}")
        return predicted(fitted, measured["fitted"][0])
    direct = dict(zip(lrs, results[len(names):], strict=True))

    def others(cfg: RunConfig) -> dict:  # what the direct sweep holds fixed
        return {k: v for k, v in cfg.model_dump(mode="json").items() if k not in ("provenance", "output")} | \
            {"optimizer": {**cfg.optimizer.model_dump(mode="json"), "lr": None}}

    if others(fitted) != others(textbook):
        print("note: the fitted config differs from the textbook one beyond the LR; the direct sweep is the textbook's")
    best_lr = min(direct, key=lambda lr: direct[lr][0])
    best = direct[best_lr][0]
    noise = float(np.mean([np.std(v[1]) for v in direct.values()]))
    print(f"\n{'rule':<10}{'lr':>10}{'val loss':>10}{'/ direct best':>15}   seeds")
    for name, (loss, seeds) in measured.items():
        print(f"{name:<10}{configs[name].optimizer.lr:>10.4g}{loss:>10.4f}{loss / best:>15.4f}   "
              + ", ".join(f"{v:.4f}" for v in seeds))
    print(f"{'direct':<10}{best_lr:>10.4g}{best:>10.4f}{1:>15.4f}   grid: "
          + ", ".join(f"{lr:.3g}: {v[0]:.4f}" for lr, v in direct.items()))
    print(f"seed noise (mean std over the direct grid): {noise:.4f}; fitted − textbook: "
          f"{measured['fitted'][0] - measured['textbook'][0]:+.4f}")
    for law in fitted.provenance.laws:
        print(f"law {law['param']} across {law['axis']}: slope {law['slope']:.3f} "
              f"[{law['interval_slope'][0]:.3f}, {law['interval_slope'][1]:.3f}] over {law['measured']}")
    predicted(fitted, measured["fitted"][0])
    print(f"tuning compute share: {fitted.provenance.tuning['share']:.1%}")
    print(f"fitted / direct best loss: {measured['fitted'][0] / best:.4f}")


def predicted(fitted: RunConfig, loss: float) -> None:
    p = fitted.provenance.prediction
    if p:
        inside = p["low"] <= loss <= p["high"]
        print(f"predicted {p['loss']:.4f} [{p['low']:.4f}, {p['high']:.4f}] ({p['form']}, {p['points']} points) vs "
              f"measured {loss:.4f}: error {abs(p['loss'] - loss) / loss:.2%}, {'inside' if inside else 'OUTSIDE'}")


if __name__ == "__main__":
    main()
