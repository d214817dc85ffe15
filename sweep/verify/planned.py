"""`sweep verify --plan PLAN`: the ladders `sweep plan` wrote, run rung by rung (sweep/forecast/planfile.py).

Each ladder is this command across its axis at the plan's proxy width, μP only, the plan's seeds, on a grid of the
plan's size centred on the chosen trial's value (centre × 2^k, k = −K … K); the studies are verify's own, per rung,
so a rung already run is not run again, and the same command resumes a stopped plan."""
from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from rich.console import Console

from sweep.errors import InputError
from sweep.forecast import planfile
from sweep.paths import results_root
from sweep.rules.axis import label, parse_axis
from sweep.rules.summary import read_summary
from sweep.study.spec import load_spec
from sweep.verify.command import run_verify, settings
from sweep.verify.grid import base_values
from sweep.verify.request import VerifyRequest


def run_planned(path: Path, template: VerifyRequest, console: Console) -> int:
    spec = load_spec(template.spec)
    plan = planfile.read(path, results_root())
    if plan["study"] != spec.name:
        raise InputError(f"--plan: a plan for study {plan['study']!r}, not {spec.name!r} ({template.spec}); plan "
                         f"this spec with `sweep plan {template.spec}`")
    width = plan["proxy"]["width"]
    failed = 0

    def run_one(ladder: dict, rungs: list) -> dict | None:
        nonlocal failed
        across = f"{ladder['across']}={','.join(label(r) for r in rungs)}"
        request = replace(template, across=across, param=ladder["param"], parametrizations="mup",
                          seeds=ladder["seeds"], proxy_width=template.proxy_width or width, values=None)
        chosen, _, at_width = settings(request, spec, parse_axis(across))
        _, centre = base_values(spec, chosen, ladder["param"], at_width)
        k = (ladder["grid"] - 1) // 2
        request = replace(request, span=f"{centre * 2.0 ** -k},{centre * 2.0 ** k},{ladder['grid']}")
        failed = run_verify(request, console) or failed  # 1: μP drifted across width (its verdict printed)
        summary = read_summary(results_root(), spec.name, ladder["param"], ladder["across"])
        return ((summary or {}).get("laws") or {}).get("mup")

    planfile.execute(plan, run_one, console.print)
    return 1 if failed else 0
