"""A grid worker without training, for the claim stress test (tests/fault/test_grid_claim.py).

`python -m tests.fault.grid_claimer STORAGE PASSWORD_ENV READY GO STUDY…` opens the storage as a sweep
worker does (PASSWORD_ENV `-` for none), says it is ready (creates READY), waits until GO exists, then,
study after study, claims trials with the sweep's own `claim`, takes the trial's point and tells it at once. It
prints one line per trial it believed it won, `STUDY TRIAL_ID`, so the test sees every claim of every process.
"""
from __future__ import annotations

import sys
import time
from pathlib import Path

import optuna

from sweep.study.storage import open_storage, storage_url
from sweep.study.study import claim


def main(storage: str, password_env: str, ready: str, go: str, studies: list[str]) -> None:
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    url = storage_url(storage, None if password_env == "-" else password_env, Path("unused.db"))
    store = open_storage(url, wait=True)
    loaded = [optuna.load_study(study_name=name, storage=store) for name in studies]
    Path(ready).touch()
    while not Path(go).exists():  # all workers start together, so that they contend for every study
        time.sleep(0.01)
    for study in loaded:
        while (trial := claim(study, study.user_attrs["points"])) is not None:
            print(study.study_name, trial._trial_id, flush=True)
            study.tell(trial, trial.suggest_float("lr", 2.0 ** -30, 1.0, log=True))  # the enqueued point


if __name__ == "__main__":
    main(*sys.argv[1:5], sys.argv[5:])
