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
from sweep.study.bounds import check_flag
from trainer.folders import check_path_length

NAMED_OR_PATH = {"study", "refs", "name"}  # a sweep's name or its spec, run ids, an example: names a path too
OUT_FOLDER = {"coord-check", "export"}  # their --out is a folder; `init` takes a file or a folder and checks its own


def checked_flags(command: Callable, name: str) -> Callable:
    """`command` refusing, before it starts, what no single flag's type catches: a nan or infinite float
    (`--timeout nan`, `--mem inf`: click parses both, and `min=0` lets inf through), a number past its kind's
    bound (sweep/study/bounds.py: `--trials 10^23`, `--workers 10^6`, `inspect --width 10^9`), a path past the
    file system's name or length limits (ENAMETOOLONG), and an `--out` that cannot be written (an existing folder
    where a file goes, a file in the way of a folder, a read-only place) or must not be (a file the command did not
    write: sweep/paths.py's `check_replaceable`)."""
    shown = {flag: flag.upper() if isinstance(p.default, typer.models.ArgumentInfo) else f"--{flag.replace('_', '-')}"
             for flag, p in inspect.signature(command).parameters.items()}

    @functools.wraps(command)
    def checked(**kwargs):
        for flag, value in kwargs.items():
            if isinstance(value, float) and not math.isfinite(value):
                raise InputError(f"{shown[flag]}: must be a finite number, got {value}")
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
