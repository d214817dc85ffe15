"""plan.yaml: what `sweep plan` writes and `sweep verify --plan` runs.

    plan: 1
    study: NAME            spec: the study spec's path
    target: {width, depth, params, tokens, batch_size, flops, kaplan_flops}
    budget: {flops, share}  goal: octaves of LR at the target
    proxy: {width, depth, params, batch_size, tokens}
    noise: {vertex_sd, source}
    ladders: [{name, param, across, rungs, seeds, grid, runs, flops, prior {centre, spread, source, low, high},
               prior_at_target, expected_half_width, expected_at_target, proxy_value, target_value}]
    own_curve: {name, widths, seeds, grid, runs, flops, width, depth, batch_size, tokens}, or null where not bought
    total: {runs, flops, share}  (the ladders' and the own-curve runs')
    verdict: {reached, line, needed, final_loss: the line saying transfer will predict no final loss, or "",
              own_curve: the line saying why the own-curve runs were not bought, or ""}

Running it (`execute`): each ladder is a `sweep verify --across AXIS=rungs` at the proxy width, its grid
centre × 2^k for k = −K … K (K = (grid − 1)/2), μP only, the plan's seeds; rung by rung (the proxy's own rung and
the next first, then one more per call: verify's studies are per rung and resume, so a call reruns nothing), and a
ladder stops once the posterior verify records for the law (its measurement's conjugate update of the published
prior, sweep/rules/prior.py), carried to the target, reaches the goal, or its rungs are spent. A rung that does not
finish (Ctrl-C, trials left) stops the plan there, said as not finished rather than as an interval. The own-curve
runs (sweep/forecast/own_curve.py) follow the ladders, as one width ladder on the full run's schedule
(sweep/verify/planned.py).
"""
from __future__ import annotations

import math
import os
from collections.abc import Callable
from pathlib import Path

import yaml

from sweep.errors import InputError
from sweep.forecast.design import Ladder, shared_runs, total
from sweep.forecast.interval import Z95, Noise, at_target
from sweep.forecast.live import RATIO_RUNS
from sweep.paths import inside_root
from trainer import yaml_io
from trainer.atomic import atomic_path
from trainer.config import MAX_BATCH, MAX_DEPTH, MAX_TOKENS, MAX_WIDTH

VERSION = 1


def plan_dict(name: str, request, target, batch: int, full: float, kaplan: float, budget: float, sizer,
              proxy: int, ladders: list[Ladder], noise: Noise, verdict: dict, own: dict | None = None) -> dict:
    shape = sizer.shape(proxy)
    shared = shared_runs(ladders)  # the proxy's own rung: trained by one ladder, taken by the others
    runs = sum(ld.runs() for ld in ladders) - shared + (own["runs"] if own else 0)
    flops = total(ladders) + (own["flops"] if own else 0.0)
    return {
        "plan": VERSION, "study": name, "spec": str(request.spec),
        "target": {"width": target.width, "depth": target.depth, "params": target.params,
                   "tokens": int(request.tokens), "batch_size": int(batch), "flops": full, "kaplan_flops": kaplan},
        "budget": {"flops": float(budget), "share": float(budget / full)}, "goal": float(request.goal),
        "proxy": {"width": proxy, "depth": shape.depth, "params": shape.params, "batch_size": sizer.run.batch_size,
                  "tokens": sizer.proxy_tokens()},
        "noise": {"vertex_sd": noise.vertex_sd, "source": noise.source},
        "ladders": [ladder_dict(ld, noise) for ld in ladders],
        "own_curve": own,
        "total": {"runs": runs, "flops": flops, "share": flops / full, "shared_runs": shared,
                  "shared_flops": sum(ld.flops() for ld in ladders) - total(ladders)},
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


MAX_BYTES = 1 << 20  # a plan is a few kB


def inside(path: Path, root: Path) -> None:
    """A plan is read from inside the results `root` only, where `sweep plan --out` writes it, and stays inside once
    links are resolved: named by a path outside (a copy elsewhere, ROOT/../x.yaml) it was read, through a link out of
    the root refused (outside tester); now both are."""
    if not Path(os.path.abspath(path)).is_relative_to(Path(os.path.abspath(root))):
        raise InputError(f"--plan: a plan inside the results root {root} (where `sweep plan` writes it), got {path}")
    inside_root(path, root, "--plan")


def read(path: Path, root: Path | None = None) -> dict:
    """The plan in `path`; anything but a plan this tool wrote is an InputError naming the field. A plan is read
    from inside the results `root` only (`inside`); a FIFO, device or folder is refused before it is
    opened (reading one would hang or never end), and so is a file too large to be a plan; its YAML is read as every
    command reads a spec (trainer/yaml_io.py: nested past 100 levels was a RecursionError)."""
    path = Path(path)
    if root is not None:
        inside(path, root)
    try:
        if not path.exists():
            raise FileNotFoundError(path)
        if not path.is_file():
            raise InputError(f"--plan: {path} is not a regular file")
        if path.stat().st_size > MAX_BYTES:
            raise InputError(f"--plan: {path} is larger than {MAX_BYTES} bytes, not a plan `sweep plan` writes")
        plan = yaml_io.load(path.read_bytes())  # bounded: depth, aliases, a key given twice (trainer/yaml_io.py)
    except FileNotFoundError:
        raise InputError(f"--plan: {path} does not exist") from None
    except OSError as err:
        raise InputError(f"--plan: {path} is unreadable ({type(err).__name__})") from None
    except yaml.YAMLError as err:
        raise InputError(f"--plan: {path} is not valid YAML ({yaml_io.reason(err)})") from None
    if not isinstance(plan, dict) or type(plan.get("plan")) is not int or plan["plan"] != VERSION:  # true == 1
        raise InputError(f"--plan: {path} is not a plan `sweep plan` writes (plan: {VERSION})")
    _fields(plan, FIELDS, "", "a plan")
    if not isinstance(plan.get("ladders"), list):
        raise InputError(f"--plan: ladders: a list of ladders, got {type(plan.get('ladders')).__name__}")
    for i, ld in enumerate(plan["ladders"]):
        _ladder(ld, f"ladders[{i}]")
    _one_per_law(plan["ladders"])
    if not isinstance(plan.get("study"), str):
        raise InputError(f"--plan: study: the spec's name, got {plan.get('study')!r}")
    _number_in(plan.get("goal"), "goal", 1e-6, 100)
    if not isinstance(plan.get("proxy"), dict):
        raise InputError(f"--plan: proxy: a mapping with the proxy's width, got {plan.get('proxy')!r}")
    _number_in(plan["proxy"].get("width"), "proxy.width", 1, 2 ** 20, whole=True)
    if plan.get("own_curve") is not None:
        _own_curve(plan["own_curve"])
    return plan


MAX_GRID = 63  # odd, within the 64 points `sweep verify` scans (sweep/verify/grid.py); sweep plan stays under it
MAX_NAME = 80  # sweep plan's names are `lr × width` and the like
AXES = ("width", "batch_size", "tokens", "depth")  # sweep plan's ladders (sweep/plan/command.py)
PARAMS = ("optimizer.lr",)
LAW_NAMES = {"width": "lr × width", "batch_size": "lr × batch", "tokens": "lr × tokens", "depth": "lr × depth"}
FIELDS = ("plan", "study", "spec", "target", "budget", "goal", "proxy", "noise", "ladders", "own_curve", "total",
          "verdict")
OWN_FIELDS = ("name", "widths", "seeds", "grid", "runs", "flops", "width", "depth", "batch_size", "tokens")  # own_curve
LADDER_FIELDS = ("name", "param", "across", "rungs", "seeds", "grid", "runs", "flops", "prior", "prior_at_target",
                 "expected_half_width", "expected_at_target", "proxy_value", "target_value")  # ladder_dict's
REACH = 16  # a rung within [min(proxy, target) / REACH, 2 · max(proxy, target)] (`_in_reach`)


def _fields(doc: dict, allowed: tuple, prefix: str, what: str) -> None:
    """Every key of `doc` one `plan_dict` writes: a hand-edited key (a typo, a flag's name) is refused, not ignored."""
    unknown = next((str(key) for key in doc if key not in allowed), None)
    if unknown is not None:
        shown = unknown if unknown.isprintable() else repr(unknown)
        raise InputError(f"--plan: {prefix}{shown:.{MAX_NAME}}: not {what} field; {what}'s fields are "
                         f"{', '.join(allowed)}")


def _one_per_law(ladders: list[dict]) -> None:
    """One ladder per setting and axis: a second one would rerun the first's studies and report its law twice."""
    seen: dict[tuple, int] = {}
    for i, ld in enumerate(ladders):
        first = seen.setdefault((ld["param"], ld["across"]), i)
        if first != i:
            raise InputError(f"--plan: ladders[{i}]: a second ladder of {ld['param']} across {ld['across']} (as "
                             f"ladders[{first}]); one ladder per setting and axis")


def _in_reach(ld: dict, field: str) -> None:
    """Rungs `sweep plan` could have chosen, and an octave more: its design bounds each ladder's rungs to
    [min(proxy, target) / 8, max(proxy, target)] (sweep/plan/command.py `ladders_at`, Ladder.low/high), so a rung
    past [min / 16, 2 · max] is no rung this law needs (a hand-edited tokens rung of 1e14 started training)."""
    ends = (ld["proxy_value"], ld["target_value"])
    low, high = min(ends) / REACH, 2 * max(ends)
    far = next((r for r in ld["rungs"] if not low <= r <= high), None)
    if far is not None:
        raise InputError(f"--plan: {field}.rungs: within [{low:g}, {high:g}] (an octave past the proxy's "
                         f"{ld['proxy_value']:g} and the target's {ld['target_value']:g} {ld['across']}, where "
                         f"`sweep plan` bounds a ladder), got {far:g}")


def _number_in(x, field: str, low: float, high: float, whole: bool = False) -> float:
    """`x` a number (not a bool) in [low, high] (a whole one where `whole`), else an InputError naming the field."""
    ok = isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) and low <= x <= high
    if not ok or (whole and not float(x).is_integer()):
        kind = "a whole number" if whole else "a number"
        raise InputError(f"--plan: {field}: {kind} in [{low:g}, {high:g}], got {x!r}")
    return x


def _ladder(ld, field: str) -> None:
    """One ladder as `sweep plan` writes it, no field more: its setting and axis, 2–64 positive rungs within reach of
    the proxy's and the target's axis values (`_in_reach`), seeds, an odd grid, its prior and its name (said in every
    line about the ladder: the one `sweep plan` gives a law across its axis, LAW_NAMES)."""
    if not isinstance(ld, dict):
        raise InputError(f"--plan: {field}: a ladder mapping, got {type(ld).__name__}")
    _fields(ld, LADDER_FIELDS, f"{field}.", "a ladder")
    rungs = ld.get("rungs")
    if not (isinstance(rungs, list) and 2 <= len(rungs) <= 64):
        raise InputError(f"--plan: {field}.rungs: two to 64 positive numbers, got {rungs!r}")
    for j, rung in enumerate(rungs):
        _number_in(rung, f"{field}.rungs[{j}]", 1e-300, 1e15)
    _number_in(ld.get("seeds"), f"{field}.seeds", 1, 64, whole=True)
    grid = _number_in(ld.get("grid"), f"{field}.grid", 3, MAX_GRID, whole=True)
    if grid % 2 == 0:
        raise InputError(f"--plan: {field}.grid: an odd number of points (centre × 2^k, k = −K … K), got {grid}")
    if ld.get("param") not in PARAMS or ld.get("across") not in AXES:
        raise InputError(f"--plan: {field}: param one of {', '.join(PARAMS)} across one of {', '.join(AXES)}, got "
                         f"{ld.get('param')!r} across {ld.get('across')!r}")
    for key in ("proxy_value", "target_value"):
        _number_in(ld.get(key), f"{field}.{key}", 1e-300, 1e15)
    _in_reach(ld, field)
    prior = ld.get("prior")
    if prior is not None:
        if not isinstance(prior, dict):
            raise InputError(f"--plan: {field}.prior: a mapping {{centre, spread, source}}, got {prior!r}")
        _number_in(prior.get("centre"), f"{field}.prior.centre", -10, 10)
        _number_in(prior.get("spread"), f"{field}.prior.spread", 1e-6, 10)
    name = ld.get("name")
    if name != LAW_NAMES[ld["across"]]:  # said in every line about the ladder: one across width named "lr × batch" lied
        raise InputError(f"--plan: {field}.name: {LAW_NAMES[ld['across']]!r}, the name of the law across "
                         f"{ld['across']}, got {name!r:.{MAX_NAME}}")


def _own_curve(own) -> None:
    """The full run's schedule at two widths or more (sweep/forecast/own_curve.py), no field more: distinct widths under
    the full run's, seeds enough for RATIO_RUNS runs, an odd grid, the full run's depth, batch and whole tokens."""
    if not isinstance(own, dict):
        raise InputError(f"--plan: own_curve: a mapping of the runs on the full run's schedule, got {own!r:.80}")
    _fields(own, OWN_FIELDS, "own_curve.", "an own-curve")
    full = _number_in(own.get("width"), "own_curve.width", 2, MAX_WIDTH, whole=True)
    widths = own.get("widths")
    if not (isinstance(widths, list) and 2 <= len(widths) <= 8 and len(set(map(str, widths))) == len(widths)):
        raise InputError(f"--plan: own_curve.widths: two to 8 distinct widths, got {widths!r:.80}")
    for j, width in enumerate(widths):
        _number_in(width, f"own_curve.widths[{j}]", 1, full - 1, whole=True)
    seeds = _number_in(own.get("seeds"), "own_curve.seeds", 1, 64, whole=True)
    if seeds * len(widths) < RATIO_RUNS:
        raise InputError(f"--plan: own_curve.seeds: {RATIO_RUNS} runs or more over the widths (the loss ratios' "
                         f"least), got {seeds} × {len(widths)}")
    grid = _number_in(own.get("grid"), "own_curve.grid", 3, MAX_GRID, whole=True)
    if grid % 2 == 0:
        raise InputError(f"--plan: own_curve.grid: an odd number of points (centre × 2^k, k = −K … K), got {grid}")
    _number_in(own.get("depth"), "own_curve.depth", 1, MAX_DEPTH, whole=True)
    _number_in(own.get("batch_size"), "own_curve.batch_size", 1, MAX_BATCH, whole=True)
    _number_in(own.get("tokens"), "own_curve.tokens", 1, MAX_TOKENS, whole=True)
    name = own.get("name")
    if not (isinstance(name, str) and 0 < len(name) <= MAX_NAME and name.isprintable()):
        raise InputError(f"--plan: own_curve.name: 1 to {MAX_NAME} printable characters, got {name!r:.{MAX_NAME}}")


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


class Unfinished(Exception):
    """`run_one`'s rungs did not finish (interrupted, or trials left to run): the plan stops there. `code`: the
    exit code to end with."""

    def __init__(self, code: int):
        super().__init__(code)
        self.code = code


def execute(plan: dict, run_one: Callable[[dict, list], dict | None], say: Callable[[str], None]) -> list[dict]:
    """Run every ladder rung by rung; `run_one(ladder, rungs)` runs `sweep verify` over those rungs and returns the
    μP law it measured ({slope, low, high, prior, posterior}, or None), or raises Unfinished. Each ladder stops at
    the goal or when its rungs are spent; the plan stops at an unfinished one (said, and re-raised once said).
    Returns per ladder {name, rungs, law, at_target, stopped}."""
    done = []
    for ladder in plan["ladders"]:
        law, rungs, reached = None, [], math.inf
        for rungs in steps(ladder):
            try:
                law = run_one(ladder, rungs)
            except Unfinished:
                say(f"{ladder['name']}: not finished at rungs {rungs}: its interval at the target is not measured "
                    "yet; the same command resumes it")
                raise
            if law and all(math.isfinite(law.get(k, math.nan)) for k in ("low", "high")):
                reached = at_target(Z95 * posterior_sd(law), ladder["proxy_value"],
                                    ladder["target_value"])
                if reached <= plan["goal"]:
                    break
        stopped = "goal" if reached <= plan["goal"] else "rungs spent"
        measured = f"±{octaves(reached, plan['goal'])} octave at the target" if math.isfinite(reached) else \
            "no interval measured (the fit found no law)"
        say(f"{ladder['name']}: {measured} after rungs {rungs} ({stopped})")
        done.append({"name": ladder["name"], "rungs": rungs, "law": law, "at_target": reached, "stopped": stopped})
    return done


def octaves(value: float, goal: float) -> str:
    """`value` to 2 significant digits, or as many more as set it apart from the goal it is judged against (0.505,
    not 0.5, beside a goal of 0.5)."""
    return next((f"{value:.{d}g}" for d in range(2, 17) if float(f"{value:.{d}g}") != goal), f"{value!r}")
