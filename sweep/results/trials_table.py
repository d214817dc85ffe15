"""The `trials` table: one row per Optuna trial of every study in a scope (each width and parametrization)."""
from __future__ import annotations

from pathlib import Path

import optuna
import pandas as pd
from optuna.trial import TrialState

from sweep.results.scope import Scope
from sweep.study.storage import open_storage

COLUMNS = ("sweep", "study", "width", "parametrization", "number", "state", "value", "datetime_start",
           "datetime_complete", "duration_s", "status", "reason", "steps", "runs", "storage")


def trial_rows(scope: Scope) -> pd.DataFrame:
    """Columns COLUMNS plus `params.PATH` per searched parameter (the sampled value, as `sweep results`
    shows it); `value` only for COMPLETE trials; `runs` the trial's run ids (folder names under runs/);
    `storage` the redacted storage URL."""
    rows = []
    for url in scope.storages:
        storage = open_storage(url, read_only=True)
        for summary in optuna.get_all_study_summaries(storage, include_best_trial=False):
            attrs = summary.user_attrs
            if scope.sweep is not None and attrs.get("spec_name") != scope.sweep:
                continue
            study = optuna.load_study(study_name=summary.study_name, storage=storage)
            for t in study.get_trials(deepcopy=False):
                rows.append(trial_row(t, summary.study_name, attrs, url.redacted))
    frame = pd.DataFrame(rows, columns=None if rows else COLUMNS)
    params = sorted(c for c in frame.columns if c.startswith("params."))
    for column in params:  # a categorical's values may mix numbers and strings across studies
        if frame[column].dtype == object:
            frame[column] = frame[column].map(lambda v: None if v is None or v != v else str(v))
    return frame[[*COLUMNS[:7], *params, *COLUMNS[7:]]]


def trial_row(t: optuna.trial.FrozenTrial, study_name: str, attrs: dict, storage: str) -> dict:
    start, end = t.datetime_start, t.datetime_complete
    return {"sweep": attrs.get("spec_name"), "study": study_name, "width": attrs.get("width"),
            "parametrization": attrs.get("parametrization"), "number": t.number, "state": t.state.name,
            "value": t.value if t.state == TrialState.COMPLETE else None,
            "datetime_start": start, "datetime_complete": end,
            "duration_s": (end - start).total_seconds() if start and end else None,
            **{f"params.{k}": v for k, v in t.params.items()},
            "status": t.user_attrs.get("status"), "reason": t.user_attrs.get("error") or t.user_attrs.get("reason"),
            "steps": t.user_attrs.get("steps"), "runs": [Path(r).name for r in t.user_attrs.get("runs", [])],
            "storage": storage}
