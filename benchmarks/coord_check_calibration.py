"""Calibration of the coordinate check's bounds: slopes of correct μP models, of SP and of planted μP bugs.

Every case runs `sweep.coords.check.coord_check` at the defaults of `sweep coord-check` (widths 1×, 2×,
4× the base width, 8 steps on one batch per seed, 3 seeds; gpt: 4 × 32 tokens, AdamW lr 2^-7, SGD lr 0.1;
mlp/resnet: 16 examples). Per case it prints
- growth: the largest slope of log mean |x_t| or log mean |Δx_t| against log width, over modules and steps
  (a module fails above +GROW_BOUND);
- vanishing: the smallest, over modules, of a module's largest Δx slope (a module fails below −SHRINK_BOUND:
  its update shrinks with width at every step; attention scores are exempt, as in the verdict);
then the verdict. The planted bugs are those of the mutation tests (`tests/mutations/bugs.py`).

With `--mup` it also prints, for the gpt and the mlp at widths 64, 128, 256, mup's own
`get_coord_data` (MuAdam, 3 steps on one batch) as the largest over modules of
log(l1 at 256 / l1 at 64) / log 4 at mup's t = 1, 2, 3 (mup's t = 1 is the forward before the first
update, this check's t = 0), beside this check's largest size slope at t = 0, 1, 2 on the same settings.

    .venv/bin/python benchmarks/coord_check_calibration.py          # ~6 min on 2 idle cores
    .venv/bin/python benchmarks/coord_check_calibration.py --mup    # + mup's get_coord_data (~1 min)
"""
from __future__ import annotations

import argparse
import functools
import math
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import numpy as np
import pandas as pd
import torch

from proxies.registry import base_width_of, build_model
from sweep.coords import check_batch
from sweep.coords.args import open_model_data
from sweep.coords.check import DEFAULT_LR, GROW_BOUND, SHRINK_BOUND, coord_check
from tests.mutations.bugs import BUGS, Bug, keep_groups, make_model, make_optimizer

STEPS, SEEDS, SEQ_LEN = 8, 3, 32


def setting(model: str):
    source = open_model_data(model, None, None, SEQ_LEN)
    batch = check_batch(model)
    base = base_width_of(model)

    def make_batch(seed):
        return source.batch("train", batch, torch.Generator().manual_seed(seed))

    return source, [base, 2 * base, 4 * base], make_batch


def summarise(table: pd.DataFrame) -> tuple[float, float]:
    growth = float(table[["max_size_slope", "max_delta_slope"]].max().max())
    return growth, float(table.loc[table["kind"] != "attention", "max_delta_slope"].min())


def cases():
    """(name, rule, Bug): the correct zoo models and SP as unmutated Bugs, then the planted bugs."""
    for model, regimes in (("gpt", {"head dim fixed": {}, "heads fixed": {"n_head": 4}}),
                           ("mlp", {"": {}}), ("resnet", {"": {}})):
        for regime, options in regimes.items():
            for optimizer in ("adamw", "sgd"):
                for parametrization in ("mup", "sp"):
                    if parametrization == "sp" and optimizer == "sgd" and model != "mlp":
                        continue
                    name = f"{model} {regime} {parametrization} {optimizer}".replace("  ", " ")
                    yield name, "—", optimizer, Bug(name, "", model, options, parametrization=parametrization)
    for optimizer in ("muon", "lion", "schedulefree_adamw", "adam_atan2"):
        for model, regimes in (("gpt", {"head dim fixed": {}, "heads fixed": {"n_head": 4}}), ("mlp", {"": {}})):
            for regime, options in regimes.items():
                for parametrization in ("mup", "sp"):
                    name = f"{model} {regime} {parametrization} {optimizer}".replace("  ", " ")
                    yield name, "—", optimizer, Bug(name, "", model, options, parametrization=parametrization)
    for bug in BUGS:
        yield f"{bug.model} bug: {bug.name}", bug.rule, bug.optimizer, bug


def run_case(optimizer: str, bug: Bug) -> tuple[float, float, bool, float]:
    source, widths, make_batch = setting(bug.model)
    make_opt = None if bug.mutate_groups is keep_groups else make_optimizer(bug)
    start = time.perf_counter()
    _, _, verdict = coord_check(make_model(bug, **source.model_options()), make_batch, widths, SEEDS, STEPS,
                                optimizer=optimizer, lr=DEFAULT_LR[optimizer], make_optimizer=make_opt)
    return (*summarise(verdict.table), verdict.passed, time.perf_counter() - start)


def mup_comparison() -> None:
    from mup.coord_check import get_coord_data

    print("\n| model | mup get_coord_data slope t=1,2,3 | this check's size slope t=0,1,2 |\n| --- | --- | --- |")
    for model in ("gpt", "mlp"):
        source, _, make_batch = setting(model)
        options = source.model_options()
        widths = [64, 128, 256]
        x, y = make_batch(0)
        build = functools.partial(build_model, model, depth=2, parametrization="mup", **options)
        lazy = {w: (lambda w=w, build=build: (torch.manual_seed(0), build(w))[1]) for w in widths}
        flat = model == "gpt"
        df = get_coord_data(lazy, [(x, y.flatten() if flat else y)], optimizer="adam", lr=DEFAULT_LR["adamw"], mup=True,
                            nsteps=3, cuda=False, flatten_output=flat, nseeds=1)
        ours_c, _, _ = coord_check(build, make_batch, widths, 1, 3)
        theirs, ours = [], []
        for t in (1, 2, 3):
            d = df[df["t"] == t].pivot_table(index="module", columns="width", values="l1")
            theirs.append(float((np.log(d[256] / d[64]) / math.log(4)).max()))
            o = ours_c[ours_c["step"] == t - 1].pivot_table(index="module", columns="width", values="size")
            o = o[(o > 0).all(axis=1)]
            ours.append(float(np.polyfit(np.log(widths), np.log(o[widths].to_numpy().T), 1)[0].max()))
        print(f"| {model} | {', '.join(f'{v:+.2f}' for v in theirs)} | {', '.join(f'{v:+.2f}' for v in ours)} |")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--mup", action="store_true", help="also compare with mup's get_coord_data")
    p.add_argument("--only", default="", help="run only cases whose name contains this text")
    args = p.parse_args()
    torch.set_num_threads(2)
    print(f"bounds: fail when growth > +{GROW_BOUND} or vanishing < −{SHRINK_BOUND}\n")
    print("| case | rule broken (Tensor Programs V) | growth | vanishing | verdict | s |\n"
          "| --- | --- | --- | --- | --- | --- |")
    for name, rule, optimizer, bug in cases():
        if args.only.lower() in name.lower():
            growth, vanishing, passed, seconds = run_case(optimizer, bug)
            print(f"| {name} | {rule} | {growth:+.2f} | {vanishing:+.2f} | {'pass' if passed else 'FAIL'} | "
                  f"{seconds:.0f} |", flush=True)
    if args.mup:
        mup_comparison()


if __name__ == "__main__":
    main()
