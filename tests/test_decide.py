"""The report's opening (sweep/results/decide.py): each law as prior → measured → posterior with the conjugate
update's numbers, the transferred settings beside the textbook's, and the full run's verdict on its band."""
from __future__ import annotations

import html
import math

import pandas as pd

from sweep.results.decide import band_figure, band_line, laws_table, opening, settings_table, verdict
from sweep.results.scope import Scope
from sweep.rules.prior import prior_for
from trainer.config import RunConfig

LAW = {"param": "optimizer.lr", "axis": "batch_size", "slope": 0.8, "interval_slope": [0.6, 1.0], "before": 0.01,
       "after": 0.0174, "textbook": {"sqrt": 0.0141, "linear": 0.02}, "measured": [16, 64], "ratio": 2.0,
       "interval": [0.015, 0.02], "extrapolated": False, "source": "x", "poor_at": [], "trial": "t#1"}


def config(law: dict = LAW) -> RunConfig:
    return RunConfig.parse({"model": {"name": "gpt", "width": 64, "depth": 2}, "steps": 10, "provenance": {
        "laws": [law], "rules": [{"rule": "width", "field": "model.width", "before": 32, "after": 64,
                                  "formula": "μP"}]}})


def test_each_law_is_shown_as_prior_measured_posterior_with_the_conjugate_numbers():
    """A provenance without a recorded prior (written before laws carried one): the published prior's update."""
    prior = prior_for("optimizer.lr", "batch_size")
    se = 0.4 / (2 * 1.959963984540054)
    sd = (prior.spread ** -2 + se ** -2) ** -0.5
    mean = sd ** 2 * (prior.centre / prior.spread ** 2 + 0.8 / se ** 2)
    half = 1.959963984540054 * sd
    text = laws_table(config())
    assert f"{mean:.3f} [{mean - half:.3f}, {mean + half:.3f}]" in text and "0.800 [0.600, 1.000]" in text
    assert prior.source.split(" (")[0] in text
    assert 0.5 < mean < 0.8  # pulled from the measurement toward the textbook's square root


def test_the_table_shows_the_prior_and_posterior_the_transfer_recorded_not_a_recomputed_one():
    """The transfer's provenance carries prior → measurement → posterior (sweep/rules/fitted.py): the report shows
    those numbers, whatever the published table says today, and `--prior none` as no prior."""
    recorded = {**LAW, "slope": 0.7, "interval_slope": [0.55, 0.85],
                "prior": {"centre": 0.5, "spread": 0.05, "source": "a narrower prior", "low": 0.402, "high": 0.598},
                "measurement": {"slope": 0.8, "low": 0.6, "high": 1.0},
                "posterior": {"centre": 0.7, "low": 0.55, "high": 0.85, "weight": 0.4}}
    text = laws_table(config(recorded))
    assert "0.500 [0.402, 0.598] (a narrower prior)" in text and "0.800 [0.600, 1.000]" in text
    assert "<b>0.700 [0.550, 0.850]</b>, measurement weight 40%" in text and "Malladi" not in text
    alone = {**LAW, "prior": None, "measurement": {"slope": 0.8, "low": 0.6, "high": 1.0},
             "posterior": {"centre": 0.8, "low": 0.6, "high": 1.0, "weight": 1.0}}
    assert "<td>none</td>" in laws_table(config(alone)) and "weight" not in laws_table(config(alone))


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


def test_a_full_run_without_a_band_says_why_in_one_line(tmp_path):
    """A transfer whose prediction has no band (its ladder's curves too wide to hold a run to): the opening said
    nothing of it beside the config, and `no predicted curve was logged` for the run; now `no live band: why` in
    both, from the reason the transfer records."""
    why = "the ladder's curves scaled to the prediction's interval are wider than ±25% of the loss at every fraction"
    cfg = RunConfig.parse({"model": {"name": "gpt", "width": 64, "depth": 2}, "steps": 10,
                           "output": {"root": str(tmp_path), "study": "s", "kind": "full", "run": "full-1"},
                           "provenance": {"prediction": {"loss": 2.0, "low": 1.5, "high": 2.5, "no_band": why}}})
    for path in (tmp_path / "s" / "transfer" / "w64.yaml", tmp_path / "s" / "runs" / "full-1" / "config.yaml"):
        path.parent.mkdir(parents=True)
        path.write_text(cfg.to_yaml())
    text = opening(tmp_path, "s", Scope(tmp_path, "s", ()), lambda figure, alt: "")
    assert text.count(f"no live band: {html.escape(why)}") == 2 and "no predicted curve" not in text
    assert band_line({}).startswith("no live band: no predicted loss")
    assert band_line({"loss": 2.0}) == "no live band: the transfer that wrote this config recorded none"
    assert band_line({"curve": {"fraction": [0.3, 1.0]}}).startswith("live band from 30% of the run")
