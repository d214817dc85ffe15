"""What runs inside Ray (imported by the Ray driver only): the study as Tune's searcher, one trial as Tune's
trainable."""
from __future__ import annotations

import time
from dataclasses import replace

import optuna
from ray import tune
from ray.tune.search import Searcher

from sweep.study.storage import open_storage
from sweep.study.study import POLL_S, WAIT, SweepJob, claim_once, open_study


class StudySearcher(Searcher):
    """Tune's searcher: each suggestion is a trial claimed from the study (its number and id).

    The study says when it is done (FINISHED) or that its last places are held by running trials
    (None: Tune asks again; at most once per POLL_S is the storage read).
    """

    def __init__(self, job: SweepJob):
        super().__init__()
        self.job = job
        optuna.logging.set_verbosity(optuna.logging.WARNING)
        self.study = open_study(job, open_storage(job.storage), create=False)
        self.next_poll = 0.0

    def suggest(self, trial_id: str):
        if self.job.deadline is not None and time.time() >= self.job.deadline:
            return Searcher.FINISHED
        if time.time() < self.next_poll:
            return None
        trial = claim_once(self.study, self.job.n_trials)
        if trial is None:
            return Searcher.FINISHED
        if trial is WAIT:
            self.next_poll = time.time() + POLL_S
            return None
        return {"number": trial.number, "trial_id": trial._trial_id}

    def on_trial_complete(self, trial_id: str, result=None, error: bool = False) -> None:
        """Nothing to do: the trial told the study itself, or its lost worker makes it stale."""


def run_one(config: dict, job: SweepJob) -> None:
    """Tune's trainable: run one Optuna trial (sampled, trained, pruned and told) in this Ray worker."""
    import torch

    from sweep.study.trial import run_trial

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    threads = max(1, int(tune.get_context().get_trial_resources().required_resources.get("CPU", 1)))
    torch.set_num_threads(threads)
    job = replace(job, worker=config["number"], threads=threads)
    study = open_study(job, open_storage(job.storage, wait=True), create=False)
    study.get_trials(deepcopy=False)  # Optuna's cached RDB storage knows only trials it has read
    state = run_trial(job, study, optuna.Trial(study, config["trial_id"]))
    tune.report({"state": state.name if state else "LOST"})
