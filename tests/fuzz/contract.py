"""The contract every verb keeps, whatever its command line: exit 0 (or 1, a verdict, where the verb has one),
or exit 2 with exactly one line on stderr (always, naming it, for a single-valued option given twice); never a
traceback or a hang; nothing created or changed outside what a success writes (the results root, the `--out` it
was given); the planted password in no output and no file.

Verbs run in this process (`sweep.cli.main` with its argv), in the example's own folder with SWEEP_ROOT=results.

`sweep plan` also: exit 1 (the budget buys less than the goal) ends with its one line naming the budget's flag or
--goal; on 0 or 1 a plan was written inside the root (its --out may not leave it) and `sweep verify --plan` reads it
back. `sweep verify --plan` runs dry: stopped where its first study would start (`dry`, as good as exit 0 and
held to the same writes), so nothing trains; a plan out of bounds (`plan:`) or no plan at all (`plan-path:`) is
refused, exit 2, before that.
"""
from __future__ import annotations

import contextlib
import io
import os
import signal
import sys
import traceback
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

from sweep.cli import main
from tests.fuzz.storage_urls import SECRET, SECRET_ENV, STORAGE_FILES
from tests.fuzz.strategies import Case

VERDICT_VERBS = {"coord-check", "doctor", "verify", "train", "launch", "proxy", "plan"}  # exit 1: an answer
ROOTED_OUT = {"plan"}  # their --out is refused outside the results root
REFUSED = ("plan:", "plan-path:")  # classes every case of which is refused (tests/fuzz/plans.py)
VERDICT_LINE = ("--share: ", "--flops: ", "--goal: ")  # how plan's one line on exit 1 starts
HANG_S = 600  # a command of this harness's tiny budgets that runs longer is stuck (a FIFO read, say)
SECRET_FORMS = [form.encode() for form in {SECRET, quote(SECRET, safe=""), quote(SECRET)}]


class Hang(Exception):
    pass


class WouldTrain(BaseException):  # not an Exception: nothing in the command catches it
    """Raised where a dry case's command would start its first study."""


@contextlib.contextmanager
def dry(case: Case):
    """For a dry case, `sweep verify`'s first study raises WouldTrain instead of running."""
    import sweep.verify.command as verify

    saved = verify.run_study

    def stop(job, *args, **kwargs):
        raise WouldTrain(job.study_name)

    verify.run_study = stop if case.dry else saved
    try:
        yield
    finally:
        verify.run_study = saved


@dataclass
class Outcome:
    code: object
    out: str
    err: str
    crash: str  # the traceback of an exception that escaped main, else ""
    changed: list[str]  # paths created, changed or removed under the example's folder


def snapshot(folder: Path) -> dict[str, tuple]:
    """Every path under `folder` (not following links), with its kind, size and modification time in ns."""
    tree = {}
    for top, dirs, files in os.walk(folder):
        for name in [*dirs, *files, ""]:
            path = Path(top, name)
            st = path.lstat()
            tree[str(path.relative_to(folder))] = (st.st_mode >> 12, st.st_size, st.st_mtime_ns)
    return tree


@contextlib.contextmanager
def inside(folder: Path):
    """cwd = `folder`, SWEEP_ROOT=results, the planted password in its variable; a hang raises Hang."""
    saved_env, saved_cwd, saved_argv = dict(os.environ), os.getcwd(), sys.argv
    os.environ.update({"SWEEP_ROOT": "results", SECRET_ENV: SECRET})
    os.chdir(folder)

    def hang(signum, frame):
        raise Hang(f"still running after {HANG_S} s")

    previous = signal.signal(signal.SIGALRM, hang)
    signal.alarm(HANG_S)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
        signal.signal(signal.SIGINT, signal.default_int_handler)  # whatever a command left
        os.chdir(saved_cwd)
        os.environ.clear()
        os.environ.update(saved_env)
        sys.argv = saved_argv


def run(case: Case, folder: Path) -> Outcome:
    argv = case.make(folder)
    before = snapshot(folder)
    out, err, crash, code = io.StringIO(), io.StringIO(), "", None
    with inside(folder), dry(case), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        sys.argv = ["sweep", *argv]
        try:
            main()
            code = 0
        except SystemExit as stop:
            code = stop.code
        except WouldTrain:
            code = "dry"
        except BaseException:  # noqa: BLE001 - anything else is a traceback on the user's screen
            crash = traceback.format_exc()
    after = snapshot(folder)
    changed = sorted(p for p in before.keys() | after.keys() if before.get(p) != after.get(p))
    return Outcome(code, out.getvalue(), err.getvalue(), crash, changed)


def allowed(case: Case, path: str) -> bool:
    """Whether a successful `case` may create or change `path` (relative to the example's folder)."""
    out = case.out if case.verb not in ROOTED_OUT else None
    places = ["results"] + ([out.rstrip("/")] if out else []) + (["studies"] if case.verb == "init" else [])
    storage = [STORAGE_FILES[c.removeprefix("url:")] for c in case.classes if c.removeprefix("url:") in STORAGE_FILES]
    return (any(path == p or path.startswith(p + "/") for p in places) or any(path.startswith(f) for f in storage)
            or ((out is not None or bool(storage) or case.verb == "init") and path == "."))


def secret_in(folder: Path, outcome: Outcome) -> list[str]:
    """Where the planted password is: `stdout`, `stderr`, or the changed files that hold it."""
    found = [name for name, text in (("stdout", outcome.out), ("stderr", outcome.err))
             if any(form.decode() in text for form in SECRET_FORMS)]
    for rel in outcome.changed:
        path = folder / rel
        if path.is_file() and not path.is_symlink() and path.stat().st_size < 50_000_000:
            data = path.read_bytes()
            found += [rel] if any(form in data for form in SECRET_FORMS) else []
    return found


def violations(case: Case, folder: Path, outcome: Outcome) -> list[str]:
    """What `outcome` breaks of the contract; empty when it keeps it."""
    o, broken = outcome, []
    if o.crash:
        return ["traceback: " + o.crash.strip().splitlines()[-1][:300]]
    if "Traceback (most recent call last)" in o.out + o.err:
        broken.append("traceback printed")
    codes = {0, 2} | ({1} if case.verb in VERDICT_VERBS else set()) | ({"dry"} if case.dry else set())
    if o.code not in codes:
        broken.append(f"exit code {o.code!r}: {o.err.strip()[-300:]!r}")
    refused = [c for c in case.classes if c.startswith(REFUSED)]
    if refused and o.code != 2:
        broken.append(f"{refused[0]} not refused: exit {o.code!r}")
    if o.code == 2:
        if not (o.err.startswith("error: ") and o.err.count("\n") == 1 and o.err.endswith("\n")):
            broken.append(f"stderr is not one line: {o.err[-300:]!r}")
        if o.changed:
            broken.append(f"refused but wrote: {o.changed[:5]}")
    elif o.code in (0, 1, "dry"):
        outside = [p for p in o.changed if not allowed(case, p)]
        if outside:
            broken.append(f"wrote outside the results root and --out: {outside[:5]}")
        if case.verb == "plan" and "--help" not in case.argv:  # the help, shown whatever else the line says
            broken += planned(folder, o)
    twice = [c.removeprefix("flag:twice:") for c in case.classes if c.startswith("flag:twice:")]
    if twice and o.code != 2:
        broken.append(f"{twice[0]} given twice, not refused: exit {o.code!r}")
    elif twice and not {"flag:unknown", "flag:drop"} & set(case.classes) and f"{twice[0]}" not in o.err:
        broken.append(f"{twice[0]} given twice, refused without naming it: {o.err.strip()[-300:]!r}")
    leaks = secret_in(folder, o)
    if leaks:
        broken.append(f"the password is in: {leaks[:5]}")
    return broken


def planned(folder: Path, outcome: Outcome) -> list[str]:
    """What a `sweep plan` that exited 0 or 1 breaks: no plan written, a plan `sweep verify --plan` refuses, or
    (exit 1) no line naming the budget's flag or the goal at the end."""
    from sweep.errors import InputError
    from sweep.forecast import planfile
    from sweep.paths import is_plan

    broken = []
    written = [p for p in outcome.changed if (folder / p).is_file() and is_plan(folder / p)]
    if not written:
        broken.append(f"exit {outcome.code}: no plan written")
    for rel in written:
        try:
            planfile.read(folder / rel, folder / "results")
        except InputError as err:
            broken.append(f"the plan it wrote is refused by verify --plan: {err}")
    last = (outcome.out.strip().splitlines() or [""])[-1]
    if outcome.code == 1 and not last.startswith(VERDICT_LINE):
        broken.append(f"exit 1 without its one line naming the budget: {last[-300:]!r}")
    return broken
