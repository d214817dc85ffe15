"""One trial: sampled values → a RunConfig per training seed → the trainer, evaluations → the pruner.

Stored on the trial (user attrs): `values` (the RunConfig fields set, β from a half-life included),
`config` (the first seed's RunConfig YAML), `runs` and `curves` (where the runs and their Parquet
curves are, relative to the results root: sweep/paths.py `stored_path` reads them under the root they
are read from), `status` (completed, pruned, diverged, failed), `reason`, `steps` (training steps run,
all seeds), `seed_values`, `reused` (the runs of another study taken instead of training them again,
sweep/study/twin.py). Outcomes: COMPLETE with the objective; a diverged run or a pruned one
PRUNED with its reason; a run that raises FAILED with its message (`error`). None of them stops the
sweep; a full or read-only disk or an unreachable storage (an EnvironmentFault) does: it is not the
run's error, so the trial is left RUNNING for the next run to retry (sweep/study/worker.py).

Seeds: the pruner decides on the first seed's curve (reported at its evaluation steps); a trial
that survives it is trained on the remaining seeds, and its value is the mean of the seeds'.
"""
from __future__ import annotations

import traceback
from pathlib import Path
from typing import TYPE_CHECKING, Any

import optuna
from optuna.trial import TrialState

from sweep.errors import as_fault
from sweep.paths import curve_folder, inside_root
from sweep.study.liveness import Heartbeat
from sweep.study.space import set_path
from sweep.study.spec import StudySpec
from sweep.study.study import SweepJob, package_version
from sweep.study.twin import content_id, record, take
from trainer.config import ConfigError, RunConfig
from trainer.curves import read_run

if TYPE_CHECKING:
    from trainer.loop import RunResult


def base_run(spec: StudySpec, width: int, parametrization: str) -> dict:
    """The spec's partial RunConfig at a width and parametrization."""
    return set_path(set_path(spec.run, "model.width", width), "model.parametrization", parametrization)


def trial_config(job: SweepJob, values: dict[str, Any], *, seed_index: int, run_name: str,
                 trial: int | None) -> RunConfig:
    run = base_run(job.spec, job.width, job.parametrization)
    for path, value in values.items():
        run = set_path(run, path, value)
    seed = run.get("seed", 0)
    held_out = run.get("eval") or {}
    if seed_index and isinstance(held_out, dict) and held_out.get("seed") is None:  # the first seed's held-out set
        run["eval"] = {**held_out, "seed": seed}
    run["seed"] = seed + seed_index
    run["output"] = {"root": job.root, "study": job.spec.name, "kind": "proxy", "run": run_name}
    run["provenance"] = {"study": job.study_name, "trial": trial, "storage": job.storage.redacted,
                         "created_by": f"sweep proxy {package_version()}"}
    return RunConfig.parse(run)


def run_name(job: SweepJob, origin: int, seed_index: int) -> str:
    """A trial's run folder; a retried trial reuses the first attempt's (`origin`) to resume it."""
    return f"w{job.width}-{job.parametrization}-t{origin:05d}-s{seed_index}"


def check_run_folder(cfg: RunConfig) -> None:
    """A trial resumes its run folder only when the folder holds the same run (a retry): a folder left
    by another sweep under the same name, with another config, is never continued."""
    recorded = cfg.run_dir() / "config.yaml"
    if recorded.is_symlink():  # read only inside the root: a link planted there never leads a read out of it
        inside_root(recorded, Path(cfg.output.root), "output.run")
    if recorded.is_file() and content_id(RunConfig.load(recorded)) != content_id(cfg):
        raise ConfigError(f"output.run: {cfg.run_dir()} holds another run's config; set another output.run, or move "
                          "it away")


def objective_value(cfg: RunConfig, last: int) -> float:
    """Mean of the last `last` validation losses in the run's curve (the curve store, so resumes count)."""
    curve = read_run(curve_folder(cfg), columns=["step", "val_loss"]).dropna()
    return float(curve["val_loss"].tail(last).mean())


def run_trial(job: SweepJob, study: optuna.Study, trial: optuna.Trial) -> TrialState | None:
    """Train the trial's runs and tell the study how it ended (None: it was taken away as stale)."""
    with Heartbeat(study._storage, trial._trial_id) as beat:
        try:
            return train_trial(job, study, trial, beat)
        except Exception as err:  # the run's own error: recorded, counted, not retried; the sweep goes on
            fault = as_fault(err)
            if fault is not None:  # the disk or the storage, not the run: not recorded, the trial is retried
                raise fault from err
            if study._storage.get_trial(trial._trial_id).state.is_finished():
                raise  # told already: the error came after, from the sampler or the storage
            message = " ".join(f"{type(err).__name__}: {err}".split())[:500]
            trial.set_user_attr("error", message)
            trial.set_user_attr("traceback", traceback.format_exc()[-4000:])
            trial.set_user_attr("status", "failed")
            study.tell(trial, state=TrialState.FAIL)
            return TrialState.FAIL


def train_trial(job: SweepJob, study: optuna.Study, trial: optuna.Trial, beat: Heartbeat) -> TrialState | None:
    from trainer.loop import train  # here: pre-flight and the doctor read this module's configs, not the loop

    space = job.spec.space()
    params = space.suggest(trial)
    base = base_run(job.spec, job.width, job.parametrization)
    batch_size = params.get("batch_size", base.get("batch_size", RunConfig.model_fields["batch_size"].default))
    values = space.values(params, tokens_per_step=batch_size * job.tokens_per_example)
    origin = trial.user_attrs.get("retry_of", trial.number)
    trial.set_user_attr("values", values)
    seed_values, steps, runs, reused = [], 0, [], []
    for i in range(job.spec.seeds_per_trial):
        cfg = trial_config(job, values, seed_index=i, run_name=run_name(job, origin, i), trial=trial.number)
        runs.append(str(cfg.run_dir().relative_to(job.root)))  # relative: a root copied elsewhere reads its own
        if i == 0:
            trial.set_user_attr("config", cfg.to_yaml())
            trial.set_user_attr("curves", str(curve_folder(cfg).relative_to(job.root)))
        trial.set_user_attr("runs", runs)
        check_run_folder(cfg)
        twin = take(cfg, job.tokens_per_example) if job.spec.pruner.name == "none" else None
        if twin is not None:  # trained already by another study under the root (twin.py)
            reused.append({"seed": i, "run": twin["reused_from"]})
            trial.set_user_attr("reused", reused)
        else:
            result = train(cfg, resume=True, on_log=lambda row: beat.update(row["step"], row["train_loss"]),
                           on_eval=pruning_callback(trial, beat, report=i == 0))
            steps += result.step
            trial.set_user_attr("steps", steps)
            if result.status != "completed":
                return stopped(study, trial, beat, result)
            record(cfg, job.tokens_per_example)
        seed_values.append(objective_value(cfg, job.spec.objective.last))
    trial.set_user_attr("seed_values", seed_values)
    trial.set_user_attr("status", "completed")
    study.tell(trial, sum(seed_values) / len(seed_values))
    return TrialState.COMPLETE


def pruning_callback(trial: optuna.Trial, beat: Heartbeat, report: bool):
    def on_eval(step: int, row: dict) -> bool:
        if beat.lost:  # another process failed this trial as stale: stop, it is retried elsewhere
            return False
        if report:
            trial.report(row["val_loss"], step)
            return not trial.should_prune()
        return True

    return on_eval


def stopped(study: optuna.Study, trial: optuna.Trial, beat: Heartbeat, result: RunResult) -> TrialState | None:
    if beat.lost:
        return None
    if result.status == "diverged":
        reason = result.reason
    else:
        reason = f"pruned by {study.pruner.__class__.__name__} at step {result.step} (val loss {result.val_loss:.4g})"
    trial.set_user_attr("status", result.status)
    trial.set_user_attr("reason", reason)
    study.tell(trial, state=TrialState.PRUNED)
    return TrialState.PRUNED
