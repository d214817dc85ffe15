"""The verify grid: which values of the setting are tried, and the study spec that runs them.

Values are positive and log₂-spaced (an octave grid by default, centred on the best trial's value):
`--values 1e-3,2^-8,…` lists them, `--range LO,HI,N` spaces N from LO to HI evenly in log₂.
The spec is the sweep's own with the other settings fixed (to the best trial's values, or the spec's
defaults), the one setting on a grid (Optuna's grid sampler, every point queued once), no pruner, and
`seeds` training seeds per point.
"""
from __future__ import annotations

import functools
import re
from typing import Any

import numpy as np

from sweep.errors import InputError
from sweep.study.space import get_path, set_path
from sweep.study.spec import StudySpec, check_search_path, parse_spec
from trainer.config import ConfigError, RunConfig

DEFAULT_OCTAVES = 3  # the default grid: centre × 2^k for k = −3 … 3
MAX_POINTS = 64  # a grid past this is a typo, not a measurement: 64 runs per seed and axis value already
POWER = re.compile(r"^\s*2\s*\^\s*(-?\d+(\.\d+)?)\s*$")


def parse_number(text: str, flag: str) -> float:
    """A float, or a power of two written 2^-7."""
    match = POWER.match(text)
    try:
        return 2.0 ** float(match.group(1)) if match else float(text)
    except ValueError:
        raise InputError(f"{flag}: {text.strip()!r} is not a number (e.g. 0.003 or 2^-8)") from None
    except OverflowError:  # 2^9999: past any float
        raise InputError(f"{flag}: {text.strip()!r} is not a finite number") from None


def grid_values(centre: float | None, values: str | None, span: str | None) -> list[float]:
    if values and span:
        raise InputError("--values, --range: give one, not both")
    if values:
        grid = sorted({parse_number(v, "--values") for v in values.split(",") if v.strip()})
        flag = "--values"
    elif span:
        parts = span.split(",")
        if len(parts) != 3 or not parts[2].strip().isdigit():
            raise InputError(f"--range: {span!r} is not LO,HI,N (e.g. 2^-12,2^-4,9)")
        low, high, n = parse_number(parts[0], "--range"), parse_number(parts[1], "--range"), int(parts[2])
        if not 0 < low < high or not 3 <= n <= MAX_POINTS:
            raise InputError(f"--range: need 0 < LO < HI and 3 ≤ N ≤ {MAX_POINTS}, got {span!r}")
        grid, flag = [float(v) for v in np.geomspace(low, high, n)], "--range"
    else:
        if centre is None or not isinstance(centre, (int, float)) or centre <= 0:
            raise InputError(f"--param: the base value {centre!r} is not a positive number; give --values or --range")
        grid, flag = [float(centre * 2.0 ** k) for k in range(-DEFAULT_OCTAVES, DEFAULT_OCTAVES + 1)], "--param"
    if any(not np.isfinite(v) or v <= 0 for v in grid):
        raise InputError(f"{flag}: verify scans positive values on a log₂ grid, got {grid}")
    if not 3 <= len(grid) <= MAX_POINTS:
        raise InputError(f"{flag}: 3 to {MAX_POINTS} values fit an optimum (each is a run per seed and axis value), "
                         f"got {len(grid)}")
    return grid


def base_values(spec: StudySpec, values: dict[str, Any], param: str, width: int) -> tuple[dict, Any]:
    """(the spec's run with `values` set except `param`, the value of `param` there or its default)."""
    check_search_path(param, f"--param {param}")
    if param.endswith(".lr_width_exp"):  # signed and additive in log LR: no log₂ grid, no width law of its own
        raise InputError(f"--param {param}: an exponent, not a multiplier; verify scans positive settings on a log₂ "
                         "grid. Set it in the spec's run and verify the role's multiplier under it "
                         f"(--param {param.removesuffix('lr_width_exp')}lr_mult)")
    run = dict(spec.run)
    for path, value in values.items():
        if path != param:
            run = set_path(run, path, value)
    centre = values.get(param, get_path(run, param))
    if centre is None:
        try:
            full = RunConfig.parse(set_path(run, "model.width", width))
        except ConfigError as err:
            raise InputError(f"run.{err}") from None
        centre = get_path(full.model_dump(mode="json"), param)
        if centre is None:  # a field absent from dumps at its default (a per-role multiplier: 1)
            centre = functools.reduce(lambda section, key: getattr(section, key, None), param.split("."), full)
    return run, centre


def verify_spec(spec: StudySpec, name: str, run: dict, param: str, grid: list[float], seeds: int) -> StudySpec:
    raw = spec.model_dump(mode="json")
    raw.update(name=name, trials=len(grid), run=run, search={param: {"choices": grid}}, seeds_per_trial=seeds,
               sampler={"name": "grid", "seed": 0}, pruner={"name": "none"})
    return parse_spec(raw)
