"""The predicted final loss a transferred run is held to (`provenance.prediction`, written by `sweep transfer`),
against its measured validation loss, for `sweep status` and `sweep compare`.

A run leaves its interval when its final evaluation (the run done or diverged) lies outside [low, high], or when
any evaluation before the end is already below low: the validation loss of a run keeps falling as its LR
anneals, so an evaluation above the interval mid-run is expected, one below it is not.
"""
from __future__ import annotations

import os
from pathlib import Path

from sweep.errors import InputError
from trainer.config import ConfigError, RunConfig


def read_prediction(run_dir: str | Path) -> dict:
    """The run's predicted loss record, {} when its config has none (a proxy, a run not transferred); a config
    or a prediction that is not what `sweep transfer` writes is bad input naming the field."""
    path = Path(run_dir) / "config.yaml"
    if not path.exists() and not path.is_symlink():
        return {}
    if path.is_symlink():  # never followed: it could lead anywhere (the run folder itself was checked)
        raise InputError(f"runs: {path} is a link (to {os.path.realpath(path)}), not the file the tool writes; refused")
    try:  # the prediction is checked as the config is read (trainer/config/_prediction.py)
        return RunConfig.load(path).provenance.prediction
    except ConfigError as err:
        raise InputError(f"runs: {path}: {err}") from None


def held_to(prediction: dict, val_loss: float | None, final: bool) -> tuple[str, bool]:
    """(the prediction as text with the verdict, whether the run is outside its interval)."""
    if "loss" not in prediction:  # none, or only the ratios a run predicts its own final by
        return "-", False
    text = f"{prediction['loss']:.4f} [{prediction['low']:.4f}, {prediction['high']:.4f}]"
    if val_loss is None:
        return text, False
    below, above = val_loss < prediction["low"], val_loss > prediction["high"]
    outside = below or (final and above)
    return (f"{text} OUTSIDE ({'below' if below else 'above'})" if outside else text), outside
