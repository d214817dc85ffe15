"""What an `--out` file may replace: what the same command wrote there before, never the tool's own state.

Found by an outside tester: `sweep plan --out studies/NAME/optuna.db` replaced the sweep's storage (every trial
lost), `--out SPEC` the spec it planned from (`sweep transfer` alone had this rule). An existing file is replaced
only when it carries the mark of what the command writes: the key only its output holds (a plan's `plan`, a
transferred RunConfig's `provenance.created_by`) or its format's first bytes (the report's page, a PNG, Parquet).
`sql`'s table and `recipe`'s text have no mark of their own: they replace a file unless it is the tool's own state
or input, a SQLite database, a curve store's Parquet part, a checkpoint, or a spec, RunConfig or plan (YAML or
JSON).
"""
from __future__ import annotations

import re
from pathlib import Path

import yaml

from sweep.errors import InputError

HEAD = 4096  # bytes read to recognise a format
MAX_MAPPING = 1 << 20  # a larger file is no spec, plan or RunConfig this tool writes
SQLITE, PARQUET, PNG = b"SQLite format 3\x00", b"PAR1", b"\x89PNG\r\n\x1a\n"
STATE_NAME = re.compile(r"part-\d+-\d+\.parquet|step-\d{9}(\.pt)?|optuna\.db(-journal|-wal|-shm)?")


def head(path: Path) -> bytes:
    try:
        with open(path, "rb") as f:
            return f.read(HEAD)
    except OSError:
        return b""


def mapping(path: Path) -> dict:
    """The file as a YAML (or JSON) mapping; {} for anything else."""
    try:
        if path.stat().st_size > MAX_MAPPING:
            return {}
        value = yaml.safe_load(path.read_text())
    except (OSError, UnicodeDecodeError, yaml.YAMLError, RecursionError):
        return {}
    return value if isinstance(value, dict) else {}


def is_plan(path: Path) -> bool:
    found = mapping(path)
    return "plan" in found and "ladders" in found


def is_transferred(path: Path) -> bool:
    created = (mapping(path).get("provenance") or {}).get("created_by")
    return isinstance(created, str) and created.startswith("sweep transfer")


def is_report(path: Path) -> bool:
    start = head(path)
    return start.lower().startswith(b"<!doctype html") and "μP sweep report".encode() in start


def tool_state(path: Path) -> bool:
    """A file the tool keeps or reads: its storage, a curve part, a checkpoint, a spec, a RunConfig or a plan."""
    start = head(path)
    if start.startswith(SQLITE) or STATE_NAME.fullmatch(path.name):
        return True
    found = mapping(path) if not start.startswith((PARQUET, PNG)) else {}
    return bool({"search", "run"} <= found.keys() or {"model", "optimizer"} <= found.keys() or "plan" in found)


MARKS = {  # command: (what it writes, whether an existing file is one)
    "plan": ("a plan `sweep plan` wrote", is_plan),
    "transfer": ("a config `sweep transfer` wrote", is_transferred),
    "report": ("a page `sweep report` wrote", is_report),
    "compare": ("a PNG", lambda path: head(path).startswith(PNG) and not tool_state(path)),
    "doctor": ("a Parquet table", lambda path: head(path).startswith(PARQUET) and not tool_state(path)),
}
UNMARKED = ("a file this command may replace: it is the tool's own state or input (a storage, a curve, a "
            "checkpoint, a spec, a RunConfig or a plan)", lambda path: not tool_state(path))


def check_replaceable(out: Path, command: str) -> None:
    """Refuse (InputError, before the command works) an existing `--out` file the command did not write, an empty
    one or a dangling link too (neither is its output)."""
    if not (out.exists() or out.is_symlink()):
        return
    what, replaceable = MARKS.get(command, UNMARKED)
    if not out.is_file() or not replaceable(out):
        raise InputError(f"--out: {out} exists and is not {what}; it is not replaced (name a new file, or remove "
                         "this one first)")
