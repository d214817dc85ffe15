"""`sweep plan` on paper for three real targets at 20 tokens per parameter (Hoffmann et al. 2022's ratio): the share
of the full run each plan spends and the LR interval (octaves, 95 %) it expects to buy per law at the target, beside
the textbook prior's and beside a fixed ladder of the same cost (the ladder a user types: the proxy's value and
three doublings toward the target, away from it past the plan's bounds, as many seeds as the law's FLOPs buy, priced
by the same arithmetic); no model is trained or allocated (sizes from the meta device).

    .venv/bin/python benchmarks/plan.py [--spec sweep/examples/llama.yaml] [--share 0.05] [--goal 0.5]

Last line: the largest share any of the three plans spends.
"""
from __future__ import annotations

import argparse
import os
import tempfile
from dataclasses import replace
from pathlib import Path

from rich.console import Console

from sweep.forecast.design import MAX_SEEDS, MIN_SEEDS
from sweep.forecast.interval import Noise
from sweep.plan.command import MIN_WIDTH, PlanRequest, full_run, ladders_at, make_plan
from sweep.plan.shapes import Sizer
from sweep.study.spec import load_spec

TARGETS = (("125M", 125e6, 12, 256), ("1.3B", 1.3e9, 24, 512), ("7B", 7e9, 32, 1024))  # params, depth, batch


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--spec", type=Path, default=Path("sweep/examples/llama.yaml"))
    parser.add_argument("--share", type=float, default=0.05)
    parser.add_argument("--goal", type=float, default=0.5)
    args = parser.parse_args()
    os.environ["SWEEP_ROOT"] = tempfile.mkdtemp()  # nothing is written by make_plan; a root for the spec's paths
    console, shares = Console(width=160), []
    console.print(f"{'target':>6} {'params':>9} {'tokens':>9} {'proxy w':>7} {'runs':>6} {'share':>7}  "
                  "law: rungs × seeds, prior → expected ±octaves at the target")
    for label, params, depth, batch in TARGETS:
        tokens = int(20 * params)
        plan = make_plan(PlanRequest(args.spec, tokens, params=params, depth=depth, batch_size=batch,
                                     share=args.share, goal=args.goal), "bench")
        laws = "; ".join(f"{ld['name']}: {len(ld['rungs'])}×{ld['seeds']}, {ld['prior_at_target']:.2f} → "
                         f"{ld['expected_at_target']:.2f}" for ld in plan["ladders"])
        console.print(f"{label:>6} {plan['target']['params']:9.3g} {tokens:9.3g} {plan['proxy']['width']:7d} "
                      f"{plan['total']['runs']:6d} {plan['total']['share']:7.2%}  {laws}")
        if not plan["verdict"]["reached"]:
            console.print(f"       {plan['verdict']['line']}")
        fixed = fixed_ladders(args.spec, plan, PlanRequest(args.spec, tokens, params=params, depth=depth,
                                                           batch_size=batch))
        console.print("       fixed ladder, same FLOPs per law: " + "; ".join(
            f"{name}: {rungs}×{seeds}, {half:.2f}" for name, rungs, seeds, half in fixed))
        shares.append(plan["total"]["share"])
    console.print(f"largest tuning share: {max(shares):.2%} (budget {args.share:.0%})")


def fixed_ladders(spec, plan: dict, request: PlanRequest) -> list[tuple[str, int, int, float]]:
    """Per planned law (name, rungs, seeds, expected ±octaves at the target) of the fixed ladder of its FLOPs: the
    proxy's value and three doublings toward the target within the plan's bounds (away from it past them), the most
    seeds that fit."""
    sizer = Sizer(load_spec(spec), MIN_WIDTH)
    target, batch = full_run(request, sizer)
    start = {ld.name: ld for ld in ladders_at(sizer, plan["proxy"]["width"], target, batch, request.tokens)}
    out = []
    for planned in plan["ladders"]:
        ld = start[planned["name"]]
        side = 1 if ld.target >= ld.proxy else -1
        fixed = replace(ld, rungs=[ld.proxy], seeds=1)
        for _ in range(3):
            rung = fixed.next_rung(side) or fixed.next_rung(-side)  # past the bounds toward it: away from it
            if rung:
                fixed.rungs = sorted([*fixed.rungs, rung])
        per_seed = fixed.flops()
        fixed.seeds = int(min(MAX_SEEDS, max(MIN_SEEDS, planned["flops"] // per_seed)))
        out.append((ld.name, len(fixed.rungs), fixed.seeds, fixed.at_target(Noise())))
    return out


if __name__ == "__main__":
    main()
