"""`sweep plan SPEC`: from the full run and a compute budget to the proxy ladder that buys the intervals it needs.

The full run (`--width/--depth` or `--params`, `--tokens`, `--batch-size`) costs C = its trainer FLOPs per token ×
its tokens (trainer/flops.py), also shown as Kaplan's 6·N·D. The budget is `--share` of C (5 % by default) or
`--flops`. Each setting the transfer moves by a law gets a ladder (sweep/forecast/design.py): the LR across width
(μP's promise, checked), across batch (when the batch changes), across tokens (when the horizon does), across depth
(when the depth does). The proxy width is the widest power of two, up to a quarter of the target's, whose grown
ladders reach the goal (`--goal`, octaves of LR at the target) within the budget; if none does, the one that comes
nearest, and one line says what the budget buys and what budget would buy the goal.

The plan is printed (rung values × runs × FLOPs × the interval each ladder is expected to buy at the target) and
written atomically to ROOT/NAME/plan.yaml (or `--out` inside the results root): `sweep verify --plan` runs it,
ladder by ladder, rung by rung, resumable, on any backend.
"""
from __future__ import annotations

import math
from dataclasses import replace

from rich.console import Console
from rich.table import Table

from sweep.errors import InputError
from sweep.forecast import planfile
from sweep.forecast.design import Ladder, grow, objective, total
from sweep.forecast.interval import Noise
from sweep.paths import inside_root, results_root
from sweep.plan.request import SHARE, PlanRequest
from sweep.plan.shapes import Sizer
from sweep.rules.bracket import REFINE
from sweep.rules.prior import prior_for
from sweep.study.spec import load_spec

NAMES = {"width": "lr × width", "batch_size": "lr × batch", "tokens": "lr × tokens", "depth": "lr × depth"}
MIN_STEPS = 50  # a rung shorter than this measures its warmup, not its optimum
MIN_WIDTH = 32
WIDTH_QUANTUM = 64  # --params: the width searched in steps of this


def run_plan(request: PlanRequest, console: Console) -> int:
    """Plan, print, write; exit 0 when the plan reaches the goal, 1 when the budget cannot (said in one line)."""
    request.check()
    request = replace(request, tokens=int(request.tokens))
    spec = load_spec(request.spec)
    root = results_root()
    out = inside_root(request.out or root / spec.name / "plan.yaml", root, "--out")
    plan = make_plan(request, spec.name)
    show(plan, console)
    planfile.write(out, plan)
    console.print(f"plan written to {out}; run it with `sweep verify {request.spec} --plan {out}`")
    if plan["verdict"]["reached"]:
        return 0
    print(plan["verdict"]["line"])
    return 1


def make_plan(request: PlanRequest, name: str) -> dict:
    """The plan as the dict plan.yaml holds (sweep/forecast/planfile.py)."""
    spec = load_spec(request.spec)
    sizer = Sizer(spec, MIN_WIDTH)
    depth = request.depth or sizer.run.model.depth
    width = request.width or sizer.width_for(request.params, depth, WIDTH_QUANTUM)
    if width <= MIN_WIDTH:
        raise InputError(f"--width: the full run's width {width} leaves no narrower proxy (widths start at "
                         f"{MIN_WIDTH})")
    target = sizer.shape(width, depth)
    batch = request.batch_size or sizer.run.batch_size
    check_target(request, sizer, target, batch)
    full = target.flops_per_token * request.tokens
    kaplan = 6 * target.params * request.tokens
    budget = request.flops if request.flops is not None else (request.share or SHARE) * full
    noise = Noise()
    widths = [request.proxy_width] if request.proxy_width else \
        [w for w in (2 ** k for k in range(5, 21)) if w <= width / 4] or [MIN_WIDTH]
    options = [(w, grow(ladders_at(sizer, w, target, batch, request.tokens, request.goal), budget, request.goal, noise))
               for w in widths]
    options = [(w, ls) for w, ls in options if total(ls) <= budget] or options[:1]
    reached = [(w, ls) for w, ls in options if all(ld.at_target(noise) <= request.goal for ld in ls)]
    proxy, ladders = max(reached) if reached else min(options, key=lambda o: (objective(o[1], request.goal, noise),
                                                                              -o[0]))
    verdict = judge(ladders, budget, full, request.goal, noise, sizer, proxy, target, batch, request.tokens)
    verdict["no_room"] = [{"name": ld.name, "prior_at_target": ld.prior_at_target(), "rungs": ld.rungs}
                          for ld in ladders if len(ld.rungs) < 2]
    ladders = [ld for ld in ladders if len(ld.rungs) >= 2]  # one rung measures no slope: verify could not run it
    verdict["prior_only"] = [{"name": ld.name, "prior_at_target": ld.prior_at_target(), "source": ld.prior.source}
                             for ld in ladders_at(sizer, proxy, target, batch, request.tokens)
                             if ld.prior_at_target() <= request.goal]
    return planfile.plan_dict(name, request, target, batch, full, kaplan, budget, sizer, proxy, ladders, noise,
                              verdict)


def check_target(request: PlanRequest, sizer: Sizer, target, batch: int) -> None:
    """The full run must be a run: MIN_STEPS steps of its batch at least, a proxy narrower than it, and (--params)
    a model within a factor 2 of the count asked for."""
    step = batch * sizer.tokens_per_example
    if request.tokens < MIN_STEPS * step:
        raise InputError(f"--tokens: at least {MIN_STEPS} steps of the full run's batch {batch} "
                         f"({MIN_STEPS * step} tokens), got {request.tokens}")
    if request.proxy_width is not None and request.proxy_width >= target.width:
        raise InputError(f"--proxy-width: narrower than the full run's width {target.width}, got "
                         f"{request.proxy_width}")
    if request.params is not None and not 0.5 <= target.params / request.params <= 2:
        raise InputError(f"--params: the nearest model at depth {target.depth} (width {target.width}) has "
                         f"{target.params:.3g} parameters, not {request.params:.3g}; give --width, or another --depth")


def ladders_at(sizer: Sizer, proxy_width: int, target, batch: int, tokens: int, goal: float = 0.0) -> list[Ladder]:
    """The starting ladders at a proxy width: each law's first two rungs, two seeds; a law whose prior alone is
    within `goal` at the target gets none (the textbook rule already pins the setting down there)."""
    prior = {axis: prior_for("optimizer.lr", axis) for axis in NAMES}  # published: μP, Adam, a depth rule
    proxy = sizer.shape(proxy_width)
    p_tokens, p_batch = sizer.proxy_tokens(), sizer.run.batch_size
    step = p_batch * sizer.tokens_per_example
    fpt = proxy.flops_per_token
    out = [Ladder(NAMES["width"], "optimizer.lr", "width", prior["width"], proxy_width, target.width,
                  max(MIN_WIDTH, proxy_width / 4), target.width / 2,
                  lambda w: sizer.shape(int(w)).flops_per_token * p_tokens)]
    if batch != p_batch:
        most = p_tokens / (MIN_STEPS * sizer.tokens_per_example)  # the largest batch with MIN_STEPS steps
        out.append(Ladder(NAMES["batch_size"], "optimizer.lr", "batch_size", prior["batch_size"], p_batch, batch,
                          max(1, min(batch, p_batch / 8)), min(max(batch, p_batch), most),
                          lambda b: fpt * p_tokens))
    if tokens != p_tokens:
        out.append(Ladder(NAMES["tokens"], "optimizer.lr", "tokens", prior["tokens"], p_tokens, tokens,
                          max(MIN_STEPS * step, min(tokens, p_tokens / 8)), max(tokens, p_tokens) / 4,
                          lambda d: fpt * d, quantum=step))
    if target.depth != proxy.depth:
        out.append(Ladder(NAMES["depth"], "optimizer.lr", "depth", prior["depth"], proxy.depth, target.depth,
                          max(1, proxy.depth / 4), target.depth / 2,
                          lambda d: sizer.shape(proxy_width, int(d)).flops_per_token * p_tokens))
    return [ld for ld in out if ld.prior_at_target() > goal]


def judge(ladders: list[Ladder], budget: float, full: float, goal: float, noise: Noise, sizer: Sizer, proxy: int,
          target, batch: int, tokens: int) -> dict:
    """{reached, line, needed}: whether every ladder reaches the goal; if not, one line with what would."""
    short = [ld for ld in ladders if ld.at_target(noise) > goal]
    start = ladders_at(sizer, proxy, target, batch, tokens, goal)
    if total(ladders) > budget:
        unlimited = grow(start, math.inf, goal, noise)
        needed = buying(start, total(unlimited), goal, noise, full) if reaches(unlimited, goal, noise) else math.inf
        goal_text = f"{needed:.3g} FLOPs ({_share(needed, full)})" if math.isfinite(needed) else \
            "more than any budget buys at these rungs"
        return {"reached": False, "needed": needed,
                "line": f"--share/--flops: the budget {budget:.3g} FLOPs ({budget / full:.2%} of the full run) cannot "
                        f"buy the smallest ladder ({total(ladders):.3g} FLOPs, {total(ladders) / full:.2%}: two rungs, "
                        f"two seeds per law); the goal ±{goal:g} octave needs {goal_text}"}
    if not short:
        return {"reached": True, "line": f"every law reaches ±{goal:g} octave at the target", "needed": total(ladders)}
    unlimited = grow(start, math.inf, goal, noise)
    bought = "; ".join(f"{ld.name} ±{ld.at_target(noise):.2g}" for ld in short)
    if reaches(unlimited, goal, noise):
        needed = buying(start, total(unlimited), goal, noise, full)
        line = (f"--share/--flops: the budget {budget:.3g} FLOPs ({budget / full:.2%}) buys {bought} octaves at the "
                f"target, not the goal ±{goal:g}; {needed:.3g} FLOPs ({_share(needed, full)} of the full run) would")
    else:
        needed = math.inf
        worst = "; ".join(f"{ld.name} ±{ld.at_target(noise):.2g}" for ld in unlimited if ld.at_target(noise) > goal)
        line = (f"--goal: no budget buys ±{goal:g} octave at the target from proxies this short ({worst} at most, "
                f"the rungs bounded by the target); the budget {budget:.3g} FLOPs buys {bought}")
    return {"reached": False, "line": line, "needed": needed}


def reaches(ladders: list[Ladder], goal: float, noise: Noise) -> bool:
    return all(ld.at_target(noise) <= goal for ld in ladders)


def buying(start: list[Ladder], spent: float, goal: float, noise: Noise, full: float) -> float:
    """The budget to name: the greedy growth is path-dependent (a cheaper move taken under a tighter budget leads
    elsewhere), so what the unlimited growth spent may not buy the goal when given as the budget. The smallest of
    spent × 1.02^k, rounded up to the 3 digits printed, that buys it given as --flops and as the printed --share."""
    for k in range(400):
        named = float(f"{_up(spent * 1.02 ** k, 3):.3g}")  # as printed, and as a user types it back
        share = float(f"{_up(named / full, 2, percent=True) * 100:.2f}") / 100
        if all(reaches(grow(start, b, goal, noise), goal, noise) for b in (named, share * full)):
            return named
    return math.inf


def _up(x: float, digits: int, percent: bool = False) -> float:
    """`x` rounded up to `digits` significant digits (percent: to `digits` decimals of a percent)."""
    if percent:
        return math.ceil(x * 100 * 10 ** digits) / 10 ** digits / 100
    scale = 10 ** (math.floor(math.log10(x)) - digits + 1)
    return math.ceil(x / scale) * scale


def _share(flops: float, full: float) -> str:
    return f"{_up(flops / full, 2, percent=True) * 100:.2f}%"


def show(plan: dict, console: Console) -> None:
    target, budget = plan["target"], plan["budget"]
    table = Table(title=f"plan for {plan['study']}: width {target['width']}, depth {target['depth']}, "
                        f"{target['params']:.3g} params, {target['tokens']:.3g} tokens, batch {target['batch_size']}; "
                        f"proxy width {plan['proxy']['width']}")
    for column in ("law", "across", "rungs", "seeds", "grid", "runs", "FLOPs", "share", "prior ±oct",
                   "expected ±oct"):
        table.add_column(column, justify="right" if column not in ("law", "across", "rungs") else "left")
    for ld in plan["ladders"]:
        table.add_row(ld["name"], ld["across"], ", ".join(f"{r:.4g}" for r in ld["rungs"]), str(ld["seeds"]),
                      str(ld["grid"]), str(ld["runs"]), f"{ld['flops']:.3g}", f"{ld['flops'] / target['flops']:.3%}",
                      f"{ld['prior_at_target']:.2f}", f"{ld['expected_at_target']:.2f}")
    console.print(table)
    for law in plan["verdict"].get("no_room", []):
        console.print(f"{law['name']}: no ladder; no second rung fits between the bounds (rungs "
                      f"{', '.join(f'{r:.4g}' for r in law['rungs'])}): the prior's ±{law['prior_at_target']:.2f} "
                      f"octave at the target stands")
    for law in plan["verdict"]["prior_only"]:
        console.print(f"{law['name']}: no ladder; the prior alone holds the LR to ±{law['prior_at_target']:.2f} "
                      f"octave at the target ({law['source']})")
    console.print(f"total {plan['total']['runs']} runs, {plan['total']['flops']:.3g} FLOPs = "
                  f"{plan['total']['share']:.3%} of the full run ({target['flops']:.3g} FLOPs; 6·N·D "
                  f"{target['kaplan_flops']:.3g}); budget {budget['flops']:.3g} ({budget['share']:.2%}). "
                  f"±oct: the LR's 95 % interval at the target, octaves (goal ±{plan['goal']:g})")
    extra = sum(ld["flops"] * REFINE / ld["grid"] for ld in plan["ladders"])
    if extra:
        console.print(f"verify refines each curve by up to {REFINE} points until its optimum is bracketed (--refine): "
                      f"at most {sum(ld['seeds'] * len(ld['rungs']) * REFINE for ld in plan['ladders'])} runs, "
                      f"{extra:.3g} FLOPs ({_share(extra, target['flops'])}) more")
