"""One Optuna study per (spec, width, parametrization), and the requested trial count, exact across workers.

A trial counts toward the requested number when it is COMPLETE or PRUNED (a diverged run is
pruned with its reason), or FAILED by an error of its own run (user attr `error`: a bug would fail
again, so it is not retried). A trial failed because its worker died is retried, and a surplus
trial (below) never ran: neither counts.

Exactness without a lock, on any storage: a worker asks for a trial only while the counted and
running trials are fewer than the target; after asking, it counts the trials numbered before its
own that count or run. If they already reach the target, another worker took the last place at
the same moment: the new trial is failed as `surplus` before it trains. Numbers are given in
creation order by every Optuna storage, so exactly one of two racing workers sees the other.
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from importlib.metadata import version

import numpy as np
import optuna
from optuna.trial import FrozenTrial, TrialState

from sweep.errors import InputError, held
from sweep.study.liveness import retry_stale
from sweep.study.pruners import make_pruner
from sweep.study.samplers import grid_points, make_sampler
from sweep.study.spec import StudySpec
from sweep.study.storage import StorageURL

POLL_S = 1.0


@dataclass(frozen=True)
class SweepJob:
    """What a worker needs to run trials of one study (picklable; the storage URL holds no secret)."""

    spec: StudySpec
    width: int
    parametrization: str
    storage: StorageURL
    root: str  # results root: ROOT/NAME/{runs,curves}
    n_trials: int
    eval_every: int
    total_steps: int | None  # None when the searched values change it
    tokens_per_example: int
    deadline: float | None = None  # epoch seconds after which no trial is started
    threads: int | None = None  # torch threads per worker
    worker: int = 0  # this worker's index among the backend's workers (seeds its sampler)

    @property
    def study_name(self) -> str:
        return study_name(self.spec.name, self.width, self.parametrization)


def study_name(name: str, width: int, parametrization: str) -> str:
    return f"{name}-w{width}-{parametrization}"


def package_version() -> str:
    return version("mup-sweep")


def counts(trial: FrozenTrial) -> bool:
    return trial.state in (TrialState.COMPLETE, TrialState.PRUNED) or (
        trial.state == TrialState.FAIL and "error" in trial.user_attrs)


def sampler_seed(seed: int | None, worker: int, trials_before: int) -> int | None:
    """The sampler seed of one worker process: the spec's seed mixed with the worker's index and the
    study's trial count when it starts, so parallel workers and a resumed sweep do not replay the
    same random points, while the same history gives the same sequence."""
    if seed is None:
        return None
    return int(np.random.SeedSequence([seed, worker, trials_before]).generate_state(1)[0])


def seed_by_first_trial(study: optuna.Study, job: SweepJob, first: int) -> None:
    """Reseed a worker's sampler by the number of the first trial it claimed, before that trial samples.

    Processes that opened the study at the same trial count (started together, each with the same
    worker index, as `sweep proxy` runs side by side on one storage) would otherwise replay the same
    random points; trial numbers are unique in a study. Optuna samples a trial's values at its first
    suggest, so a sampler set after `ask` samples them.
    """
    seed = sampler_seed(job.spec.sampler.seed, job.worker, first)
    study.sampler = make_sampler(job.spec.sampler.model_copy(update={"seed": seed}), job.spec.space())


def open_study(job: SweepJob, storage: optuna.storages.BaseStorage, *, create: bool) -> optuna.Study:
    """Load the job's study, or create it (recording width, spec hash and version) when `create`."""
    name = job.study_name
    summaries = {s.study_name: s for s in optuna.get_all_study_summaries(storage, include_best_trial=False)}
    exists = name in summaries
    seed = sampler_seed(job.spec.sampler.seed, job.worker, summaries[name].n_trials if exists else 0)
    sampler = make_sampler(job.spec.sampler.model_copy(update={"seed": seed}), job.spec.space())
    pruner = make_pruner(job.spec.pruner, job.eval_every, job.total_steps)
    if not exists and not create:
        raise InputError(f"study: no study {name} in {job.storage.redacted}")
    if exists:  # loading writes nothing, so a changed spec is refused with the storage as it was
        study = optuna.load_study(storage=storage, study_name=name, sampler=sampler, pruner=pruner)
        if study.user_attrs.get("spec_hash") is not None:
            check_same_spec(study.user_attrs, job)
            return study
    with held():  # a Ctrl-C waits until the study exists whole: its queued grid and its attributes
        if not exists:
            try:
                study = optuna.create_study(storage=storage, study_name=name, direction="minimize", sampler=sampler,
                                            pruner=pruner)
                for params in grid_points(job.spec.sampler, job.spec.space()):  # queued by the one creator: no two
                    study.enqueue_trial(params)                                 # workers can draw the same point
            except optuna.exceptions.DuplicatedStudyError:
                study = optuna.load_study(storage=storage, study_name=name, sampler=sampler, pruner=pruner)
        if study.user_attrs.get("spec_hash") is None:
            for key, value in {"spec_name": job.spec.name, "width": job.width, "parametrization": job.parametrization,
                               "spec_hash": job.spec.spec_hash(),
                               "spec": job.spec.model_dump(mode="json", exclude={"storage"}),
                               "version": package_version()}.items():
                study.set_user_attr(key, value)
        else:  # another process created it first
            check_same_spec(study.user_attrs, job)
    return study


def check_same_spec(recorded: dict, job: SweepJob) -> None:
    """A study's trials stay comparable: what shapes their results (the spec's run, search, objective and
    seeds) may not change after it was created. The first changed field is named, with the value it had."""
    if recorded["spec_hash"] == job.spec.spec_hash():
        return
    name, before, now = job.study_name, recorded.get("spec"), job.spec.model_dump(mode="json")
    for key in ("run", "search", "objective", "seeds_per_trial") if before and isinstance(before, dict) else ():
        found = first_difference(before.get(key, MISSING), now[key], key)
        if found:
            path, old, new = found
            raise InputError(f"{path}: {new!r} differs from {old!r}, its value when study {name} was created; "
                             "put it back, or give the sweep a new name")
    raise InputError(f"spec: the run, search, objective or seeds changed since study {name} was created "
                     f"(spec hash {job.spec.spec_hash()} vs {recorded['spec_hash']}); give the sweep a new name")


MISSING = "(absent)"


def first_difference(old, new, path: str) -> tuple[str, object, object] | None:
    """(dotted path, old value, new value) of the first place two JSON-like values differ, or None."""
    if isinstance(old, dict) and isinstance(new, dict):
        for key in [*old, *(k for k in new if k not in old)]:
            found = first_difference(old.get(key, MISSING), new.get(key, MISSING), f"{path}.{key}")
            if found:
                return found
        return None
    return None if old == new else (path, old, new)


def progress(study: optuna.Study) -> tuple[int, int]:
    """(trials that count, trials running)."""
    trials = study.get_trials(deepcopy=False)
    return sum(map(counts, trials)), sum(t.state == TrialState.RUNNING for t in trials)


WAIT = "wait"  # claim_once: the last places are held by running trials; ask again later


def claim(study: optuna.Study, n_trials: int, deadline: float | None = None) -> optuna.Trial | None:
    """The next trial to run, or None when the study has `n_trials` counted (or the deadline passed).

    While the last places are held by running trials this waits: one of them may die and be retried.
    """
    while deadline is None or time.time() < deadline:
        trial = claim_once(study, n_trials)
        if trial is not WAIT:
            return trial
        time.sleep(POLL_S)
    return None


def claim_once(study: optuna.Study, n_trials: int) -> optuna.Trial | str | None:
    """One attempt of `claim`, without waiting: a trial, None when the study has its count, or WAIT."""
    retry_stale(study)
    done, running = progress(study)
    if done >= n_trials:
        return None
    if done + running >= n_trials:
        return WAIT
    trial = study.ask()
    ahead = sum(1 for t in study.get_trials(deepcopy=False)
                if t.number < trial.number and (counts(t) or t.state == TrialState.RUNNING))
    if ahead < n_trials:
        return trial
    trial.set_user_attr("reason", f"surplus: {n_trials} trials were already taken")
    study.tell(trial, state=TrialState.FAIL)
    return WAIT
