"""`sweep plan SPEC`: from the full run and a compute budget to the proxy ladder that buys the intervals it needs.

The full run (`--width/--depth` or `--params`, `--tokens`, `--batch-size`) costs C = its trainer FLOPs per token ×
its tokens (trainer/flops.py), also shown as Kaplan's 6·N·D. The budget is `--share` of C (5 % by default) or
`--flops`. Each setting the transfer moves by a law gets a ladder (sweep/forecast/design.py): the LR across width
(μP's promise, checked), across batch (when the batch changes), across tokens (when the horizon does), across depth
(when the depth does). The proxy width is the widest power of two, up to a quarter of the target's, whose grown
ladders reach the goal (`--goal`, octaves of LR at the target) within the budget; if none does, the one that comes
nearest, and one line says what the budget buys and what budget would buy the goal (exit 1). A budget below the
smallest useful ladder (two rungs, two seeds per law) is refused like any bad input: one line naming the budget's
flag, what that ladder costs and the budget that buys it, exit 2, nothing written. A budget is named as the user
types it back: `--share` up to the full run, `--flops` past it (`--share` stops at 1), rounded up so that it buys
what the line says it buys.

Beside the ladders, from what they leave of the budget, the plan buys the runs that let the full run predict its
final loss from its own curve: its schedule at two proxy widths (sweep/forecast/own_curve.py), a row of its own, or
one line naming the budget that would buy them.

The plan is printed (rung values × runs × FLOPs × the interval each ladder is expected to buy at the target;
sweep/plan/printout.py) and written atomically to ROOT/NAME/plan.yaml (or `--out` inside the results root):
`sweep verify --plan` runs it, ladder by ladder, rung by rung, resumable, on any backend.
"""
from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from rich.console import Console

from proxies.registry import ModelError
from sweep.errors import InputError
from sweep.forecast import own_curve, planfile
from sweep.forecast.design import Ladder, grow, objective, total
from sweep.forecast.interval import Noise
from sweep.forecast.planfile import LAW_NAMES as NAMES
from sweep.forecast.planfile import octaves
from sweep.paths import inside_root, results_root
from sweep.plan.printout import VAGUE_SOURCE, next_steps, percent, show
from sweep.plan.request import SHARE, PlanRequest
from sweep.plan.shapes import Shape, Sizer
from sweep.rules.prior import Prior, prior_for
from sweep.rules.target import MIN_STEPS
from sweep.study.spec import load_spec

MIN_WIDTH = 32  # no rung narrower but the proxy's own: a GPT of one or two heads is off the laws' trend (docs)
WIDTH_QUANTUM = 64  # --params: the width searched in steps of this
VAGUE = 1.0  # the slope's prior sd where none is published: 0 ± 2 at 95 % (the published ones span −0.5 to 1)


def run_plan(request: PlanRequest, console: Console) -> int:
    """Plan, print, write; exit 0 when the plan reaches the goal, 1 when the budget cannot (said in one line). A
    budget that cannot buy even the smallest useful ladder is bad input: one line, exit 2, nothing written."""
    request.check()
    request = replace(request, tokens=int(request.tokens))
    spec = load_spec(request.spec)
    root = results_root()
    out = inside_root(request.out or root / spec.name / "plan.yaml", root, "--out")
    plan = make_plan(request, spec.name)
    show(plan, console)
    planfile.write(out, plan)
    console.print(f"plan written to {out}")
    if plan["ladders"]:
        console.print(next_steps(plan, request, spec, root, out), markup=False)
    if plan["verdict"]["reached"]:
        return 0
    print(plan["verdict"]["line"])
    return 1


def make_plan(request: PlanRequest, name: str) -> dict:
    """The plan as the dict plan.yaml holds (sweep/forecast/planfile.py); an InputError naming the budget's flag
    when the budget cannot buy the smallest useful ladder at any proxy width."""
    spec = load_spec(request.spec)
    sizer = Sizer(spec, MIN_WIDTH)
    target, batch = full_run(request, sizer)
    full = target.flops_per_token * request.tokens
    budget = request.flops if request.flops is not None else (request.share or SHARE) * full
    noise, goal = Noise(), request.goal
    widths = [request.proxy_width] if request.proxy_width else \
        [w for w in (2 ** k for k in range(5, 21)) if w <= target.width / 4] or [MIN_WIDTH]

    def starting(width: int, at_least: float = goal) -> list[Ladder]:
        return ladders_at(sizer, width, target, batch, request.tokens, at_least)

    options = [(w, grow(useful(starting(w)), budget, goal, noise)) for w in widths]
    if all(total(ls) > budget for _, ls in options):
        raise InputError(unaffordable(request, min(options, key=lambda o: total(o[1])), budget, full, noise))
    options = [(w, ls) for w, ls in options if total(ls) <= budget]
    reached = [(w, ls) for w, ls in options if reaches(ls, goal, noise)]
    proxy, ladders = max(reached) if reached else min(options, key=lambda o: (objective(o[1], goal, noise), -o[0]))
    cheaper = min(reached, key=lambda o: total(o[1])) if reached else (proxy, ladders)
    stuck = [ld for ld in starting(proxy) if len(ld.rungs) < 2]
    verdict = judge(request, ladders, useful(starting(proxy)), stuck, budget, full, noise)
    verdict["no_room"] = [{"name": ld.name, "axis": ld.axis, "prior_at_target": ld.prior_at_target(), "rungs": ld.rungs,
                           "bounds": [ld.low, ld.high], "source": ld.prior.source} for ld in stuck]
    verdict["prior_only"] = [{"name": ld.name, "prior_at_target": ld.prior_at_target(), "source": ld.prior.source}
                             for ld in starting(proxy, 0.0) if ld.prior_at_target() <= goal]
    verdict["final_loss"] = final_loss(sizer, proxy, target, request.tokens, ladders, request.spec)
    verdict["cheaper"] = cheaper_proxy(proxy, cheaper, ladders, full)
    own, verdict["own_curve"] = own_curve_runs(sizer, proxy, target, batch, request.tokens, ladders,
                                               useful(starting(proxy)), budget, full, goal, noise)
    kaplan = 6 * target.params * request.tokens
    return planfile.plan_dict(name, request, target, batch, full, kaplan, budget, sizer, proxy, ladders, noise,
                              verdict, own)


def cheaper_proxy(proxy: int, cheaper: tuple[int, list[Ladder]], ladders: list[Ladder], full: float) -> str:
    """The line naming a narrower proxy whose ladders reach the goal for fewer FLOPs, or "". Of the proxy widths
    that reach it within the budget the plan takes the widest: its laws and the full run's final loss are carried
    least far past it (an octave less per octave of proxy), which the LR's interval does not price; found by an outside
    tester: at 5 % the 1.3B plan spent 1.99 % at proxy width 128 where width 64 reached every law's goal for 0.8 %."""
    width, cheap = cheaper
    if width == proxy or total(cheap) >= total(ladders):
        return ""
    return (f"proxy width {proxy}: the widest whose ladders reach the goal within the budget (its laws and the final "
            f"loss are carried least far); `--proxy-width {width}`'s ladders reach it too, for "
            f"{percent(total(cheap) / full)} of the full run")


def own_curve_runs(sizer: Sizer, proxy: int, target: Shape, batch: int, tokens: int, ladders: list[Ladder],
                   start: list[Ladder], budget: float, full: float, goal: float, noise: Noise) -> tuple[dict | None,
                                                                                                        str]:
    """The full run's schedule at two proxy widths (sweep/forecast/own_curve.py), bought from what the `ladders` leave
    of the budget, or the line naming the budget that buys them beside the ladders grown from `start`."""
    entry = own_curve.runs(sizer, proxy, target, batch, tokens, MIN_WIDTH)
    same = (sizer.shape(proxy).depth == target.depth and sizer.run.batch_size == batch
            and abs(sizer.proxy_tokens() / tokens - 1) <= 0.01)
    unlimited = grow(start, math.inf, goal, noise)

    def named(extra: float) -> str:  # at this proxy width: a larger budget alone may pick a wider one, dearer rows
        if not reaches(unlimited, goal, noise):
            short = "; ".join(ld.name for ld in unlimited if ld.at_target(noise) > goal)
            return f"no budget would: the ladders grow into any budget, as none brings {short} to ±{goal:g} octave"
        text, _ = suggest(total(unlimited) + extra, full, lambda b: total(grow(start, b, goal, noise)) + extra <= b)
        return (f"`{text} --proxy-width {proxy}` would buy them beside the ladders, and with them {own_curve.BUYS}"
                if text else "no budget the plan can name would")

    return own_curve.afford(entry, total(ladders), budget, named, percent(entry["flops"] / full) if entry else "",
                            any(ld.axis == "width" for ld in ladders), own_curve.given(ladders, target.width, same))


def final_loss(sizer: Sizer, proxy: int, target: Shape, tokens: int, ladders: list[Ladder], spec: Path) -> str:
    """The line saying `sweep transfer` will predict no final loss from the plan's ladders, or "": the loss law's
    points are one per distinct (N, D), as sweep/rules/ladder.py `ladder_points` counts them (the width ladder's rungs
    at the proxy's tokens, the tokens ladder's at the proxy's width; batch and depth ladders give none), and
    `predicted_loss` predicts nothing with one N (or D) where the full run's differs, or under 4 points (found by an
    outside tester: a width ladder at 16 and 32 alone left transfer no prediction, unsaid)."""
    p_tokens, rungs = sizer.proxy_tokens(), {ld.axis: ld.rungs for ld in ladders}
    points = {(sizer.shape(int(w)).params, p_tokens) for w in rungs.get("width", [proxy])}
    points |= {(sizer.shape(proxy).params, d) for d in rungs.get("tokens", [])}
    n, d = {p for p, _ in points}, {t for _, t in points}
    lead = "`sweep transfer` predicts no final loss from these ladders (it fits the loss law across width and tokens)"
    if len(n) < 2 and target.params not in n:
        return f"{lead}: they give one width; `sweep verify {spec} --widths W1,W2,W3` adds them"
    if len(d) < 2 and tokens not in d:
        return f"{lead}: they give one token count; a ladder across tokens (`--across tokens=D1,D2`) adds them"
    if len(points) < 4:
        return (f"{lead}: they give the law {len(points)} points, and its 3 unknowns need 4 or more; "
                f"{4 - len(points)} more rung(s) across width or tokens add them")
    return ""


def useful(ladders: list[Ladder]) -> list[Ladder]:
    """The ladders verify can run: one rung measures no slope (its law's prior stands, said apart), and is neither
    planned nor charged to the budget."""
    return [ld for ld in ladders if len(ld.rungs) >= 2]


def full_run(request: PlanRequest, sizer: Sizer) -> tuple[Shape, int]:
    """The full run's shape and batch, checked (`check_target`)."""
    depth = request.depth or sizer.run.model.depth
    width = request.width or sizer.width_for(request.params, depth, WIDTH_QUANTUM)
    if request.proxy_width is None and width <= MIN_WIDTH:  # a narrower --proxy-width is checked with the target
        raise InputError(f"--width: the full run's width {width} leaves no narrower proxy (the plan picks proxy "
                         f"widths from {MIN_WIDTH}; --proxy-width names a narrower one)")
    try:
        target = sizer.shape(width, depth)
    except ModelError as err:  # the model names its field; the user typed a flag
        flags = {"model.width: ": "--width: " if request.width else f"--params: width {width}: ",
                 "model.depth: ": "--depth: "}
        said = next((flags[f] + str(err).removeprefix(f) for f in flags if str(err).startswith(f)), str(err))
        raise InputError(said) from None
    batch = request.batch_size or sizer.run.batch_size
    check_target(request, sizer, target, batch)
    return target, batch


def check_target(request: PlanRequest, sizer: Sizer, target, batch: int) -> None:
    """The full run must be a run: MIN_STEPS steps of its batch at least, a proxy narrower than it (a model the
    builder makes at that width), and (--params)
    a model within a factor 2 of the count asked for."""
    step = batch * sizer.tokens_per_example
    if request.tokens < MIN_STEPS * step:
        raise InputError(f"--tokens: at least {MIN_STEPS} steps of the full run's batch {batch} "
                         f"({MIN_STEPS * step} tokens), got {request.tokens}")
    if request.proxy_width is not None and request.proxy_width >= target.width:
        raise InputError(f"--proxy-width: narrower than the full run's width {target.width}, got "
                         f"{request.proxy_width}")
    if request.proxy_width is not None:
        try:
            sizer.shape(request.proxy_width)
        except ModelError as err:  # found by an outside tester: said as `model.width: 17 …`, a flag never typed
            raise InputError(f"--proxy-width: {str(err).removeprefix('model.width: ')}") from None
    if request.params is not None and not 0.5 <= target.params / request.params <= 2:
        raise InputError(f"--params: the nearest model at depth {target.depth} (width {target.width}) has "
                         f"{target.params:.3g} parameters, not {request.params:.3g}; give --width, or another --depth")


def ladders_at(sizer: Sizer, proxy_width: int, target, batch: int, tokens: int, goal: float = 0.0) -> list[Ladder]:
    """The starting ladders at a proxy width: each law's first two rungs, two seeds; a law whose prior alone is
    within `goal` at the target gets none (the textbook rule already pins the setting down there). Rungs stay within
    [min(proxy, target) / 8, max(proxy, target)] (planfile's `_in_reach`): width up to half the target's, tokens from
    MIN_STEPS steps up to the longer of the proxy's and the full run's tokens (it was a quarter of that: a full run 4×
    the proxy's tokens had no rung at 2×, found by an outside tester)."""
    prior = {axis: lr_prior(axis, sizer.run.optimizer.name) for axis in NAMES}
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
                          max(MIN_STEPS * step, min(tokens, p_tokens / 8)), max(tokens, p_tokens),
                          lambda d: fpt * d, quantum=step))
    if target.depth != proxy.depth:
        out.append(Ladder(NAMES["depth"], "optimizer.lr", "depth", prior["depth"], proxy.depth, target.depth,
                          max(1, proxy.depth / 4), target.depth / 2,
                          lambda d: sizer.shape(proxy_width, int(d)).flops_per_token * p_tokens))
    return [ld for ld in out if ld.prior_at_target() > goal]


def lr_prior(axis: str, optimizer: str) -> Prior:
    """The published prior on the LR's slope across `axis` for the spec's optimizer (sweep/rules/prior.py: μP,
    Adam's or SGD's batch rule, the horizon and depth rules); where none is published (Lion across batch), a vague
    one, N(0, VAGUE²), named so, so that the ladder is priced by what it alone measures."""
    return prior_for("optimizer.lr", axis, optimizer=optimizer) or \
        Prior(0.0, VAGUE, f"{VAGUE_SOURCE} for {optimizer} across {axis}: a vague N(0, {VAGUE:g}²)")


def budget_flag(request: PlanRequest) -> str:
    return "--flops" if request.flops is not None else "--share"


def unaffordable(request: PlanRequest, cheapest: tuple[int, list[Ladder]], budget: float, full: float,
                 noise: Noise) -> str:
    """The line refusing a budget below the smallest useful ladder (the cheapest proxy width's: two rungs, two
    seeds per law): what that ladder costs, the budget that buys it, and the one that buys the goal."""
    start, goal = cheapest[1], request.goal
    cost = total(start)
    buys_it, _ = suggest(cost, full, lambda b: cost <= b)
    unlimited = grow(start, math.inf, goal, noise)
    if reaches(unlimited, goal, noise):
        named, _ = suggest(total(unlimited), full, lambda b: reaches(grow(start, b, goal, noise), goal, noise))
        then = f"and {named} the goal ±{goal:g} octave" if named else \
            f"though no budget buys the goal ±{goal:g} octave from there"
    else:
        then = f"though no budget buys the goal ±{goal:g} octave from proxies this short"
    return (f"{budget_flag(request)}: the budget {budget:.3g} FLOPs ({percent(budget / full)} of the full run) "
            f"cannot buy the smallest useful ladder (two rungs, two seeds per law at proxy width {cheapest[0]}: "
            f"{cost:.3g} FLOPs, {percent(cost / full)}); {buys_it} would buy it, {then}")


def judge(request: PlanRequest, ladders: list[Ladder], start: list[Ladder], stuck: list[Ladder], budget: float,
          full: float, noise: Noise) -> dict:
    """{reached, line, needed}: whether every law reaches the goal; if not, one line with the budget that would
    (`stuck`: laws with room for one rung, whose prior stands at any budget)."""
    goal = request.goal
    short = [ld for ld in ladders if ld.at_target(noise) > goal] + [ld for ld in stuck if ld.at_target(noise) > goal]
    if not short:
        return {"reached": True, "line": f"every law reaches ±{goal:g} octave at the target", "needed": total(ladders)}
    bought = "; ".join(f"{ld.name} ±{octaves(ld.at_target(noise), goal)}" for ld in short)
    unlimited = grow(start, math.inf, goal, noise) + stuck
    named, needed = ("", math.inf) if not reaches(unlimited, goal, noise) else \
        suggest(total(unlimited), full, lambda b: reaches(grow(start, b, goal, noise), goal, noise))
    if named:
        line = (f"{budget_flag(request)}: the budget {budget:.3g} FLOPs ({percent(budget / full)} of the full run) "
                f"buys {bought} octaves at the target, not the goal ±{goal:g}; {named} would")
    else:
        worst = "; ".join(f"{ld.name} ±{octaves(ld.at_target(noise), goal)}" for ld in unlimited
                          if ld.at_target(noise) > goal)
        line = (f"--goal: no budget buys ±{goal:g} octave at the target from proxies this short ({worst} at most, "
                f"the rungs bounded by the target and, across width, from {MIN_WIDTH}); the budget {budget:.3g} "
                f"FLOPs buys {bought}")
    return {"reached": False, "line": line, "needed": needed}


def reaches(ladders: list[Ladder], goal: float, noise: Noise) -> bool:
    return all(ld.at_target(noise) <= goal for ld in ladders)


def suggest(flops: float, full: float, buys: Callable[[float], bool]) -> tuple[str, float]:
    """The budget to name, as the user types it back (`typed`), and the FLOPs that buys: the smallest of
    flops × 1.02^k whose typed value `buys` (the greedy growth is path-dependent: a cheaper move taken under a
    tighter budget leads elsewhere, so what an unlimited growth spent may not buy the goal given as the budget);
    ("", inf) when none within 400 steps."""
    for k in range(400):
        text, value = typed(flops * 1.02 ** k, full)
        if buys(value):
            return text, value
    return "", math.inf


def typed(flops: float, full: float) -> tuple[str, float]:
    """`--share S` (S rounded up to 2 significant digits) while S ≤ 1, else `--flops X` (3 digits, rounded up;
    `--share` refuses more than the full run); with the FLOPs that flag, typed as printed, gives make_plan."""
    share = float(f"{_up(flops / full, 2):.2g}")
    if share <= 1:
        return f"--share {share:g}", share * full
    named = float(f"{_up(flops, 3):.3g}")
    return f"--flops {named:.3g}", named


def _up(x: float, digits: int) -> float:
    """`x` rounded up to `digits` significant digits."""
    scale = 10 ** (math.floor(math.log10(x)) - digits + 1)
    return math.ceil(x / scale) * scale
