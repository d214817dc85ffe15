"""The report's opening (sweep/results/decide.py): each law as prior → measured → posterior with the conjugate
update's numbers, the transferred settings beside the textbook's, and the full run's verdict on its band."""
from __future__ import annotations

import math

import pandas as pd

from sweep.forecast.priors import PRIORS
from sweep.results.decide import band_figure, laws_table, settings_table, verdict
from trainer.config import RunConfig

LAW = {"param": "optimizer.lr", "axis": "batch_size", "slope": 0.8, "interval_slope": [0.6, 1.0], "before": 0.01,
       "after": 0.0174, "textbook": {"sqrt": 0.0141, "linear": 0.02}, "measured": [16, 64], "ratio": 2.0,
       "interval": [0.015, 0.02], "extrapolated": False, "source": "x", "poor_at": [], "trial": "t#1"}


def config() -> RunConfig:
    return RunConfig.parse({"model": {"name": "gpt", "width": 64, "depth": 2}, "steps": 10, "provenance": {
        "laws": [LAW], "rules": [{"rule": "width", "field": "model.width", "before": 32, "after": 64,
                                  "formula": "μP"}]}})


def test_each_law_is_shown_as_prior_measured_posterior_with_the_conjugate_numbers():
    prior = PRIORS["batch_size"]
    se = 0.4 / (2 * 1.959963984540054)
    sd = (prior.sd ** -2 + se ** -2) ** -0.5
    mean = sd ** 2 * (prior.slope / prior.sd ** 2 + 0.8 / se ** 2)
    text = laws_table(config())
    assert f"{mean:.3f} ± {1.959963984540054 * sd:.3f}" in text and "0.800 [0.600, 1.000]" in text
    assert prior.source.split(" (")[0] in text
    assert 0.5 < mean < 0.8  # pulled from the measurement toward the textbook's square root


def test_the_settings_show_the_fitted_value_beside_the_textbooks():
    text = settings_table(config())
    assert "0.0174" in text and "sqrt: 0.0141" in text and "linear: 0.02" in text and "model.width" in text


def test_the_verdict_names_the_step_a_run_left_its_band_and_what_to_do():
    rows = pd.DataFrame({"step": [10, 20, 30], "val_loss": [3.0, 2.9, 2.95],
                         "predicted_val_loss": [3.0, 2.8, 2.7], "predicted_low": [2.9, 2.7, 2.6],
                         "predicted_high": [3.1, 2.95, 2.8], "predicted": [math.nan] * 3})
    text = verdict(rows, 100)
    assert "left its predicted band at step 30 (30% of the run), above" in text and "LR" in text
    assert "inside its predicted band" in verdict(rows.iloc[:2], 100)
    assert "no predicted curve" in verdict(rows[["step", "val_loss"]], 100)
    assert band_figure("full", rows, 100).axes[0].get_xlabel() == "fraction of the run"
