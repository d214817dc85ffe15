"""plan.yaml: what `sweep plan` writes and `sweep verify --plan` runs.

    plan: 1
    study: NAME            spec: the study spec's path
    target: {width, depth, params, tokens, batch_size, flops, kaplan_flops}
    budget: {flops, share}  goal: octaves of LR at the target
    proxy: {width, depth, params, batch_size, tokens}
    noise: {vertex_sd, source}
    ladders: [{name, param, across, rungs, seeds, grid, runs, flops, prior {slope, sd, source},
               prior_at_target, expected_half_width, expected_at_target, proxy_value, target_value}]
    total: {runs, flops, share}
    verdict: {reached, line, needed}

Running it (`execute`): each ladder is a `sweep verify --across AXIS=rungs` at the proxy width, its grid
centre × 2^k for k = −K … K (K = (grid − 1)/2), μP only, the plan's seeds; rung by rung (the proxy's own rung and
the next first, then one more per call: verify's studies are per rung and resume, so a call reruns nothing), and a
ladder stops once its measured interval combined with the plan's prior (the normal conjugate update), carried to
the target, reaches the goal, or its rungs are spent.
"""
from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path

import yaml

from sweep.errors import InputError
from sweep.forecast.design import Ladder, total
from sweep.forecast.interval import Z95, Noise, at_target
from trainer.atomic import atomic_path

VERSION = 1


def plan_dict(name: str, request, target, batch: int, full: float, kaplan: float, budget: float, sizer,
              proxy: int, ladders: list[Ladder], noise: Noise, verdict: dict) -> dict:
    shape = sizer.shape(proxy)
    return {
        "plan": VERSION, "study": name, "spec": str(request.spec),
        "target": {"width": target.width, "depth": target.depth, "params": target.params,
                   "tokens": int(request.tokens), "batch_size": int(batch), "flops": full, "kaplan_flops": kaplan},
        "budget": {"flops": float(budget), "share": float(budget / full)}, "goal": float(request.goal),
        "proxy": {"width": proxy, "depth": shape.depth, "params": shape.params, "batch_size": sizer.run.batch_size,
                  "tokens": sizer.proxy_tokens()},
        "noise": {"vertex_sd": noise.vertex_sd, "source": noise.source},
        "ladders": [ladder_dict(ld, noise) for ld in ladders],
        "total": {"runs": sum(ld.runs() for ld in ladders), "flops": total(ladders), "share": total(ladders) / full},
        "verdict": {k: (None if isinstance(v, float) and not math.isfinite(v) else v) for k, v in verdict.items()},
    }


def ladder_dict(ld: Ladder, noise: Noise) -> dict:
    return {"name": ld.name, "param": ld.param, "across": ld.axis, "rungs": [_number(r) for r in ld.rungs],
            "seeds": ld.seeds, "grid": ld.grid, "runs": ld.runs(), "flops": ld.flops(),
            "prior": ld.prior.record(),
            "prior_at_target": ld.prior_at_target(), "expected_half_width": ld.half_width(noise),
            "expected_at_target": ld.at_target(noise), "proxy_value": _number(ld.proxy),
            "target_value": _number(ld.target)}


def _number(x: float) -> int | float:
    return int(x) if float(x).is_integer() else float(x)


def write(path: Path, plan: dict) -> None:
    with atomic_path(path) as tmp:
        tmp.write_text(yaml.safe_dump(plan, sort_keys=False, allow_unicode=True))


def read(path: Path) -> dict:
    """The plan in `path`; anything but a plan this tool wrote is an InputError naming the field."""
    try:
        plan = yaml.safe_load(Path(path).read_text())
    except FileNotFoundError:
        raise InputError(f"--plan: {path} does not exist") from None
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as err:
        raise InputError(f"--plan: {path} is unreadable ({type(err).__name__})") from None
    if not isinstance(plan, dict) or plan.get("plan") != VERSION:
        raise InputError(f"--plan: {path} is not a plan `sweep plan` writes (plan: {VERSION})")
    for i, ld in enumerate(plan.get("ladders") or []):
        rungs, seeds, grid = ld.get("rungs"), ld.get("seeds"), ld.get("grid")
        if not (isinstance(rungs, list) and len(rungs) >= 2 and all(isinstance(r, (int, float)) and r > 0
                                                                    for r in rungs)):
            raise InputError(f"--plan: ladders[{i}].rungs: two or more positive numbers, got {rungs!r}")
        if not (isinstance(seeds, int) and seeds >= 1 and isinstance(grid, int) and grid >= 3 and grid % 2):
            raise InputError(f"--plan: ladders[{i}]: seeds ≥ 1 and an odd grid ≥ 3, got {seeds!r}, {grid!r}")
    return plan


def steps(ladder: dict) -> list[list]:
    """The rung lists one ladder is run through: the proxy's rung and the next first, then one more each, nearest
    the proxy first, toward the target first where two are as near."""
    proxy, up = ladder["proxy_value"], ladder["target_value"] >= ladder["proxy_value"]
    order = sorted(ladder["rungs"], key=lambda r: (abs(math.log2(r / proxy)), (r < proxy) == up))
    return [sorted(order[:k]) for k in range(2, len(order) + 1)]


def posterior_sd(law: dict) -> float:
    """The slope's sd as `sweep verify` recorded it: its posterior over the law's published prior (sweep/rules/
    prior.py's update, in the summary), or the measurement alone under --prior none; 95 % half-width over 1.96."""
    ends = law.get("posterior") or law
    return max((ends["high"] - ends["low"]) / (2 * Z95), 1e-12)


def execute(plan: dict, run_one: Callable[[dict, list], dict | None], say: Callable[[str], None]) -> list[dict]:
    """Run every ladder rung by rung; `run_one(ladder, rungs)` runs `sweep verify` over those rungs and returns the
    μP law it measured ({slope, low, high, prior, posterior}, or None). Each ladder stops at the goal or when its
    rungs are spent; returns per ladder {name, rungs, law, at_target, stopped}."""
    done = []
    for ladder in plan["ladders"]:
        law, rungs, reached = None, [], math.inf
        for rungs in steps(ladder):
            law = run_one(ladder, rungs)
            if law and all(math.isfinite(law.get(k, math.nan)) for k in ("low", "high")):
                reached = at_target(Z95 * posterior_sd(law), ladder["proxy_value"],
                                    ladder["target_value"])
                if reached <= plan["goal"]:
                    break
        stopped = "goal" if reached <= plan["goal"] else "rungs spent"
        say(f"{ladder['name']}: ±{reached:.2g} octave at the target after rungs {rungs} ({stopped})")
        done.append({"name": ladder["name"], "rungs": rungs, "law": law, "at_target": reached, "stopped": stopped})
    return done
