"""The runs that let the full run predict its final loss from its own curve: its schedule at two proxy widths.

`sweep transfer` records the loss ratios L(f)/L(1) the trainer divides each evaluation by, from half the run on
(sweep/forecast/live.py `ratios`), only where the ladder ran the full run's very schedule (its depth, batch and
tokens, hence steps, warmup and decay) at two widths or more, RATIO_RUNS runs or more counting seeds. No law ladder
does (each runs the proxy's schedule with one thing moved), so the plan buys them as a row of their own: a width
ladder on the full run's schedule (`sweep verify --plan` runs it as sweep/verify/checks.py `on_schedule`).

The widths: the plan's proxy width, where the sweep tuned the settings the ladder's grid is centred on, and the
next power of two up (the one below where that would reach the full run's width). Narrower pairs cost less, but the
ratio's line in ln width is carried to the full run's width, and its interval was measured carried 2–8× past the
widest run (widths 16–64 → 128, 32–128 → 256): one octave up keeps the carry as short as the budget's proxy allows.
The seeds: MIN_SEEDS at each width, and more where two widths would give fewer than RATIO_RUNS runs. The grid:
verify's three-point vertex (GRID), the smallest that brackets an optimum; verify's refinement moves it where the
long schedule's optimum lies. A run costs the trainer's FLOPs per token at its width and the full run's depth × the
full run's tokens, priced as every rung of the plan is (sweep/plan/shapes.py).

The laws keep priority: the rows are bought only from what the ladders leave of the budget once grown (to their
goal, or to the budget's end); where that is too little, one line names the budget that buys both at this proxy
width (a larger budget alone may pick a wider proxy, and dearer rows), and the plan buys none of it. Nor where the
plan has no ladder across width: `sweep transfer` records the ratios beside the loss law's final loss, which is
fitted across width and tokens, so without one the runs would buy nothing. Where the goal is out of every budget's
reach, the ladders grow into any budget, so the line names none. Nor where the plan's width ladder already runs the
full run's schedule (the full run has the proxy's depth, batch and tokens): transfer reads its best run at each
rung, every seed, as it reads this row's (`given`; found by an outside tester: the plan priced 12 more runs at
widths 16 and 32 beside a width ladder at 16 and 32 on that very schedule).
"""
from __future__ import annotations

import math
from collections.abc import Callable

from sweep.forecast.design import MIN_SEEDS
from sweep.forecast.live import RATIO_RUNS
from trainer.predicted import REFINE_FROM

NAME = "final loss × own curve"
GRID = 3  # verify's three-point vertex: the smallest grid that brackets an optimum (module docstring)
BUYS = f"the final loss from the run's own curve, from {100 * REFINE_FROM:g} % of the run on"


def widths(proxy: int, target: int, smallest: int) -> list[int]:
    """The proxy's width and one octave up, or one down (to no narrower than `smallest`) where up reaches the full
    run's width; [] where neither pair fits."""
    if 2 * proxy < target:
        return [proxy, 2 * proxy]
    return [proxy // 2, proxy] if proxy // 2 >= smallest and proxy < target else []


def runs(sizer, proxy: int, target, batch: int, tokens: int, smallest: int) -> dict | None:
    """plan.yaml's `own_curve` entry (sweep/forecast/planfile.py): the widths, seeds, grid, runs and FLOPs of the
    full run's schedule at two proxy widths, and that schedule; None where no two widths fit under the full run."""
    pair = widths(proxy, target.width, smallest)
    if not pair:
        return None
    seeds = max(MIN_SEEDS, math.ceil(RATIO_RUNS / len(pair)))
    flops = GRID * seeds * sum(sizer.shape(w, target.depth).flops_per_token * tokens for w in pair)
    return {"name": NAME, "widths": pair, "seeds": seeds, "grid": GRID, "runs": GRID * seeds * len(pair),
            "flops": flops, "width": target.width, "depth": target.depth, "batch_size": int(batch),
            "tokens": int(tokens)}


def given(ladders, target: int, same_schedule: bool) -> str:
    """The line saying the plan's width ladder gives the ratios itself, or "": where the proxy's schedule is the full
    run's (`same_schedule`: its depth, batch and tokens within 1 %, live.py `on_schedule`) and the ladder (sweep/
    forecast/design.py `Ladder`s) has two rungs or more narrower than the full run's width `target`, RATIO_RUNS runs
    or more counting seeds."""
    width = next((ld for ld in ladders if ld.axis == "width"), None)
    narrower = [int(r) for r in width.rungs if r < target] if width and same_schedule else []
    if len(narrower) < 2 or len(narrower) * width.seeds < RATIO_RUNS:
        return ""
    return (f"{NAME}: not bought: the {width.name} ladder's {len(narrower) * width.seeds} runs (widths "
            f"{', '.join(map(str, narrower))}) already run the full run's schedule, and give {BUYS}")


def afford(entry: dict | None, spent: float, budget: float, named: Callable[[float], str], share: str,
           widths_ladder: bool, by_ladder: str = "") -> tuple[dict | None, str]:
    """(the entry, bought, or None; the line saying why not, or ""): bought where the ladders' FLOPs (`spent`) and
    its own fit the budget, and the plan has a ladder across width (`widths_ladder`: transfer records the ratios
    beside the loss law's final loss, which needs one), and not where the width ladder gives the ratios itself
    (`by_ladder`: `given`'s line). `named(flops)`: what would buy `flops` beside the grown ladders, the budget as the
    user types it or why none does (sweep/plan/command.py); `share`: the entry's FLOPs as a share of the full run's."""
    if by_ladder:
        return None, by_ladder
    if entry is None:
        return None, (f"{NAME}: not planned: no two proxy widths fit under the full run's; transfer will not give "
                      f"{BUYS}")
    if not widths_ladder:
        return None, (f"{NAME}: not bought: transfer records the loss ratios beside the loss law's final loss, "
                      "which needs a ladder across width, and the plan has none")
    if spent + entry["flops"] <= budget:
        return entry, ""
    return None, (f"{NAME}: not bought: its {entry['runs']} runs on the full run's schedule (widths "
                  f"{', '.join(map(str, entry['widths']))}) cost {entry['flops']:.3g} FLOPs ({share} of the full run), "
                  f"more than the ladders leave of the budget; {named(entry['flops'])}")
