"""`sweep plan`'s printout: the plan's table, the laws it plans no ladder for, its total against the budget, and what
to run next (the proxy sweep it starts from, verify, transfer)."""
from __future__ import annotations

import math
from pathlib import Path

from rich.console import Console
from rich.table import Table

from sweep.forecast import own_curve
from sweep.plan.request import PlanRequest
from sweep.rules.bracket import REFINE
from sweep.rules.target import MIN_STEPS
from sweep.study.lookup import swept_widths
from sweep.study.spec import StudySpec

VAGUE_SOURCE = "no prior published"  # a law's prior source where none is published (command.py VAGUE)


def next_steps(plan: dict, request: PlanRequest, spec: StudySpec, root: Path, out: Path) -> str:
    """What to run for a plan with ladders: the proxy sweep it starts from where the sweep has none, verify, then
    transfer (a plan without a ladder has nothing to run: found by an outside tester, it named a proxy sweep)."""
    lines = []
    if not spec.storage and (first := unswept(spec.name, request.spec, plan["proxy"]["width"],
                                              swept_widths(spec.name, root))):
        lines.append(first)  # a storage of the spec's own is not opened for a plan on paper
    lines.append(f"run it with `sweep verify {request.spec} --plan {out}`")
    lines.append(f"then `{transfer_command(plan, request.spec)}`: the measured laws carried to the full run, past the "
                 "rungs, as the plan priced them")
    return "\n".join(lines)


def unswept(name: str, spec, width: int, widths: list[int]) -> str:
    """"" where the sweep has a study at the plan's proxy width, else what to run first (found by an outside tester:
    `sweep verify --plan` then stopped at "no study at width 256")."""
    if width in widths:
        return ""
    has = (f"it has {', '.join(map(str, widths))}: or plan from one with `--proxy-width {widths[-1]}`" if widths
           else "it has none yet")
    return f"first: `sweep proxy {spec} --width {width}`, since sweep {name!r} has no study at width {width} ({has})"


def percent(share: float) -> str:
    """A share as a percent to 3 significant digits (whole percents from 100 %): 0.00312 %, 4.98 %, 62.5 %, 1471 %;
    below 0.001 % or from 100000 % with an exponent: 1e-298 %, 3.12e-7 %, 1.5e5 % (`--share 1e-300` printed a line
    of 280 zeros)."""
    value = share * 100
    rounded = float(f"{value:.3g}")  # its decade: 0.99999 is 100 %, not 100.0 %
    if not math.isfinite(rounded) or rounded <= 0:
        return f"{value:g} %"
    if rounded < 1e-3 or rounded >= 1e5:
        mantissa, exponent = f"{value:.2e}".split("e")
        return f"{mantissa.rstrip('0').rstrip('.')}e{int(exponent)} %"
    return f"{value:.{max(0, 2 - math.floor(math.log10(rounded)))}f} %"


RULES = {"batch_size": "--batch-rule fitted", "tokens": "--horizon-rule fitted", "depth": "--depth-rule fitted"}


def transfer_command(plan: dict, spec) -> str:
    """The `sweep transfer` that uses what the plan's ladders measure: each planned law's fitted rule, and
    --extrapolate, since the plan prices each law's interval at the full run, past its rungs (transfer refuses a law
    carried more than 2× past its range without it)."""
    t = plan["target"]
    rules = [RULES[axis] for axis in RULES if any(ld["across"] == axis for ld in plan["ladders"])]
    return " ".join([f"sweep transfer {spec} --width {t['width']} --depth {t['depth']} --batch-size "
                     f"{t['batch_size']} --tokens {int(t['tokens'])}", *rules, "--extrapolate"])


def no_room_reason(law: dict) -> str:
    """Why a law has no ladder: no second rung an octave from the proxy's within its bounds; a proxy run so short
    that twice it is under the tokens ladder's floor of MIN_STEPS steps named as such (found by an outside tester:
    the line said the bounds, which the proxy itself lay below, and not what to change)."""
    (low, high), proxy = law["bounds"], law["rungs"][0]
    if law.get("axis") == "tokens" and 2 * proxy < low:  # the proxy's own rung may be shorter, the next may not
        least = math.ceil(MIN_STEPS / 2)
        return (f"the spec's proxy run ({proxy:.4g} tokens) is too short for a second rung: one octave longer is "
                f"still under a rung's {MIN_STEPS} steps ({low:.4g} tokens); give the spec {least} steps "
                f"({low / 2:.4g} tokens) or more")
    return (f"no second rung an octave from {', '.join(f'{r:.4g}' for r in law['rungs'])} fits within its bounds "
            f"[{low:.4g}, {high:.4g}]")


def show(plan: dict, console: Console) -> None:
    """The plan's table, the laws it plans no ladder for, its total against the budget and verify's refinement;
    without a ladder, one line saying why instead of an empty table (with each law's prior at the target), and the
    laws without room for two rungs after it, if any."""
    target, budget = plan["target"], plan["budget"]
    title = (f"plan for {plan['study']}: width {target['width']}, depth {target['depth']}, {target['params']:.3g} "
             f"params, {target['tokens']:.3g} tokens, batch {target['batch_size']}")
    if plan["ladders"]:
        console.print(ladder_table(plan, f"{title}; proxy width {plan['proxy']['width']}"))
    elif plan["verdict"].get("no_room"):
        console.print(f"{title}: no ladder is needed (no law both needs one and has room for two rungs)")
    else:  # the one line the guide promises (found by an outside tester: it was six)
        priors = ", ".join(f"{law['name']} ±{law['prior_at_target']:.2f}" for law in plan["verdict"]["prior_only"])
        console.print(f"{title}: no ladder is needed: every law's published prior already holds the LR within "
                      f"±{plan['goal']:g} octave at the target, carried from proxy width {plan['proxy']['width']} "
                      f"({priors})")
        return
    for law in plan["verdict"].get("no_room", []):
        console.print(f"{law['name']}: no ladder; {no_room_reason(law)}: the prior's ±{law['prior_at_target']:.2f} "
                      f"octave at the target stands ({law['source']})")
    for ld in plan["ladders"]:
        if ld["prior"]["source"].startswith(VAGUE_SOURCE):
            console.print(f"{ld['name']}: {ld['prior']['source']}; the plan prices its ladder by what it measures, "
                          "and transfer carries the measured slope alone")
    for law in plan["verdict"]["prior_only"]:
        console.print(f"{law['name']}: no ladder; the prior alone holds the LR to ±{law['prior_at_target']:.2f} "
                      f"octave at the target ({law['source']})")
    for key in ("cheaper", "final_loss"):
        if plan["verdict"].get(key):
            console.print(plan["verdict"][key], markup=False)
    if plan["verdict"].get("own_curve"):
        console.print(plan["verdict"]["own_curve"], markup=False)
    if not plan["ladders"]:  # no own-curve runs either (sweep/forecast/own_curve.py `afford`)
        return
    shared = plan["total"].get("shared_runs") or 0
    once = (f", the {shared} runs the ladders share at the proxy's own value counted once (trained by one, taken by "
            f"the others: {plan['total']['shared_flops']:.3g} FLOPs less than the rows)") if shared else ""
    console.print(f"total {plan['total']['runs']} runs, {plan['total']['flops']:.3g} FLOPs = "
                  f"{percent(plan['total']['share'])} of the full run ({target['flops']:.3g} FLOPs; 6·N·D "
                  f"{target['kaplan_flops']:.3g}){once}; budget {budget['flops']:.3g} ({percent(budget['share'])}). "
                  f"±oct: the LR's 95 % interval at the target, octaves (goal ±{plan['goal']:g})")
    rows = plan["ladders"] + ([plan["own_curve"]] if plan.get("own_curve") else [])
    extra = sum(ld["flops"] * REFINE / ld["grid"] for ld in rows)
    curves = sum(ld["seeds"] * len(ld.get("rungs") or ld["widths"]) for ld in rows)
    console.print(f"verify refines each curve by up to {REFINE} points until its optimum is bracketed (--refine): "
                  f"at most {curves * REFINE} runs, "
                  f"{extra:.3g} FLOPs ({percent(extra / target['flops'])}) more")


def ladder_table(plan: dict, title: str) -> Table:
    table = Table(title=title)
    for column in ("law", "across", "rungs", "seeds", "grid", "runs", "FLOPs", "share", "prior ±oct",
                   "expected ±oct"):
        table.add_column(column, justify="right" if column not in ("law", "across", "rungs") else "left")
    for ld in plan["ladders"]:
        table.add_row(ld["name"], ld["across"], ", ".join(f"{r:.4g}" for r in ld["rungs"]), str(ld["seeds"]),
                      str(ld["grid"]), str(ld["runs"]), f"{ld['flops']:.3g}",
                      percent(ld["flops"] / plan["target"]["flops"]), f"{ld['prior_at_target']:.2f}",
                      f"{ld['expected_at_target']:.2f}")
    own = plan.get("own_curve")
    if own:
        table.add_row(own["name"], "width", ", ".join(map(str, own["widths"])),
                      str(own["seeds"]), str(own["grid"]), str(own["runs"]), f"{own['flops']:.3g}",
                      percent(own["flops"] / plan["target"]["flops"]), "-", own_curve.BUYS)
    return table
