"""Property-based: every verb, on command lines generated from the shipped specs, a tiny RunConfig and a finished
tiny study (tests/fuzz/strategies.py), keeps the contract of tests/fuzz/contract.py.

The bounded run (`make test`) is derandomized with no example database: the same cases on every machine, so it
fails only when the code changed. `make fuzz` runs SWEEP_FUZZ_EXAMPLES examples per verb, random. Classes another
lane fixes are not generated until that lane is merged (tests/fuzz/pending.py). SWEEP_FUZZ_LOG=FILE appends
every case and its verdict as a JSON line; SWEEP_FUZZ_SURVEY=1 records violations there instead of failing, to
count them by class.
"""
from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from tests.fuzz.baseline import TINY_SPEC, WIDTH, run_doc
from tests.fuzz.contract import inside, run, violations
from tests.fuzz.pending import pending
from tests.fuzz.plans import SEED_PLAN, SEED_PLAN_ARGS
from tests.fuzz.strategies import Case, case_for

BOUNDED = {"init": 12, "inspect": 10, "coord-check": 3, "train": 10, "proxy": 6, "results": 10, "sql": 14,
           "export": 10, "compare": 10, "verify": 3, "transfer": 12, "launch": 6, "status": 8, "doctor": 2, "report": 5,
           "plan": 8, "verify-plan": 8}  # verify-plan: `sweep verify --plan`, dry (tests/fuzz/contract.py)
LONG = int(os.environ.get("SWEEP_FUZZ_EXAMPLES", "0"))  # examples per verb in `make fuzz`; 0: the bounded run


@pytest.fixture(scope="module")
def seed(tmp_path_factory) -> Path:
    """A folder as a user's would be after a sweep: the tiny study finished at width 16, one launched run and a plan
    `sweep plan` wrote (SEED_PLAN); each example starts from a copy of its `results`."""
    from sweep.cli import main
    from sweep.study.preflight import prepare
    from sweep.study.spec import load_spec
    from sweep.study.storage import open_storage
    from sweep.study.study import open_study
    from sweep.study.worker import run_worker

    folder = tmp_path_factory.mktemp("fuzz-seed")
    (folder / "results").mkdir()
    (folder / "spec.yaml").write_text(yaml.safe_dump(TINY_SPEC, sort_keys=False))
    (folder / "run.yaml").write_text(yaml.safe_dump(run_doc(), sort_keys=False))
    with inside(folder):
        job = prepare(load_spec(Path("spec.yaml")), width=WIDTH, parametrization=None, trials=None, storage=None,
                      password_env=None)
        open_study(job, open_storage(job.storage), create=True)
        assert run_worker(job) == TINY_SPEC["trials"]  # in this process: no worker to spawn
        with pytest.raises(SystemExit) as stop:
            sys.argv = ["sweep", "launch", "run.yaml"]
            main()
        assert stop.value.code == 0
        with pytest.raises(SystemExit) as stop:
            sys.argv = ["sweep", "plan", "spec.yaml", *SEED_PLAN_ARGS]
            main()
        assert stop.value.code == 1 and (folder / SEED_PLAN).is_file()  # the budget buys less than the goal
    return folder


def example_folder(seed: Path, parent: Path) -> Path:
    folder = Path(tempfile.mkdtemp(dir=parent))
    shutil.copytree(seed / "results", folder / "results", symlinks=True)
    return folder


def check(case: Case, seed: Path, parent: Path) -> None:
    folder = example_folder(seed, parent)
    start = time.monotonic()
    outcome = run(case, folder)
    seconds = time.monotonic() - start
    broken = violations(case, folder, outcome)
    if os.environ.get("SWEEP_FUZZ_LOG"):
        with open(os.environ["SWEEP_FUZZ_LOG"], "a") as log:
            log.write(json.dumps({"verb": case.verb, "classes": case.classes, "code": outcome.code,
                                  "broken": broken, "seconds": round(seconds, 1), "stderr": outcome.err[-300:],
                                  "case": repr(case)}) + "\n")
    shutil.rmtree(folder, ignore_errors=True)
    if os.environ.get("SWEEP_FUZZ_SURVEY") != "1":
        assert not broken, f"{case!r}\nstdout: {outcome.out[-2000:]}\nstderr: {outcome.err[-2000:]}\n{broken}"


@pytest.mark.parametrize("verb", sorted(BOUNDED))
def test_every_generated_command_line_exits_0_or_2_with_one_line_writes_only_its_outputs_and_leaks_no_secret(
        verb, seed, tmp_path):
    @settings(max_examples=LONG or BOUNDED[verb], derandomize=not LONG, database=None, deadline=None,
              suppress_health_check=list(HealthCheck), print_blob=bool(LONG))
    @given(st.data())
    def fuzz(data):
        case = data.draw(case_for(verb), label="case")
        assume(not pending(case.classes))
        check(case, seed, tmp_path)

    fuzz()
