"""Where results go, and what may be read or written there: the path rules every command shares.

- The results root is the given root, else $SWEEP_ROOT, else ./studies; a root that names a file is refused. A
  RunConfig a user hands a command (`train`, `launch`, `doctor`) writes under its `output.root`, else under that same
  root (`load_run_config`): `sweep launch RUN.yaml` with no output.root wrote to ./studies whatever $SWEEP_ROOT said.
- A sweep's name (the folder ROOT/NAME) is a NAME (trainer.config): never `.`, `..`, hidden or overlong. A name read
  back from a file or a storage (an Optuna study's name, launch.json's run and study) is input too: `stored_name`.
- A path the tool stores (a trial's `runs` and `curves`, a launch record's folders) is read under the root it is
  read from (`stored_path`): written relative to the root, or, written before, absolute under the root it was
  written in; a root copied or moved elsewhere reads its own files, never the old root's. So does a RunConfig
  file under the root whose `output.root` is the old root (`load_run_config`): its run resumes in the copy.
- Nothing read or written under the root may leave it once symlinks are resolved (`inside_root`): a run's
  `config.yaml` linked to `~/.ssh/id_rsa` is refused, not printed; so is a file a user names under the root
  (`named_inside`: a RunConfig to launch), which may lie anywhere else. A plan is read inside the root only
  (sweep/forecast/planfile.py `inside`), where `sweep plan` writes it.
- An output file (`--out`) is checked before any work: not an existing folder, its parent a writable folder
  (`check_writable`, shared with the trainer's own folders); and it replaces only what the same command wrote
  there before, never the tool's own state (`check_replaceable`). Found by an outside tester: `sweep plan --out
  studies/NAME/optuna.db` replaced the sweep's storage, `--out SPEC` the spec it planned from (`sweep transfer`
  alone had this rule). An existing file is replaced only when it carries the mark of what the command writes: the
  key only its output holds (a plan's `plan`, a transferred RunConfig's `provenance.created_by`) or its format's
  first bytes (the report's page, a PNG, Parquet). `sql`'s table and `recipe`'s text have no mark of their own:
  they replace a file unless it is the tool's own state or input (`tool_state`).
- A JSON object the tool wrote there and reads back (`read_json`) is bad input when it is not one: unreadable,
  not JSON, nested past Python's recursion limit, or another type.
"""
from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable
from pathlib import Path

import yaml
from pydantic import ValidationError

from sweep.errors import InputError
from trainer import folders
from trainer.checkpoint_names import FOLDER
from trainer.config import ConfigError, OutputConfig, RunConfig, check_name, one_line
from trainer.folders import check_path_length, check_writable

STORED_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9._-]{0,254}")  # a name read back: one folder's worth
STORED_MODEL = re.compile(rf"{STORED_NAME.pattern}(:[A-Za-z_][A-Za-z0-9_]{{0,254}})?")  # zoo name or module:function

ROOM = 1024  # bytes below the root: a sweep's name, a run's name and the files in its folder


def results_root(root: str | None = None) -> Path:
    """Where studies' results go: the given root, else $SWEEP_ROOT, else ./studies (made when first written)."""
    path = Path(root or os.environ.get("SWEEP_ROOT") or "studies")
    # the root and a study's files below it (NAME/runs/RUN/checkpoints/…: up to ~700 bytes) within PATH_MAX
    check_path_length(path, "results root ($SWEEP_ROOT)", room=ROOM)
    if path.exists() and not path.is_dir():
        raise InputError(f"results root ($SWEEP_ROOT): {path} is not a folder")
    return path


def load_run_config(path: Path) -> RunConfig:
    """The RunConfig in `path`, writing under its `output.root` if it names one, else under `results_root()`; a
    `path` under the results root is read only inside it (`named_inside`) and writes under it when its output.root
    lies outside it: that is the root it was written in (a transferred config, a run's config.yaml), and a root
    copied or moved elsewhere resumes its runs in the copy, not in the original."""
    root = results_root()
    cfg = RunConfig.load(named_inside(path, root, "CONFIG"))
    moved = lies_under(path, root) and not lies_under(Path(cfg.output.root), root)
    if "root" not in cfg.output.model_fields_set or moved:
        try:  # the root reaches folders and a SLURM script's lines: the config's own rule for it
            output = OutputConfig.model_validate({**cfg.output.model_dump(), "root": str(root)})
        except ValidationError as err:
            raise InputError(f"results root ($SWEEP_ROOT): {one_line(err, OutputConfig)}") from None
        cfg = cfg.model_copy(update={"output": output})
    return kept_inside_root(cfg)


def kept_inside_root(cfg: RunConfig) -> RunConfig:
    """`cfg`, whose run's folders (ROOT/STUDY/runs/RUN, its curves and events) stay inside its root once links are
    resolved: ROOT/STUDY/runs linked elsewhere had `sweep launch` write the run's checkpoints and result there."""
    root = Path(cfg.output.root)
    for folder, field in ((cfg.run_dir(), "output.run"), (cfg.curves_root(), "output.study"),
                          (cfg.events_root(), "output.study")):
        inside_root(folder, root, field)
    return cfg


def sweep_name(name: str, field: str) -> str:
    """`name` if it can name a sweep's folder under the root, else an InputError naming `field`."""
    try:
        return check_name(name)
    except ValueError as err:
        raise InputError(f"{field}: {err}") from None


def stored_name(value: object, field: str, source: object) -> str:
    """A name read back from `source` (a storage, a run's launch.json) if it can name one folder (NAME's letters,
    at most 255 of them: a study name is a sweep's NAME with a suffix), else an InputError naming the field and
    where it was read. Such names build folders and pages, so a stored `../../x` or `<script>` is refused exactly as
    the same text given on the command line is."""
    if isinstance(value, str) and STORED_NAME.fullmatch(value):
        return value
    shown = repr(value) if len(repr(value)) <= 60 else repr(value)[:60] + "…"
    raise InputError(f"{field}: {source} holds the name {shown}, not 1 to 255 letters, digits, '.', '_' or '-' "
                     "(not starting with '.' or '-'); refused")


def stored_model(attrs: dict, source: object) -> str:
    """The model a study's stored spec names (`spec.run.model.name`: a zoo name or `module:function`; "gpt" when the
    spec names none), else an InputError: it names a folder under the root and a command on a page."""
    value: object = attrs.get("spec", {})
    for key in ("run", "model", "name"):
        value = value.get(key, "gpt" if key == "name" else {}) if isinstance(value, dict) else None
    if isinstance(value, str) and STORED_MODEL.fullmatch(value):
        return value
    shown = repr(value) if len(repr(value)) <= 60 else repr(value)[:60] + "…"
    raise InputError(f"study spec.run.model.name: {source} holds {shown}, not a zoo name or module:function; refused")


def inside_root(path: Path, root: Path, field: str) -> Path:
    """The root rule (`trainer.folders.inside_root`) as an InputError: `path` resolved, refused unless inside `root`."""
    try:
        return folders.inside_root(path, root, field)
    except ConfigError as err:
        raise InputError(str(err)) from None


def lies_under(path: Path, root: Path) -> bool:
    """Whether `path` is `root` or below it as written (absolute, `..` folded; no link followed, nothing stat'ed)."""
    return Path(os.path.abspath(path)).is_relative_to(Path(os.path.abspath(root)))


def named_inside(path: Path, root: Path, field: str) -> Path:
    """`path`, a file the user named: anywhere, but one under the results `root` (as typed) stays inside it once links
    are resolved (`inside_root`): ROOT/NAME/transfer/w64.yaml replaced by a link to a file elsewhere is refused
    before it is read (`sweep launch` trained it), as a run's own files are."""
    if lies_under(path, root):
        inside_root(path, root, field)
    return path


BELOW_ROOT = {"runs": 3, "checkpoints": 4, "curves": 5}  # STUDY/runs/RUN, …/RUN/checkpoints, STUDY/curves/s=/k=/run=


def stored_path(value: object, root: Path, kind: str) -> Path:
    """Where a path the tool stored (a trial's `runs` and `curves`, a launch record's) lies under the results `root`
    it is read from, found from its text alone (nothing is stat'ed): relative (as written now), below `root`;
    absolute (as written before), itself when it lies under `root`, else its last parts below the root it was
    written in (STUDY/…, `BELOW_ROOT[kind]` of them) below `root`. A root copied or moved elsewhere then reads its
    own files and never stats the old root's; one the copy lacks is missing. Text that is no path, or a relative
    one leading out (`..`), is an InputError; links are the reader's `inside_root` to refuse."""
    if not isinstance(value, str) or not value or "\0" in value:
        raise InputError(f"{kind}: the stored {type(value).__name__} {value!r:.60} is not a path; refused")
    top, path = Path(os.path.abspath(root)), Path(os.path.normpath(value))
    if not path.is_absolute():
        path = Path(os.path.normpath(top / path))
    elif not path.is_relative_to(top):
        path = top.joinpath(*path.parts[1:][-BELOW_ROOT[kind]:])
    if not path.is_relative_to(top):
        raise InputError(f"{kind}: the stored path {value!r:.60} leads out of the results root {top}; refused")
    return path


def default_storage(root: Path, name: str) -> Path:
    """ROOT/NAME/optuna.db, the sweep's default storage, resolved: refused when it (or its folder) is a link out of
    the root, so no command reads or writes another file through it."""
    return inside_root(root / name / "optuna.db", root, "storage")


def read_json(path: Path, field: str) -> dict | None:
    """The JSON object in `path`, None when there is no such file; anything else is an InputError naming it."""
    if not path.is_file():
        return None
    try:
        value = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, ValueError, RecursionError) as err:
        raise InputError(f"{field}: {path} is unreadable ({type(err).__name__}); it is a file the tool writes") \
            from None
    if not isinstance(value, dict):
        raise InputError(f"{field}: {path} holds a {type(value).__name__}, not the object the tool writes")
    return value


def kept_inside(paths: Iterable[Path], root: Path, field: str) -> list[Path]:
    """`paths` as given, sorted, after `inside_root` has checked each."""
    paths = sorted(paths)
    for path in paths:
        inside_root(path, root, field)
    return paths


def check_out_file(out: Path | None, field: str = "--out") -> None:
    """An output file named on the command line, checked before the command works: not a folder (nor a
    FIFO or device), its parent a writable folder."""
    if out is None:
        return
    if out.exists() and not out.is_file():
        raise InputError(f"{field}: {out} is a folder or a special file; name a file to write")
    check_writable(out.parent, field)


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


RECORD = "launch.json"  # in a launched run's folder: where it runs, for `sweep status` (sweep/runs/record.py)
MARKS = {  # command: (what it writes, whether an existing file is one)
    "plan": ("a plan `sweep plan` wrote", is_plan),
    "transfer": ("a config `sweep transfer` wrote", is_transferred),
    "report": ("a page `sweep report` wrote", is_report),
    "compare": ("a PNG", lambda path: head(path).startswith(PNG) and not tool_state(path)),
    "doctor": ("a Parquet table", lambda path: head(path).startswith(PARQUET) and not tool_state(path)),
}
UNMARKED = ("a file this command may replace: it is the tool's own state or input (a storage, a curve, a "
            "checkpoint, a spec, a RunConfig or a plan)", lambda path: not tool_state(path))


def is_run_folder(folder: Path) -> bool:
    """A run's folder: a launch's record, a trainer's result or checkpoints in it (trainer/checkpoint_names.py)."""
    return any((folder / name).exists() for name in (RECORD, "result.json", FOLDER))


def check_replaceable(out: Path, command: str) -> None:
    """Refuse (InputError, before the command works) an `--out` inside a run's folder (new or not), and an existing
    `--out` file the command did not write, an empty one or a dangling link too (neither is its output)."""
    run = next((folder for folder in list(out.parents)[:3] if is_run_folder(folder)), None)
    if run is not None:  # an outside tester's transfer replaced a launched run's config.yaml
        raise InputError(f"--out: {out} is inside a run's folder ({run}); nothing is written there (name a file "
                         "elsewhere: launching it makes a run of its own)")
    if not (out.exists() or out.is_symlink()):
        return
    what, replaceable = MARKS.get(command, UNMARKED)
    if not out.is_file() or not replaceable(out):
        raise InputError(f"--out: {out} exists and is not {what}; it is not replaced (name a new file, or remove "
                         "this one first)")


def curve_folder(cfg: RunConfig) -> Path:
    """A run's partition of the curve store: CURVES/study=S/kind=K/run=ID."""
    return cfg.curves_root() / f"study={cfg.output.study}" / f"kind={cfg.output.kind}" / f"run={cfg.run_id()}"
