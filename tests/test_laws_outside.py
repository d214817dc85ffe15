"""An outside tester's cases on the laws' statistics (issue 37): each names the input that broke a promise."""
from __future__ import annotations

import json
import math
import re

import numpy as np
import pytest

from sweep.errors import InputError
from sweep.rules.bracket import next_values, refine
from sweep.rules.equivalence import equivalence
from sweep.rules.fitted import Law
from sweep.rules.prior import BATCH_ADAM, posterior, slope_chain
from sweep.rules.summary import axis_folder, load_summary, read_summary


def test_a_posterior_whose_interval_spans_zero_never_reverses_the_published_direction():
    # prior +0.5 ± 0.25; measured −0.6 [−1.0, −0.2]: the posterior −0.16 [−0.47, 0.15] lowered the LR as the
    # batch grew, though its own interval holds the published (rising) direction
    post = posterior(BATCH_ADAM, -0.6, -1.0, -0.2)
    assert post.used == "held" and post.centre == 0.0 and post.low < 0 < post.high
    law = Law.updated("optimizer.lr", "batch_size", {"slope": -0.6, "low": -1.0, "high": -0.2}, (16, 64), "x",
                      BATCH_ADAM)
    assert law.scale(0.01, 2.0)[0] == pytest.approx(0.01)  # held, not lowered
    assert "held the setting" in slope_chain(law.record(0.01, 0.01, (0.008, 0.012), 2.0, False, {}))


def test_a_sharp_measurement_of_the_opposite_sign_still_overrides_the_prior():
    post = posterior(BATCH_ADAM, -0.6, -0.7, -0.5)
    assert post.used == "posterior" and post.high < 0 and post.centre < -0.5


@pytest.mark.parametrize("slope, low, high", [(0.5, 1.0, 0.0), (3.0, 0.0, 0.1)])
def test_a_posterior_refuses_an_interval_that_does_not_hold_its_slope(slope, low, high):
    with pytest.raises(ValueError, match="outside its interval"):
        posterior(BATCH_ADAM, slope, low, high)


def test_an_equivalence_verdict_refuses_a_reversed_interval_and_a_bad_band():
    with pytest.raises(ValueError, match="low end above"):
        equivalence(0.1, 0.05, 0.0, 0.15)  # was "pass"
    for reference, band in ((0.0, -0.2), (0.0, math.nan), (math.nan, 0.15)):
        with pytest.raises(ValueError, match="band"):
            equivalence(-0.1, 0.1, reference, band)


def test_an_interval_centred_on_the_band_edge_says_no_number_of_runs_decides():
    said = equivalence(0.1, 0.2, 0.0, 0.15)  # centre 0.15000000000000002: was "3.2e30× the runs"
    assert said.verdict == "undecided" and math.isinf(said.more_runs)
    assert equivalence(-0.15, 0.15, 0.0, 0.15).verdict == "pass"  # exactly on both edges: inside


def test_bracketing_ignores_a_setting_that_is_no_number_and_refuses_a_nan_noise():
    assert all(math.isfinite(v) for v in next_values(np.array([0.0, 1.0, np.nan]), np.array([3.0, 2.0, 1.0]), 0.01))
    assert next_values(np.array([np.nan]), np.array([1.0]), 0.01) == []
    with pytest.raises(ValueError, match="noise"):
        next_values(np.array([0.0, 1.0, 2.0]), np.array([3.0, 2.0, 3.0]), math.nan)  # spent the whole budget
    with pytest.raises(ValueError, match="budget"):
        refine(lambda v: v * v, [-1.0, 0.0, 1.0], 0.0, -5)


def write_law_summary(root, **law_changes):
    """A verify summary across batch size holding one μP law, with `law_changes` hand-edited into the law."""
    law = {"slope": 0.3, "low": 0.1, "high": 0.5, "level": 0.95, "at": [16.0, 32.0],
           "prior": {**BATCH_ADAM.record()}, "posterior": {"centre": 0.4, "low": 0.2, "high": 0.6, "weight": 0.5,
                                                            "used": "posterior"}}
    folder = root / axis_folder("v", "optimizer.lr", "batch_size")
    folder.mkdir(parents=True, exist_ok=True)
    summary = {"param": "optimizer.lr", "axis": "batch_size", "values": [16.0, 32.0], "prior": "published",
               "optimizer": "adamw", "laws": {"mup": {**law, **law_changes}}}
    (folder / "summary.json").write_text(json.dumps(summary))
    return folder / "summary.json"


def test_a_well_formed_law_summary_reads(tmp_path):
    write_law_summary(tmp_path)
    assert read_summary(tmp_path, "v", "optimizer.lr", "batch_size")["laws"]["mup"]["slope"] == 0.3


@pytest.mark.parametrize("changes, field", [
    ({"level": 1.0}, "laws.mup.level"),  # read every interval as exact: the prior thrown away
    ({"level": 2.0}, "laws.mup.level"),  # a NaN posterior: the law silently dropped
    ({"level": "0.95"}, "laws.mup.level"),
    ({"posterior": {"centre": 0.4, "low": 0.6, "high": 0.2}}, "laws.mup.posterior"),  # low > high
    ({"posterior": {"centre": "0.4", "low": 0.2, "high": 0.6}}, "laws.mup.posterior.centre"),  # report: traceback
    ({"posterior": {"centre": 0.4, "low": 0.2, "high": 0.6, "weight": 7}}, "laws.mup.posterior.weight"),
    ({"prior": {"centre": 0.5, "spread": -0.25, "low": 0.0, "high": 1.0}}, "laws.mup.prior.spread"),
])
def test_a_hand_edited_law_is_one_line_naming_its_field(tmp_path, changes, field):
    path = write_law_summary(tmp_path, **changes)
    with pytest.raises(InputError, match=f"field {re.escape(field)}"):
        load_summary(path, tmp_path)


@pytest.mark.parametrize("level", [0.0, 1.0, 2.0, math.nan])
def test_a_posterior_refuses_a_level_outside_0_1(level):
    with pytest.raises(ValueError, match="level"):
        posterior(BATCH_ADAM, 0.4, 0.2, 0.6, level)
