"""Find the Optuna studies of a sweep: by spec file or by name, in its storage, one per width and parametrization;
a trial's curve and run folders, under the results root they are read from."""
from __future__ import annotations

from contextlib import suppress
from pathlib import Path

import optuna
import pandas as pd

from sweep.errors import InputError
from sweep.paths import default_storage, inside_root, results_root, stored_name, stored_path, sweep_name
from sweep.study.spec import load_spec
from sweep.study.storage import StorageURL, open_storage, storage_url
from trainer.curves import read_run


def locate(spec_or_name: str, *, storage: str | None, password_env: str | None,
           root: str | None = None) -> tuple[str, StorageURL]:
    """(sweep name, storage URL) from a spec file or a bare name (whose default storage must exist)."""
    path = Path(spec_or_name)
    if path.suffix in (".yaml", ".yml") or path.is_file():
        spec = load_spec(path)
        name, given, password_env = spec.name, storage or spec.storage, password_env or spec.storage_password_env
    else:
        name, given = sweep_name(spec_or_name, "study"), storage
    default = default_storage(results_root(root), name) if not given else Path()
    if not given and not default.is_file():
        fix = (f"run `sweep proxy {spec_or_name} --width W` first" if path.suffix in (".yaml", ".yml")
               or path.is_file() else "give the spec or --storage")  # the spec given: its sweep was never run
        raise InputError(f"study: no sweep named {name!r} ({default} does not exist; {fix})")
    return name, storage_url(given, password_env, default_sqlite=default)


def swept_widths(name: str, root: Path) -> list[int]:
    """The widths sweep `name` has a study at in its default storage under `root` ([] where it has none yet)."""
    default = default_storage(root, name)
    if not default.is_file():
        return []
    try:
        studies = load_studies(name, storage_url(None, None, default_sqlite=default))
    except InputError:  # no study of this sweep in it
        return []
    return sorted({s.user_attrs["width"] for s in studies if isinstance(s.user_attrs.get("width"), int)})


def load_studies(name: str, url: StorageURL, width: int | None = None) -> list[optuna.Study]:
    """The studies of sweep `name` (all widths and parametrizations, or one width), narrowest first; a study whose
    stored name is not a NAME (`../x`, markup) is refused, one line."""
    storage = open_storage(url, read_only=True)
    studies, widths = [], set()
    for summary in optuna.get_all_study_summaries(storage, include_best_trial=False):
        attrs = summary.user_attrs
        widths |= {attrs.get("width")} if attrs.get("spec_name") == name else set()
        if attrs.get("spec_name") == name and (width is None or attrs.get("width") == width):
            stored_name(summary.study_name, "study", url.redacted)  # it names the plots' folder and the pages
            studies.append(optuna.load_study(study_name=summary.study_name, storage=storage))
    if not studies:
        at = f" at width {width}" if width is not None else ""
        swept = ", ".join(str(w) for w in sorted(w for w in widths if isinstance(w, int)))
        hint = (f" (it has width {swept}: `sweep proxy SPEC --width {width}` sweeps that width, or plan and verify "
                f"from one it has, e.g. `sweep plan … --proxy-width W`)" if at and swept else "")
        raise InputError(f"study: sweep {name!r} has no study{at} in {url.redacted}{hint}")
    return sorted(studies, key=lambda s: (s.user_attrs.get("width", 0), s.user_attrs.get("parametrization", "")))


def pick_trial(name: str, url: StorageURL, *, width: int | None, parametrization: str,
               trial: str = "best") -> tuple[optuna.Study, optuna.trial.FrozenTrial]:
    """The sweep's study at `width` (the only one in `parametrization` when no width is given) and one of
    its COMPLETE trials: the best, or the one numbered `trial`."""
    studies = [s for s in load_studies(name, url, width) if s.user_attrs.get("parametrization") == parametrization]
    if not studies:
        raise InputError(f"study: sweep {name!r} has no {parametrization} study"
                         + (f" at width {width}" if width is not None else ""))
    if len(studies) > 1:
        widths = ", ".join(str(s.user_attrs.get("width")) for s in studies)
        raise InputError(f"--proxy-width: sweep {name!r} has {parametrization} studies at widths {widths}; name one")
    study = studies[0]
    complete = [t for t in study.get_trials(deepcopy=False) if t.state == optuna.trial.TrialState.COMPLETE]
    if trial == "best":
        if not complete:
            raise InputError(f"--trial: study {study.study_name} has no complete trial yet")
        return study, min(complete, key=lambda t: t.value)
    if not (trial.isascii() and trial.isdigit()):
        raise InputError(f"--trial: {trial!r} is not 'best' nor a trial number")
    chosen = next((t for t in study.get_trials(deepcopy=False) if t.number == int(trial)), None)
    if chosen is None:
        raise InputError(f"--trial: study {study.study_name} has no trial {trial}")
    if chosen.state != optuna.trial.TrialState.COMPLETE:
        raise InputError(f"--trial: trial {trial} of {study.study_name} is {chosen.state.name}, not COMPLETE")
    return study, chosen


def read_curve(trial, root: Path | None = None) -> pd.DataFrame | None:
    """The curve of a trial's first seed, by step (None when it has none, or when the folder the trial names is no
    path under the results `root`, or leads out of it once links are resolved: a stored path is input). Read where
    `stored_path` places it: a root copied elsewhere reads its own curves, never the old root's."""
    root = root or results_root()
    try:
        return read_run(inside_root(stored_path(trial.user_attrs.get("curves"), root, "curves"), root, "curves"))
    except InputError:  # no path, out of the root, or a link loop
        return None


def trial_runs(trial, root: Path) -> list[Path]:
    """The run folders a trial names (one per seed trained so far), where `stored_path` places them under `root`;
    an entry that is no path under it is left out."""
    runs = trial.user_attrs.get("runs")
    found = []
    for value in runs if isinstance(runs, list) else []:
        with suppress(InputError):
            found.append(stored_path(value, root, "runs"))
    return found
