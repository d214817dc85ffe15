"""`sweep verify --plan PLAN`: the ladders `sweep plan` wrote, run rung by rung (sweep/forecast/planfile.py).

Each ladder is this command across its axis at the plan's proxy width, μP only, the plan's seeds, on a grid of the
plan's size centred on the chosen trial's value (centre × 2^k, k = −K … K); the studies are verify's own, per rung,
so a rung already run is not run again, and the same command resumes a stopped plan. Every ladder's rung at the
proxy's own value is the same runs: trained by the first ladder, taken by the others (sweep/study/twin.py)."""
from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from rich.console import Console

from proxies.registry import ModelError
from sweep.errors import InputError
from sweep.forecast import planfile
from sweep.forecast.own_curve import BUYS
from sweep.paths import results_root
from sweep.rules.axis import label, parse_axis
from sweep.rules.summary import load_summary, read_summary, schedule_folder
from sweep.study.spec import load_spec
from sweep.verify.checks import check_request, settings
from sweep.verify.command import run_verify
from sweep.verify.grid import base_values
from sweep.verify.request import VerifyRequest

GRID = "each ladder's grid, centre × 2^k"
PLANNED = {"--across": "its ladders", "--widths": "its width ladder's rungs", "--param": "each ladder's setting",
           "--range": GRID, "--values": GRID, "--seeds": "each ladder's seeds",
           "--parametrizations": "μP only"}  # set from the plan, never typed


def refuse_typed(typed: dict[str, object]) -> None:
    """`typed`: each flag of PLANNED → its value on the command line (None: not given). A value given beside --plan
    would be ignored for the plan's own, so it is refused, naming the flag."""
    flag = next((f for f in PLANNED if typed.get(f) is not None), None)
    if flag is not None:
        raise InputError(f"{flag}: set by the plan ({PLANNED[flag]}); not given with --plan")


def run_planned(path: Path, template: VerifyRequest, console: Console) -> int:
    """Run the plan's ladders; exit 1 when μP drifted across width on a rung (its verdict printed), verify's own
    code (130 on Ctrl-C, 1 for trials left) when a rung did not finish: the plan stops there and says so."""
    spec = load_spec(template.spec)
    plan = planfile.read(path, results_root())
    if plan["study"] != spec.name:
        raise InputError(f"--plan: a plan for study {plan['study']!r}, not {spec.name!r} ({template.spec}); plan "
                         f"this spec with `sweep plan {template.spec}`")
    own = plan.get("own_curve")
    if not plan["ladders"] and not own:  # an outside tester's empty plan ran nothing, silently, exit 0
        console.print(f"the plan {path} has no ladder to run: `sweep plan` found none needed or none with room (it "
                      "said which); transfer carries the priors")
        return 0
    width, failed = plan["proxy"]["width"], 0

    def request_for(across: str, entry: dict, schedule: tuple | None = None) -> VerifyRequest:
        """This command `across` the axis, with the plan `entry`'s param, seeds and a grid of its size about the
        centre (on the full run's `schedule` for the own-curve runs)."""
        param = entry.get("param", "optimizer.lr")
        request = replace(template, across=across, param=param, parametrizations="mup", seeds=entry["seeds"],
                          proxy_width=template.proxy_width or width, values=None, schedule=schedule)
        chosen, _, at_width = settings(request, spec, parse_axis(across))
        _, centre = base_values(spec, chosen, param, at_width)
        k = (entry["grid"] - 1) // 2  # the very floats at every ladder: its proxy rung is one grid (study/twin.py)
        return replace(request, values=",".join(repr(centre * 2.0 ** j) for j in range(-k, k + 1)))

    def ladder_request(ladder: dict, rungs: list) -> VerifyRequest:
        return request_for(f"{ladder['across']}={','.join(label(r) for r in rungs)}", ladder)

    def run_one(ladder: dict, rungs: list) -> dict | None:
        nonlocal failed
        try:
            request = ladder_request(ladder, rungs)
            code = run_verify(request, console)
        except InputError as err:
            raise planned_error(err, where(plan["ladders"].index(ladder), ladder)) from None
        summary = read_summary(results_root(), spec.name, ladder["param"], ladder["across"]) or {}
        values = list(parse_axis(request.across).values)
        if code not in (0, 1) or (code == 1 and [float(v) for v in summary.get("values", [])] != values):
            raise planfile.Unfinished(code)  # interrupted, or trials left: the summary is an earlier call's
        failed = code or failed  # 1 with the rungs' summary written: μP drifted across width (its verdict printed)
        return (summary.get("laws") or {}).get("mup")

    def own_request() -> VerifyRequest:
        return request_for(f"width={','.join(map(str, own['widths']))}", own,
                           (own["depth"], own["batch_size"], own["tokens"]))

    for index, ladder in enumerate(plan["ladders"]):  # every ladder's rungs checked before the first one trains
        try:
            if len(ladder["rungs"]) >= 2:
                check_request(ladder_request(ladder, sorted(ladder["rungs"])))
        except (InputError, ModelError) as err:
            raise planned_error(err, where(index, ladder)) from None
    try:
        if own:
            check_request(own_request())
    except (InputError, ModelError) as err:
        raise planned_error(err, f"own_curve ({own['name']})") from None
    try:
        planfile.execute(plan, run_one, lambda line: console.print(line, markup=False))  # names are the file's
    except planfile.Unfinished as stop:
        return stop.code
    if own:
        code = run_own_curve(own, own_request(), spec.name, console)
        if code not in (0, 1):
            return code
        failed = code or failed
    return 1 if failed else 0


def run_own_curve(own: dict, request: VerifyRequest, name: str, console: Console) -> int:
    """The full run's schedule at the plan's widths (sweep/forecast/own_curve.py), as a width ladder of verify's own
    (its studies resume: a rerun trains nothing twice); verify's code, 1 also where trials are left (said)."""
    try:
        code = run_verify(request, console)
    except InputError as err:
        raise planned_error(err, f"own_curve ({own['name']})") from None
    folder = results_root() / schedule_folder(name, "optimizer.lr", own["depth"], own["batch_size"], own["tokens"])
    summary = load_summary(folder / "summary.json", results_root()) if (folder / "summary.json").exists() else {}
    if code not in (0, 1) or (code == 1 and summary.get("values") != own["widths"]):  # interrupted, trials left
        console.print(f"{own['name']}: not finished at widths {own['widths']}: the same command resumes it",
                      markup=False)
        return code or 1
    console.print(f"{own['name']}: widths {', '.join(map(str, own['widths']))} ran on the full run's schedule; "
                  f"`sweep transfer` records the loss ratios from which the trainer predicts {BUYS}", markup=False)
    return code


def where(index: int, ladder: dict) -> str:
    return f"ladders[{index}] ({ladder['name']})"


def planned_error(err: InputError | ModelError, entry: str) -> InputError:
    """A refusal of a flag `run_one` set from the plan names the plan's `entry` instead (the user typed --plan), and
    so does a rung's study refusing a grid other than the one an earlier plan ran it on (a plan made again), and a
    rung no model has (found by an outside tester: a width rung of 24 was said as `model.width: 24 is not a
    multiple of the head dim 16`, a spec field the user never typed)."""
    text = str(err)
    if isinstance(err, ModelError):
        return InputError(f"--plan: {entry}: a rung no model has ({text})")
    flag = next((f for f in PLANNED if text == f or text.startswith((f + " ", f + ":"))), None)
    if flag is None and "when study" in text:  # sweep/study/study.py's check_same_spec: a rung run before
        return InputError(f"--plan: {entry}: a rung of it was run before with other "
                          f"settings ({text.split('; ')[0]}); finish it with the plan or verify call that ran it, or "
                          "give this plan that call's grid (its `grid:`)")
    if flag is None:
        return err
    rest = text[len(flag):].lstrip()
    return InputError(f"--plan: {entry}{'' if rest.startswith(':') else ', '}{rest}")

