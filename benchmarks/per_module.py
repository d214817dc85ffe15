"""Per-role settings and the width ladder as a fidelity, on a μP gpt (depth 2, seq 64, batch 16) on the built-in corpus.

`--part search`: equal tuning compute (the same trials × steps) at the proxy width for
  (a) global TPE over lr, weight decay, warmup, β1, β2 (β2 as a half-life), and
  (b) the same plus per-role multipliers: LR of embedding, hidden, readout, norm gains; init of embedding,
      hidden, readout (`optimizer.roles.<role>.lr_mult`, `model.init.<role>`),
  each over `--seeds` TPE sampler seeds; every seed's best trial is trained at the target width (4× the proxy) at
  the proxy's batch and steps with 2 training seeds. Prints the target's final val loss per method (mean ± the
  spread of its seeds) and the steps (b) needs to reach (a)'s final loss, as a fraction of the run.
`--part drift`: each role's LR multiplier on an octave grid at half the proxy width, the proxy width and the target
  width; the drift of each fitted optimum from the narrowest to the target (goal ≤ 0.5 octave). `--width-exps
  embedding=-0.5` runs it with those roles' LR × m^e (`optimizer.roles.<role>.lr_width_exp`; −0.5 on the embedding
  is u-μP's rule), the drift a role has once its width rule is moved. Each drift comes with its 90% bootstrap interval
  over the training seeds, and with what carrying the narrowest optimum costs at the target (`carry_cost`) beside the
  seed noise. `--grids FILE` keeps every grid. `--device cuda --jobs 4` trains a grid's points × seeds in 4
  processes on one GPU.
`--part carry`: (b)'s best settings trained at the target with each role's LR multiplier carried by a width law,
  mult' = mult·(W'/W)^s (`sweep transfer --role-rule fitted`'s rule, sweep/rules/fitted.py), against the same
  settings kept as tuned (both trained here); s per role from `--slopes` (octaves per doubling of
  width, e.g. the drift part's: embedding=-0.387,norm=-0.387), the same 2 training seeds.
`--part sp`: SP tuned by its own LR grid at the target width against μP (a) and (b) there (the search part's runs).
`--part fidelity`: the same global search (a) reaching the target width by four routes, each charged at every
  width's FLOPs (units: one trial at the target width): single-width TPE at the target; successive halving
  across widths (n₀ at the narrowest, the best 1/η promoted each rung); today's warm start (a narrow study, then its
  best 3 enqueued at the target with the whole box searched); region-seeded (the same, the box narrowed to the
  best 3's span ± ½ octave). The halving's compute sets the budget: single width gets at least it (whole trials),
  warm start and region-seeded at most it (n₀ narrow trials, then the target trials that fit, the best ≤ 3 of the
  narrow study enqueued among them). Also on the synthetic objective of
  tests/test_fidelity.py (seconds; 20 seeds): the gap each route leaves to the optimum's value at that compute.

Each part is sized to end in ≤ 20 min on 2 shared cores (1 torch thread, `nice -n 15`), so the proxies are small:

    nice -n 15 .venv/bin/python benchmarks/per_module.py --part search      # proxy 32 → target 128, 150 steps
    nice -n 15 .venv/bin/python benchmarks/per_module.py --part fidelity    # widths 32, 64, 128
    nice -n 15 .venv/bin/python benchmarks/per_module.py --part drift       # each role's LR optimum at 16, 32 and 128
    nice -n 15 .venv/bin/python benchmarks/per_module.py --part sp          # SP's own LR grid at 128 vs μP (b)
`--part search` writes $TMPDIR/per_module.json (`--out`: best settings and target losses); drift and sp read it.
"""
from __future__ import annotations

import argparse
import itertools
import json
import math
import multiprocessing
import os
import random
import statistics
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import optuna
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from proxies.registry import build_model  # noqa: E402
from sweep.rules.fitted import Law  # noqa: E402
from sweep.study import fidelity  # noqa: E402
from sweep.study.space import Space, parse_param, set_path  # noqa: E402
from trainer.config import RunConfig  # noqa: E402
from trainer.curves import read_curves  # noqa: E402
from trainer.flops import flops_per_token  # noqa: E402
from trainer.loop import train  # noqa: E402

SEQ, BATCH = 64, 16
GLOBAL = {"optimizer.lr": {"low": 2.0e-4, "high": 0.25, "log": True},
          "optimizer.weight_decay": {"low": 0.0, "high": 0.3},
          "schedule.warmup_fraction": {"low": 0.0, "high": 0.3},
          "optimizer.beta1": {"low": 0.7, "high": 0.95},
          "optimizer.beta2": {"type": "halflife", "low": 6.5, "high": 700}}
# the embedding's box reaches 100: its LR optimum sat at 2^5.25 (38×) at width 32, 2^4.09 (17×) at 256 (the drift part)
ROLES = {"optimizer.roles.embedding.lr_mult": {"low": 0.1, "high": 100.0, "log": True},
         **{f"optimizer.roles.{r}.lr_mult": {"low": 0.1, "high": 10.0, "log": True}
            for r in ("hidden", "readout", "norm")},
         **{f"model.init.{r}": {"low": 0.25, "high": 4.0, "log": True} for r in ("embedding", "hidden", "readout")}}
DIVERGED = 10.0  # the objective of a diverged run (byte-level loss at init is ln 256 ≈ 5.5)


def base_run(width: int, steps: int, root: Path, every: int, device: str = "cpu") -> dict:
    return {"model": {"name": "gpt", "width": width, "depth": 2, "options": {"block_size": SEQ}},
            "data": {"kind": "stdlib", "seq_len": SEQ}, "optimizer": {"wd_mode": "independent"},
            "schedule": {"kind": "cosine", "min_lr_ratio": 0.1}, "batch_size": BATCH, "steps": steps,
            "log_every": every, "device": device,
            "eval": {"every": every, "batches": 16, "noise_scale_batches": 0, "seed": 0},  # one held-out set for all
            "output": {"root": str(root), "study": "bench"}}


def config(values: dict, width: int, steps: int, root: Path, seed: int = 0, every: int = 50,
           device: str = "cpu") -> RunConfig:
    raw = base_run(width, steps, root, every, device)
    for path, value in values.items():
        raw = set_path(raw, path, value)
    config.runs += 1  # a run folder of its own: two routes (or two worker processes) may train the same settings
    return RunConfig.parse({**set_path(raw, "output.run", f"r{os.getpid()}-{config.runs}"), "seed": seed})


config.runs = 0


def run(values: dict, width: int, steps: int, root: Path, seed: int = 0, every: int = 50,
        device: str = "cpu") -> tuple[float, RunConfig]:
    cfg = config(values, width, steps, root, seed, every, device)
    result = train(cfg)
    loss = result.val_loss if result.status == "completed" and math.isfinite(result.val_loss or math.nan) else DIVERGED
    return loss, cfg


def tuned(space: Space, trials: int, seed: int, width: int, steps: int, root: Path) -> dict:
    """The best values of a TPE search (Optuna params mapped to RunConfig paths)."""
    study = optuna.create_study(sampler=optuna.samplers.TPESampler(seed=seed, multivariate=True))
    study.optimize(lambda t: run(space.values(space.suggest(t), BATCH * SEQ), width, steps, root)[0], n_trials=trials)
    return space.values(study.best_params, BATCH * SEQ)


def search_part(args, root: Path) -> None:
    spaces = {"(a) global": Space({p: parse_param(v) for p, v in GLOBAL.items()}),
              "(b) global+roles": Space({p: parse_param(v) for p, v in {**GLOBAL, **ROLES}.items()})}
    target = 4 * args.proxy
    finals: dict[str, list[float]] = {m: [] for m in spaces}
    curves: dict[str, list] = {m: [] for m in spaces}
    best_values: dict[str, list[dict]] = {m: [] for m in spaces}
    for method, space in spaces.items():
        for seed in range(args.seeds):
            values = tuned(space, args.trials, seed, args.proxy, args.steps, root)
            best_values[method].append(values)
            for train_seed in (0, 1):
                loss, cfg = run(values, target, args.steps, root, seed=train_seed, every=args.steps // 6)
                finals[method].append(loss)
                curves[method].append(read_curves(cfg.curves_root(), run=cfg.run_id()).set_index("step")["val_loss"]
                                       .dropna())
    a, b = finals["(a) global"], finals["(b) global+roles"]
    goal = statistics.mean(a)
    reach = [next((s for s, v in c.items() if v <= goal), math.inf) for c in curves["(b) global+roles"]]
    print(f"μP gpt depth 2, proxy width {args.proxy} → target {target}, {args.steps} steps, batch {BATCH}, seq {SEQ}, "
          f"{args.trials} trials × {args.seeds} sampler seeds, target trained with 2 seeds; built-in corpus")
    print(f"{'method':<20}{'target val loss (mean)':>24}{'sd over runs':>15}   per run")
    for method, losses in finals.items():
        print(f"{method:<20}{statistics.mean(losses):>24.4f}{statistics.stdev(losses):>15.4f}   "
              + " ".join(f"{v:.3f}" for v in losses))
    at = statistics.median(reach) / args.steps
    print(f"(b) − (a): {statistics.mean(b) - statistics.mean(a):+.4f} nats; (b) reaches (a)'s mean final loss at "
          f"{'never' if math.isinf(at) else f'{at:.0%} of the steps'} (median over its runs)")
    Path(args.out).write_text(json.dumps({"proxy": args.proxy, "steps": args.steps, "finals": finals,
                                          "best": best_values}, indent=1))
    for method, rows in best_values.items():
        for values in rows:
            roles = {k.removeprefix("optimizer.roles.").removesuffix(".lr_mult"): round(v, 3)
                     for k, v in values.items() if k.startswith(("optimizer.roles", "model.init"))}
            print(f"  {method} best: lr {values['optimizer.lr']:.3g} {roles if roles else ''}")


def costs(widths: list[int], steps: int) -> dict[int, float]:
    """FLOPs of one trial at each width, in units of one trial at the widest."""
    flops = {w: flops_per_token(build_model("gpt", w, 2, "mup", vocab_size=256, block_size=SEQ), SEQ) * steps
             for w in widths}
    return {w: f / flops[widths[-1]] for w, f in flops.items()}


def routes(widths, cost, space, evaluate, seed, n0=9, eta=3.0, top=3):
    """{route: (best value at the widest width, compute charged)} for one sampler seed, equal budgets."""
    def sampler(_):
        return optuna.samplers.TPESampler(seed=seed, multivariate=True)

    halved = fidelity.halving(widths, cost, n0, eta, space, sampler, evaluate)
    budget = halved.charged()
    single_n = math.ceil(budget / cost[widths[-1]] - 1e-9)  # never less compute than the halving's
    wide_n = max(1, math.floor((budget - n0 * cost[widths[0]]) / cost[widths[-1]] + 1e-9))  # never more
    single = fidelity.seeded(widths[-1:], cost, [single_n], top, space, sampler, evaluate)
    out = {"single width": single, "halving": halved}
    for name, narrow in (("warm start", False), ("region-seeded", True)):
        out[name] = fidelity.seeded([widths[0], widths[-1]], cost, [n0, wide_n], min(top, wide_n), space, sampler,
                                    evaluate, narrow=narrow)
    return {name: (ladder.best().value, ladder.charged()) for name, ladder in out.items()}


def synthetic(seeds: int) -> None:
    from tests.test_fidelity import COSTS, SPACE, objective
    widths = [32, 64, 128]
    cost = {w: c / COSTS[128] for w, c in COSTS.items()}
    optimum = objective(128, {"optimizer.lr": 2 ** -6, "schedule.warmup_fraction": 0.1,
                              "model.options.zero_readout": False})  # its settings' value (the wiggle can dip below)
    rows = {}
    for seed in range(seeds):
        for name, (value, charged) in routes(widths, cost, SPACE, objective, seed, n0=27).items():
            rows.setdefault(name, []).append((value - optimum, charged))
    print(f"synthetic objective (tests/test_fidelity.py), widths {widths}, n₀ 27, η 3, {seeds} sampler seeds:")
    print(f"{'route':<16}{'median gap to optimum':>24}{'gap ≤ 0.02':>13}{'compute':>9}")
    for name, r in rows.items():
        print(f"{name:<16}{statistics.median(g for g, _ in r):>24.4f}{sum(g <= 0.02 for g, _ in r) / len(r):>13.0%}"
              f"{statistics.median(c for _, c in r):>9.2f}")


def fidelity_part(args, root: Path) -> None:
    widths = [args.proxy, 2 * args.proxy, 4 * args.proxy]
    cost = costs(widths, args.steps)
    space = Space({p: parse_param(v) for p, v in GLOBAL.items()})

    def evaluate(width, params):
        return run(space.values(params, BATCH * SEQ), width, args.steps, root)[0]

    rows = {}
    for seed in range(args.seeds):
        for name, result in routes(widths, cost, space, evaluate, seed, n0=args.n0).items():
            rows.setdefault(name, []).append(result)
    print(f"μP gpt depth 2, widths {widths} (cost per trial {', '.join(f'{c:.3f}' for c in cost.values())} of one at "
          f"{widths[-1]}), {args.steps} steps, {args.seeds} sampler seeds, equal compute (the halving's)")
    print(f"{'route':<16}{'best val loss at ' + str(widths[-1]):>26}{'median':>8}{'compute':>9}")
    for name, r in rows.items():
        print(f"{name:<16}{' '.join(f'{v:.4f}' for v, _ in r):>26}{statistics.median(v for v, _ in r):>8.4f}"
              f"{statistics.median(c for _, c in r):>9.2f}")
    synthetic(20)


def vertex(points: dict[float, float]) -> float:
    """log₂ of the optimum: the vertex of the parabola through the best grid point and its two neighbours (the best
    point itself at an edge of the grid or without an upward parabola)."""
    xs = sorted(points)
    i = min(range(len(xs)), key=lambda j: points[xs[j]])
    if 0 < i < len(xs) - 1:
        x = [math.log2(v) for v in xs[i - 1:i + 2]]
        y = [points[v] for v in xs[i - 1:i + 2]]
        denom = (x[0] - x[1]) * (x[0] - x[2]) * (x[1] - x[2])
        a = (x[2] * (y[1] - y[0]) + x[1] * (y[0] - y[2]) + x[0] * (y[2] - y[1])) / denom
        b = (x[2] ** 2 * (y[0] - y[1]) + x[1] ** 2 * (y[2] - y[0]) + x[0] ** 2 * (y[1] - y[2])) / denom
        if a > 0:
            return -b / (2 * a)
    return math.log2(xs[i])


def bracketed(losses, grid: list[float], most: int = 3) -> dict[float, float]:
    """`losses` (a list of values → their losses) on the octave grid, extended an octave at a time past the edge the
    best point sits on (at most `most` times), so the optimum is inside the points."""
    points = dict(zip(grid, losses(grid), strict=True))
    for _ in range(most):
        best = min(points, key=points.get)
        if min(points) < best < max(points):
            break
        step = 2.0 if best == max(points) else 0.5
        points[best * step] = losses([best * step])[0]
    return points


def seed_losses(pool, runs: list[tuple], seeds: int) -> list[list[float]]:
    """Each run's val loss under each of `seeds` training seeds; all runs × seeds in the pool at once (in this
    process without one). A run is (values, width, steps, root, every, device)."""
    tasks = [(*r[:4], seed, *r[4:]) for r in runs for seed in range(seeds)]
    losses = list(pool.map(val_loss, tasks)) if pool else [val_loss(t) for t in tasks]
    return [losses[i * seeds:(i + 1) * seeds] for i in range(len(runs))]


def val_loss(task: tuple) -> float:
    return run(*task)[0]


def role_grids(args, base: dict, role: str, widths: list[int], pool, root: Path) -> list[dict[float, list[float]]]:
    """Per width, the role's LR multiplier → its per-seed val losses: the octave grid 2^-2…2^3 at the narrowest
    width, the octave either side of the narrower optimum in half octaves at each wider one, a grid extended past an
    edge its best mean sits on."""
    grids = []
    for width in widths:
        grid: dict[float, list[float]] = {}

        def losses(vs, width=width, grid=grid):
            runs = [({**base, f"optimizer.roles.{role}.lr_mult": v}, width, args.steps, root, 50, args.device)
                    for v in vs]
            grid.update(zip(vs, seed_losses(pool, runs, args.drift_seeds), strict=True))
            return [statistics.mean(grid[v]) for v in vs]

        around = 2.0 ** (round(2 * optimum(grids[-1])) / 2) if grids else None  # the narrower one, to ½ octave
        bracketed(losses, [2.0 ** k for k in range(-2, 4)] if around is None
                  else [around * 2 ** (k / 2) for k in range(-2, 3)])
        grids.append(grid)
    return grids


def optimum(grid: dict[float, list[float]], pick: list[int] | None = None) -> float:
    """log₂ of the grid's optimum (`vertex`) over the mean of its seeds, or of the seeds `pick` names."""
    return vertex({v: statistics.mean(s if pick is None else [s[i] for i in pick]) for v, s in grid.items()})


def drift_interval(narrow: dict, wide: dict, draws: int = 1000, level: float = 0.9) -> tuple[float, float]:
    """The drift's bootstrap interval over training seeds: each draw resamples the seeds (with replacement, the same
    draw for every point of a grid, independently per width) and refits both optima; the `level` central interval
    of the draws' drifts (Efron's percentile bootstrap)."""
    rng = random.Random(0)
    n = len(next(iter(narrow.values())))
    drifts = sorted(optimum(wide, rng.choices(range(n), k=n)) - optimum(narrow, rng.choices(range(n), k=n))
                    for _ in range(draws))
    tail = (1 - level) / 2
    return drifts[int(tail * draws)], drifts[int((1 - tail) * draws) - 1]


def carry_cost(narrow: dict, wide: dict) -> tuple[float, float]:
    """What carrying the narrowest optimum costs at the widest: the wide grid's mean loss at the narrow optimum
    (linear in log₂ between its two neighbouring points; the edge point's past an edge) minus the wide grid's best
    mean, and the standard error of that best mean over the seeds (the seed noise it is judged against)."""
    x, means = optimum(narrow), {math.log2(v): statistics.mean(s) for v, s in wide.items()}
    xs = sorted(means)
    x = min(max(x, xs[0]), xs[-1])
    a, b = next((a, b) for a, b in itertools.pairwise(xs) if a <= x <= b)
    at = means[a] + (means[b] - means[a]) * (x - a) / (b - a)
    best = min(wide.values(), key=statistics.mean)
    return at - statistics.mean(best), statistics.stdev(best) / math.sqrt(len(best)) if len(best) > 1 else 0.0


def drift_part(args, root: Path) -> None:
    """Each role's LR multiplier on grids at half the proxy width, the proxy width and 4× it (`role_grids`), the
    others at 1 (global settings: the search part's best (a) when --out holds it, else lr 2^-6); each point is the
    mean over `--drift-seeds` training seeds. The drift of each fitted optimum from the narrowest to the widest, in
    octaves, with its 90% bootstrap interval over the seeds."""
    base = {"optimizer.lr": 2 ** -6, "schedule.warmup_fraction": 0.1}
    if Path(args.out).is_file():
        base = json.loads(Path(args.out).read_text())["best"]["(a) global"][0]
    base |= {f"optimizer.roles.{role}.lr_width_exp": float(e) for role, _, e in
             (item.partition("=") for item in args.width_exps.split(",") if item)}
    widths = [args.proxy // 2, args.proxy, 4 * args.proxy]
    print(f"per-role LR optimum across widths {widths} (μP gpt depth 2, {args.steps} steps, grid 2^-2…2^3 at the "
          f"narrowest, ±1 octave around it wider in half octaves, extended past an edge, {args.drift_seeds} seed(s); "
          f"global lr {base['optimizer.lr']:.3g}; width exponents: {args.width_exps or 'none'})")
    print(f"{'role':<12}" + "".join(f"{'log₂ opt w' + str(w):>16}" for w in widths) + f"{'drift (octaves)':>17}"
          + f"{'90% interval':>18}{'carry cost (nats)':>19}{'seed s.e.':>11}")
    pool = ProcessPoolExecutor(args.jobs, multiprocessing.get_context("spawn"), torch.set_num_threads,
                               (args.threads,)) if args.jobs > 1 else None
    for role in args.roles.split(","):
        grids = role_grids(args, base, role, widths, pool, root)
        optima = [optimum(g) for g in grids]
        low, high = drift_interval(grids[0], grids[-1])
        cost, noise = carry_cost(grids[0], grids[-1])
        print(f"{role:<12}" + "".join(f"{o:>16.2f}" for o in optima) + f"{optima[-1] - optima[0]:>+17.2f}"
              + f"{f'[{low:+.2f}, {high:+.2f}]':>18}{cost:>19.4f}{noise:>11.4f}", flush=True)
        if args.grids:
            saved = json.loads(Path(args.grids).read_text()) if Path(args.grids).is_file() else {}
            saved[role] = {str(w): {str(v): s for v, s in g.items()} for w, g in zip(widths, grids, strict=True)}
            Path(args.grids).write_text(json.dumps(saved, indent=1))
    if pool:
        pool.shutdown()


def sp_part(args, root: Path) -> None:
    """SP tuned by its own LR grid at the target width against μP with the search part's settings there."""
    saved = json.loads(Path(args.out).read_text())
    target = 4 * saved["proxy"]
    grid = [2.0 ** k for k in range(-11, -3)]
    sp = {}
    for lr in grid:
        cfg = config({"optimizer.lr": lr, "model.parametrization": "sp"}, target, saved["steps"], root)
        result = train(cfg)
        sp[lr] = result.val_loss if result.status == "completed" else DIVERGED
    best_lr = min(sp, key=sp.get)
    print(f"width {target}, {saved['steps']} steps: SP's LR grid 2^-11…2^-4 (seed 0): "
          + ", ".join(f"{math.log2(k):.0f}: {v:.4f}" for k, v in sp.items()))
    print(f"{'run':<34}{'val loss':>10}")
    print(f"{'SP best (lr 2^' + str(int(math.log2(best_lr))) + ')':<34}{sp[best_lr]:>10.4f}")
    for method, losses in saved["finals"].items():
        print(f"{'μP ' + method + ' (best seed, seed 0)':<34}{min(losses[0::2]):>10.4f}   all: "
              + " ".join(f"{v:.4f}" for v in losses))


def carry_part(args, root: Path) -> None:
    """--part carry (module docstring)."""
    saved = json.loads(Path(args.out).read_text())
    target, ratio = 4 * saved["proxy"], 4.0
    slopes = {role: float(s) for role, _, s in (item.partition("=") for item in args.slopes.split(","))}
    kept, carried = [], []
    print(f"(b)'s best at width {target}: role LR multipliers kept, and carried ×4^s with s {slopes}")
    for i, values in enumerate(saved["best"]["(b) global+roles"]):
        moved = dict(values)
        for role, slope in slopes.items():
            path = f"optimizer.roles.{role}.lr_mult"
            law = Law(path, "width", slope, slope, slope, (saved["proxy"] / 2, target), "--slopes")
            moved[path] = law.scale(values.get(path, 1.0), ratio)[0]
        as_tuned = [run(values, target, saved["steps"], root, seed=seed)[0] for seed in (0, 1)]
        losses = [run(moved, target, saved["steps"], root, seed=seed)[0] for seed in (0, 1)]
        kept, carried = kept + as_tuned, carried + losses
        print(f"  sampler seed {i}: kept {as_tuned[0]:.4f} {as_tuned[1]:.4f} → carried {losses[0]:.4f} "
              f"{losses[1]:.4f}", flush=True)
    print(f"mean: kept {statistics.mean(kept):.4f}, carried {statistics.mean(carried):.4f} "
          f"({statistics.mean(carried) - statistics.mean(kept):+.4f} nats)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--part", choices=tuple(PARTS), required=True)
    parser.add_argument("--out", default=str(Path(tempfile.gettempdir()) / "per_module.json"),
                        help="the search part's best settings and losses (written by --part search, read by drift, sp)")
    parser.add_argument("--proxy", type=int, default=32)
    parser.add_argument("--steps", type=int, default=150)
    parser.add_argument("--trials", type=int, default=16)
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--n0", type=int, default=9, help="fidelity: trials at the narrowest width")
    parser.add_argument("--drift-seeds", type=int, default=1, help="drift: training seeds per grid point")
    parser.add_argument("--roles", default="embedding,hidden,readout,norm", help="drift: the roles whose LR to scan")
    parser.add_argument("--width-exps", default="", help="drift: ROLE=e, comma-separated: those roles' LR × m^e")
    parser.add_argument("--slopes", default="embedding=-0.387,norm=-0.387",
                        help="carry: ROLE=octaves per doubling of width, comma-separated")
    parser.add_argument("--threads", type=int, default=1, help="torch threads (2 on an otherwise idle 2-core machine)")
    parser.add_argument("--grids", default="", help="drift: a JSON file each role's grids (width → multiplier → "
                        "per-seed val losses) are written to")
    parser.add_argument("--device", default="cpu", choices=("cpu", "cuda"), help="drift: where the runs train")
    parser.add_argument("--jobs", type=int, default=1,
                        help="drift: processes training a grid's points × seeds at once (e.g. 4 on a GPU host)")
    args = parser.parse_args()
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    torch.set_num_threads(args.threads)
    start = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        PARTS[args.part](args, Path(tmp))
    print(f"wall {time.perf_counter() - start:.0f} s")


PARTS = {"search": search_part, "fidelity": fidelity_part, "drift": drift_part, "sp": sp_part, "carry": carry_part}

if __name__ == "__main__":
    main()
