"""The predicted final loss a transferred run is held to (`provenance.prediction`, written by `sweep transfer`),
against its measured validation loss, for `sweep status` and `sweep compare`.

A run leaves its interval when its final evaluation (the run done or diverged) lies outside [low, high], or when
any evaluation before the end is already below low: the validation loss of a run keeps falling as its LR
anneals, so an evaluation above the interval mid-run is expected, one below it is not.
"""
from __future__ import annotations

from pathlib import Path

import yaml


def read_prediction(run_dir: str | Path) -> dict:
    """The run's predicted loss record, {} when its config has none (a proxy, a run not transferred)."""
    path = Path(run_dir) / "config.yaml"
    if not path.is_file():
        return {}
    config = yaml.safe_load(path.read_text()) or {}
    return (config.get("provenance") or {}).get("prediction") or {}


def held_to(prediction: dict, val_loss: float | None, final: bool) -> tuple[str, bool]:
    """(the prediction as text with the verdict, whether the run is outside its interval)."""
    if not prediction:
        return "-", False
    text = f"{prediction['loss']:.4f} [{prediction['low']:.4f}, {prediction['high']:.4f}]"
    if val_loss is None:
        return text, False
    below, above = val_loss < prediction["low"], val_loss > prediction["high"]
    outside = below or (final and above)
    return (f"{text} OUTSIDE ({'below' if below else 'above'})" if outside else text), outside
