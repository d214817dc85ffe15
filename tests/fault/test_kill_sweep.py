"""kill -9 of `sweep proxy` at seeded moments, then the same command: every trial COMPLETE before the kill
is kept as it was, none is counted twice, no torn Parquet part, YAML, JSON or checkpoint is left where a
reader looks, and the study ends with exactly the requested count of COMPLETE trials.

The moments (each seeded: which trial, then a delay into it or which of its writes):
- inside a trial: SIGKILL of the `sweep proxy` process alone (its worker dies with it), a random
  fraction (5-50 %) of the previous trial's length after the trial started;
- during a storage write: SIGKILL of the whole command the moment the n-th write since the trial
  started opens SQLite's rollback journal (`optuna.db-journal`, there only while a write
  transaction is open) or, in the full form, takes the journal storage's lock file (there only
  while a journal write is under way);
- during a Parquet curve write: SIGKILL the moment the trial's n-th temp part (`.part-….tmp`,
  renamed when whole) appears.
For the writes, the command is stopped (SIGSTOP) at the event and killed only while the file is still
there; a write that ended first is let go on, and the next one is the moment.
Whether a kill landed inside the write is read from what it left: the journal, lock or temp file
is still there. A kill that missed (the command ended first) fails the test.
"""
import random
import time
from pathlib import Path

import pytest
from optuna.trial import TrialState

from sweep.study.study import counts
from tests.fault.files import assert_whole_files, curve_steps
from tests.fault.kill import fault_repeats, kill_on_create, running, wait_gone
from tests.sweep_helpers import load, run_sweep, write_spec

TRIALS = 3
RUN = {"steps": 40, "log_every": 5, "eval": {"every": 5}, "checkpoint": {"every": 10, "keep": 2}}
LOGGED = [1, *range(5, 41, 5)]
PARTS_PER_TRIAL = 4  # a part per checkpoint: steps 1-10, 11-20, 21-30, 31-40
WRITES_PER_TRIAL = 12  # a trial makes about 20 storage writes: params, attributes, 8 reports, heartbeats, tell


def started(root: Path, trial: int, proc, timeout: float = 120) -> float:
    """Wait until trial `trial` (of the first attempt) has begun training (its run folder exists); the time then."""
    folder = root / "tiny" / "runs" / f"w16-mup-t{trial:05d}-s0"
    deadline = time.monotonic() + timeout
    while not folder.exists():
        assert proc.poll() is None, f"sweep proxy ended before trial {trial} started: {proc.stderr.read()}"
        assert time.monotonic() < deadline, f"trial {trial} did not start"
        time.sleep(0.02)
    return time.monotonic()


def kill_inside_trial(proc, root: Path, storage: str | None, rng: random.Random, length: float) -> bool:
    time.sleep(rng.uniform(0.05, 0.5) * length)
    proc.kill()  # the command alone: its worker gets SIGKILL from the kernel when it dies
    proc.wait()
    wait_gone(proc.pid)
    return any(t.state == TrialState.RUNNING for t in load(root, storage=storage).trials)


def kill_in_storage_write(proc, root: Path, storage: str | None, rng: random.Random, length: float) -> bool:
    folder, name = (root / "store", "tiny.log.lock") if storage else (root / "tiny", "optuna.db-journal")
    hit = kill_on_create(proc, folder, f"*/{name}", timeout=60, nth=rng.randint(1, WRITES_PER_TRIAL),
                         inside=left)
    assert hit is not None, "no storage write began before the sweep ended"
    return left(hit)


def left(path: Path) -> bool:
    """The file is still there (a lock file may be a symlink to nowhere)."""
    return path.is_symlink() or path.exists()


def kill_in_parquet_write(proc, root: Path, storage: str | None, rng: random.Random, length: float) -> bool:
    nth = rng.randint(1, PARTS_PER_TRIAL)
    hit = kill_on_create(proc, root / "tiny" / "curves", "*/.part-*.tmp", timeout=60, nth=nth, inside=left)
    assert hit is not None, "no curve part was written before the sweep ended"
    return left(hit)


MOMENTS = {"trial": kill_inside_trial, "storage": kill_in_storage_write, "parquet": kill_in_parquet_write}
CASES = [(moment, seed, None) for moment in MOMENTS for seed in range(fault_repeats(1, 5))]
CASES += [("storage", seed, "journal") for seed in range(fault_repeats(0, 3))]  # each rerun waits out a 30 s stale lock


@pytest.mark.parametrize("moment, seed, storage", CASES)
def test_kill_9_of_sweep_proxy_then_the_same_command_keeps_every_finished_trial_and_counts_each_once(
        tmp_path, moment, seed, storage):
    rng = random.Random(seed)
    spec = write_spec(tmp_path, trials=TRIALS, run=RUN)
    url = f"journal:{tmp_path / 'store' / 'tiny.log'}" if storage else None
    command = ["proxy", spec, "--width", "16", *(["--storage", url] if url else [])]
    with running(tmp_path, *command) as proc:
        trial = rng.randrange(1, TRIALS)  # a later trial: at least one COMPLETE one is there to be kept
        previous = started(tmp_path, trial - 1, proc)
        length = started(tmp_path, trial, proc) - previous  # the trial before, start to start: the load decides it
        landed = MOMENTS[moment](proc, tmp_path, url, rng, length)
        wait_gone(proc.pid)
    assert landed, f"the kill missed its moment ({moment}): no trial running, or the write had ended"

    before = {t.number: (t.params, t.value) for t in load(tmp_path, storage=url).trials
              if t.state == TrialState.COMPLETE}
    assert before, "no trial had completed before the kill"
    again = run_sweep(tmp_path, *command)
    assert again.returncode == 0, again.stderr
    assert f"{TRIALS}/{TRIALS} trials counted" in again.stdout

    study = load(tmp_path, storage=url)
    trials = study.get_trials(deepcopy=False)
    complete = [t for t in trials if t.state == TrialState.COMPLETE]
    assert len(complete) == sum(map(counts, trials)) == TRIALS
    for number, (params, value) in before.items():  # kept as they were, not run again
        assert trials[number].state == TrialState.COMPLETE
        assert (trials[number].params, trials[number].value) == (params, value)
    origins = [t.user_attrs.get("retry_of", t.number) for t in complete]
    assert len(set(origins)) == TRIALS  # no trial counted twice (a dead one and its retry)
    for t in trials:
        if t not in complete:
            assert t.state == TrialState.FAIL and t.user_attrs["reason"].startswith("worker lost"), t
    runs = sorted(Path(t.user_attrs["runs"][0]).name for t in complete)
    assert sorted(p.name for p in (tmp_path / "tiny" / "runs").iterdir()) == runs  # nothing else trained
    for t in complete:  # each step once, the whole curve
        assert curve_steps(tmp_path / t.user_attrs["curves"]) == LOGGED
    assert len(assert_whole_files(tmp_path / "tiny")) <= 1  # at most the killed write's hidden temp file
