"""`sweep proxy`: create or resume the study of a spec at one width, run its trials on a backend, follow them."""
from __future__ import annotations

import optuna
from rich.console import Console

from sweep.backends import get_backend
from sweep.backends.live import run_workers, short
from sweep.errors import InputError
from sweep.proxy.request import WARM_START_TOP, SweepRequest
from sweep.study.preflight import prepare
from sweep.study.spec import load_spec
from sweep.study.storage import open_storage
from sweep.study.study import SweepJob, open_study, progress, study_name


def run_proxy(request: SweepRequest, console: Console) -> int:
    """Returns the exit code: 0 when the study has its trials (or the sweep was detached), 1 when workers
    failed or time ran out."""
    r = request
    spec = load_spec(r.spec)
    job = prepare(spec, width=r.width, parametrization=r.parametrization, trials=r.trials, storage=r.storage,
                  password_env=r.password_env, timeout_min=r.timeout)
    executor = get_backend(r.backend, spec, r.workers, r.backend_flags)
    if r.detach and r.backend != "slurm":
        raise InputError("--detach: only --backend slurm runs on without this command")
    executor.check(job)
    space = spec.space()
    try:
        enqueued = [space.parse_assignments(text) for text in r.enqueue]
    except ValueError as err:
        raise InputError(f"--enqueue: {err}") from None
    check_warm_start(r, job.width)

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    warm = best_of(job, r.warm_start, r.warm_start_top or WARM_START_TOP) if r.warm_start is not None else []
    store = open_storage(job.storage)
    study = open_study(job, store, create=True)  # after every refusal: a refused command leaves no study
    new = not study.get_trials(deepcopy=False)
    for params in enqueued:
        study.enqueue_trial(params, skip_if_exists=True)
    if warm and new:  # enqueued once, into a new study; never more than the trials asked (the rest would wait)
        source = study_name(job.spec.name, r.warm_start, job.parametrization)
        warm = warm[:max(0, job.n_trials - len(enqueued))]
        for t in warm:
            study.enqueue_trial(t.params, user_attrs={"warm_start_from": f"{source}#{t.number}"})
        console.print(f"warm start: enqueued the best {len(warm)} trial(s) of width {r.warm_start}")
    done, _ = progress(study)
    console.print(f"study {job.study_name} in {job.storage.redacted}: {done}/{job.n_trials} trials counted")
    if done < job.n_trials:
        stopped = run_workers(study, job, executor, console, detach=r.detach)
        if stopped is not None:
            return stopped
    return summarize(study, job, console)


def check_warm_start(r: SweepRequest, width: int) -> None:
    """The warm-start flags alone: a narrower width, and --warm-start-top only with it."""
    if r.warm_start is None:
        if r.warm_start_top is not None:
            raise InputError("--warm-start-top: only with --warm-start NARROWER_WIDTH")
        return
    if not 1 <= r.warm_start < width:
        raise InputError(f"--warm-start: {r.warm_start} is not narrower than the width being swept ({width}); "
                         "name a narrower study's width")


def best_of(job: SweepJob, width: int, top: int) -> list[optuna.trial.FrozenTrial]:
    """μP warm start: a narrower width's best settings are the best guess at this width (they transfer).

    Its `top` best finished trials, to enqueue first, read with the storage opened read-only (a missing one is
    not created). With `top` trials asked of this study, it is a rung of successive halving across widths
    (`sweep.study.fidelity`).
    """
    name = study_name(job.spec.name, width, job.parametrization)
    absent = InputError(f"--warm-start: no study {name} in {job.storage.redacted}")
    if job.storage.file() is not None and not job.storage.file().is_file():  # no storage file, so no study
        raise absent
    try:
        source = optuna.load_study(study_name=name, storage=open_storage(job.storage, read_only=True))
    except KeyError:
        raise absent from None
    if source.user_attrs.get("spec_hash") != job.spec.spec_hash():
        raise InputError(f"--warm-start: study {name} was made from a different spec")
    complete = [t for t in source.get_trials(deepcopy=False) if t.state == optuna.trial.TrialState.COMPLETE]
    if not complete:
        raise InputError(f"--warm-start: study {name} has no finished trial yet; run it first")
    return sorted(complete, key=lambda t: t.value)[:top]


def summarize(study: optuna.Study, job: SweepJob, console: Console) -> int:
    done, running = progress(study)
    complete = [t for t in study.get_trials(deepcopy=False) if t.state == optuna.trial.TrialState.COMPLETE]
    if complete:
        best = min(complete, key=lambda t: t.value)
        console.print(f"best: trial {best.number}, {job.spec.objective.metric} {best.value:.4f} · {short(best.params)}")
    console.print(f"{done}/{job.n_trials} trials counted; results: sweep results {job.spec.name} --width {job.width}")
    return 0 if done >= job.n_trials else 1
