"""Every flag's value checked before a command starts, for what no single flag's type catches."""
from __future__ import annotations

import functools
import inspect
import math
from collections.abc import Callable
from pathlib import Path

import typer

from sweep.errors import InputError
from sweep.paths import check_out_file, check_replaceable, check_writable
from sweep.study.bounds import check_flag, shown
from trainer.folders import check_path_length

NAMED_OR_PATH = {"study", "refs", "name"}  # a sweep's name or its spec, run ids, an example: names a path too
OUT_FOLDER = {"coord-check", "export"}  # their --out is a folder; `init` takes a file or a folder and checks its own


def checked_flags(command: Callable, name: str) -> Callable:
    """`command` refusing, before it starts, what no single flag's type catches (a nan or infinite float is refused
    as it is parsed: `finite_floats`): a number past its kind's bound (sweep/study/bounds.py: `--trials 10^23`,
    `--workers 10^6`, `inspect --width 10^9`), a path past the file system's name or length limits (ENAMETOOLONG),
    and an `--out` that cannot be written (an existing folder where a file goes, a file in the way of a folder, a
    read-only place) or must not be (a file the command did not write: sweep/paths.py's `check_replaceable`)."""
    shown = {flag: flag.upper() if isinstance(p.default, typer.models.ArgumentInfo) else f"--{flag.replace('_', '-')}"
             for flag, p in inspect.signature(command).parameters.items()}

    @functools.wraps(command)
    def checked(**kwargs):
        for flag, value in kwargs.items():
            check_flag(name, flag, shown[flag], value)
            if isinstance(value, Path) or flag in NAMED_OR_PATH and isinstance(value, str):
                check_path_length(Path(value), shown[flag])
            if flag in NAMED_OR_PATH and isinstance(value, list):
                for item in value:
                    check_path_length(Path(item), shown[flag])
        out = kwargs.get("out")
        if out is not None and name != "init":
            check_writable(out, "--out") if name in OUT_FOLDER else check_out_file(out)
            if name not in OUT_FOLDER:
                check_replaceable(out, name)
        return command(**kwargs)

    return checked


def finite_floats(params: list, given: dict) -> None:
    """Every float flag's value as typed (`given`: click's parser's, before any type or range is checked) finite:
    `--timeout nan` and `--mem inf` parse as floats, and typer's range check met a nan or infinity first, so
    `--device-memory nan` read "≤ 1048576", a bound the value never passed. The line says what is allowed."""
    for param in params:
        if param.name not in given or not is_float(param):
            continue
        typed = given[param.name]
        for value in typed if isinstance(typed, list | tuple) else [typed]:
            try:
                number = float(value)
            except (TypeError, ValueError):
                continue  # not a number: the type's own line
            if not math.isfinite(number):
                raise InputError(f"{param.opts[0]}: must be a finite number{allowed_range(param)}, got {value}")


def is_float(param) -> bool:
    """A float option: typer ≥ 0.26 checks it by its annotation (pydantic), older typer by click's float type."""
    kind = getattr(param, "type_descriptor", None)
    if kind is not None:
        return kind.annotation is float
    return getattr(getattr(param, "type", None), "name", "").startswith("float")


def allowed_range(param) -> str:
    low, high = getattr(param, "min", None), getattr(param, "max", None)
    if low is not None and high is not None:
        return f" from {shown(low)} to {shown(high)}"
    return f" of at least {shown(low)}" if low is not None else f" of at most {shown(high)}" if high is not None else ""


def whole_number(value: float | None, flag: str) -> int | None:
    """A count typed as a float (`--tokens 26e9`, as `sweep plan` takes it) as an int; one that is not whole is refused
    (found by an outside tester: `transfer --tokens 26e9` read "unable to parse string as an integer")."""
    if value is None:
        return None
    if value != int(value):
        raise InputError(f"{flag}: a whole number (e.g. 26e9), got {value:g}")
    return int(value)
