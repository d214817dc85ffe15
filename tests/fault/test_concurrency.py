"""Concurrent workers on one journal-storage study: the study ends with exactly the requested trials, each
trained once (one run folder and one curve per counted trial, each step once), and a trial that lost the
race for the last places never trains.

K local workers of one `sweep proxy --workers K`, or K `sweep proxy` processes side by side. Elsewhere:
two processes on a journal study (tests/test_sweep_proxy.py), two workers on PostgreSQL
(tests/test_sweep_proxy.py), a SLURM array of four tasks (tests/test_backend_slurm.py).
"""
import subprocess
from pathlib import Path

import pytest
from optuna.trial import TrialState

from sweep.study.liveness import WORKER
from sweep.study.preflight import prepare
from sweep.study.spec import load_spec
from sweep.study.storage import open_storage
from sweep.study.study import claim_once, counts, open_study, seed_by_first_trial
from tests.fault.files import assert_whole_files, curve_steps
from tests.fault.kill import fault_repeats
from tests.rendezvous import GATED, REPO, rendezvous_env
from tests.sweep_helpers import TINY_SPEC, load, sweep_cmd, sweep_env, write_spec

LOGGED = [1, 5, 10, 15, 20]  # the tiny spec's logged steps


def run_side_by_side(root: Path, commands: list[list], peers: int) -> None:
    """Run `sweep …` commands at the same time, each as its own process; all must succeed. The first step of
    each of the `peers` workers waits for the others' (tests/rendezvous.py): each trains at least one trial."""
    env = sweep_env(root, PYTHONPATH=str(REPO), **rendezvous_env(root / "rendezvous", peers))
    procs = [subprocess.Popen(sweep_cmd(*command), env=env, cwd=root, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for command in commands]
    for proc in procs:
        out, err = proc.communicate(timeout=400)
        assert proc.returncode == 0, err


def assert_each_trial_once(root: Path, storage: str, n_trials: int, peers: int) -> None:
    study = load(root, storage=storage)
    trials = study.get_trials(deepcopy=False)
    ran = [t for t in trials if counts(t)]
    assert len(ran) == n_trials and all(t.state == TrialState.COMPLETE for t in ran)
    for t in trials:
        if not counts(t):  # lost the race for the last places: failed before it trained
            assert t.user_attrs["reason"].startswith("surplus") and "runs" not in t.user_attrs, t
    runs = sorted(Path(t.user_attrs["runs"][0]).name for t in ran)
    assert len(set(runs)) == n_trials  # one run per trial
    assert sorted(p.name for p in (root / "tiny" / "runs").iterdir()) == runs  # and nothing else trained
    curves = sorted(p.name.removeprefix("run=") for p in (root / "tiny" / "curves").glob("study=*/kind=*/run=*"))
    assert curves == runs
    for t in ran:
        assert curve_steps(root / t.user_attrs["curves"]) == LOGGED  # each step once: no two workers wrote a curve
    assert len({tuple(sorted(t.params.items())) for t in ran}) == n_trials  # no point trained twice
    workers = {t.system_attrs[WORKER]["pid"] for t in ran}
    assert len(workers) == peers, "the trials ran one after another in one worker"
    assert any(a.datetime_start < b.datetime_complete and b.datetime_start < a.datetime_complete
               for a in ran for b in ran if a.system_attrs[WORKER] != b.system_attrs[WORKER])  # at the same time
    assert_whole_files(root / "tiny")


def commands(spec: Path, journal: str, form: str, k: int) -> list[list]:
    """One `sweep proxy --workers K`, or K `sweep proxy` processes."""
    command = ["proxy", spec, "--width", "16", "--storage", journal]
    return [[*command, "--workers", k]] if form == "workers" else [command] * k


@pytest.mark.parametrize("form, k", fault_repeats([("workers", 2)], [("workers", 2), ("workers", 4), ("processes", 4)]))
def test_k_workers_on_one_journal_study_train_each_requested_trial_once(tmp_path, form, k):
    n_trials = 2 * k + 1  # an odd count: the last place is raced for
    spec = write_spec(tmp_path, trials=n_trials, run={"model": {**TINY_SPEC["run"]["model"], "name": GATED}})
    journal = f"journal:{tmp_path / 'tiny.log'}"
    run_side_by_side(tmp_path, commands(spec, journal, form, k), peers=k)
    assert_each_trial_once(tmp_path, journal, n_trials, peers=k)


def test_workers_that_open_the_study_at_the_same_count_sample_different_points(tmp_path):
    """Processes started together open the study at the same trial count; with the same worker index (one
    `sweep proxy` each) a sampler seeded by that alone replays the other's random points, and the same
    point is trained twice (the 4-process form above catches it end to end when two processes open the study
    at the same count). Each worker reseeds by its first trial."""
    job = prepare(load_spec(write_spec(tmp_path, trials=4)), width=16, parametrization=None, trials=None,
                  storage=f"journal:{tmp_path / 'tiny.log'}", password_env=None, timeout_min=None, root=str(tmp_path))
    store = open_storage(job.storage)
    studies = [open_study(job, store, create=True), open_study(job, store, create=False)]  # two processes' views
    points = []
    for study in studies:
        trial = claim_once(study, job.n_trials)
        seed_by_first_trial(study, job, trial.number)  # what each worker does before its first trial samples
        points.append(job.spec.space().suggest(trial))
    assert points[0] != points[1]
