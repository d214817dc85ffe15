"""The final loss predicted from the full run's own curve (sweep/forecast/live.py: `ratios`, `latest_final`;
trainer/predicted.py: `refined_columns`): the ladder's loss ratios L(f)/L(1) on the run's schedule, a line in ln
width carried to its width, and the run's evaluation at f divided by it."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from sweep.forecast.live import REFINE_FROM, latest_final, ratios
from trainer.config import ConfigError, RunConfig
from trainer.predicted import FINAL, refined_columns

END = {"width": 128, "depth": 2, "batch_size": 16, "step": 200, "tokens": 200 * 16 * 32}
FRACTIONS = np.linspace(0.1, 1.0, 10)


def true_ratio(width: float, fraction):
    """A collapse that drifts with width: wider runs fall further after f (the benchmark's ladders did)."""
    return 1 + (0.30 + 0.02 * np.log(width)) * (1 - np.asarray(fraction))


def rungs(noise: float = 0.0, rng=None, widths=(16, 32, 64), seeds: int = 2, **schedule) -> list[pd.DataFrame]:
    step = FRACTIONS * END["step"]
    out = []
    for width in widths:
        for _ in range(seeds):
            final = 2.0 + 0.1 * np.log(128 / width)
            shaken = true_ratio(width, FRACTIONS) + (rng.normal(0, noise, len(step)) if noise else 0)
            shaken[-1] = 1.0  # the ratio of the end to itself
            out.append(pd.DataFrame({"step": step, "tokens": step * 16 * 32, "val_loss": final * shaken,
                                     "width": width, "depth": 2, "batch_size": 16, **schedule}))
    return out


def test_a_noise_free_ladder_gives_the_targets_ratio_exactly():
    refine = ratios(rungs(), END)
    kept = FRACTIONS[(FRACTIONS >= REFINE_FROM - 1e-9) & (FRACTIONS < 1)]  # from half the run, before its end
    np.testing.assert_allclose(refine["fraction"], kept)
    np.testing.assert_allclose(refine["ratio"], true_ratio(128, kept))
    np.testing.assert_allclose(refine["half"], 0, atol=1e-9)
    assert refine["runs"] == 6 and refine["widths"] == [16, 32, 64]


def test_the_interval_holds_the_targets_ratio_95_percent_of_the_time():
    """Coverage on synthetic ladders with a known answer: each run's ratio carries Gaussian noise (sd 1 %), the
    target's too; the interval is least squares' prediction interval, so it holds the target's ratio in 95 % of
    ladders, neither much more (too wide to hold a run to) nor less."""
    rng, sd, held, halves = np.random.default_rng(7), 0.01, 0, []
    for _ in range(600):
        refine = ratios(rungs(sd, rng), END)
        at = 0  # fraction 0.5, the first given
        truth = true_ratio(128, refine["fraction"][at]) + rng.normal(0, sd)
        held += abs(truth - refine["ratio"][at]) <= refine["half"][at]
        halves.append(refine["half"][at])
    assert 0.92 <= held / 600 <= 0.98, held / 600
    assert np.median(halves) < 5 * sd  # t(0.975, 4)·√(1 + leverage) ≈ 3.4 sd: no wider than the noise asks


def test_only_runs_on_the_full_runs_schedule_and_two_widths_give_ratios():
    assert ratios(rungs(widths=(64,), seeds=3), END) is None  # one width: no line
    assert ratios(rungs(widths=(32, 64), seeds=1), END) is None  # two runs leave no residual
    off = rungs(seeds=1, widths=(16, 32)) + [r.assign(batch_size=32) for r in rungs(seeds=2, widths=(64,))]
    assert ratios(off, END) is None  # the batch-32 runs are on another schedule: two runs left
    assert ratios(rungs(widths=(16, 32, 128, 256)), END)["widths"] == [16, 32]  # as wide as the run or wider: out


def test_the_trainer_logs_the_final_its_evaluation_predicts_within_the_ratios_fractions():
    refine = {"fraction": [0.5, 0.8], "ratio": [1.3, 1.1], "half": [0.1, 0.05]}
    got = refined_columns({"refine": refine}, 0.8, 2.2)
    assert list(got) == list(FINAL)
    np.testing.assert_allclose(list(got.values()), [2.2 / 1.1, 2.2 / 1.15, 2.2 / 1.05])
    np.testing.assert_allclose(refined_columns({"refine": refine}, 0.65, 1.2)["predicted_final"], 1.2 / 1.2)
    assert refined_columns({"refine": refine}, 0.4, 2.0) == {} and refined_columns({"refine": refine}, 0.9, 2.0) == {}
    early = {**refine, "fraction": [0.2, 0.8]}
    assert refined_columns({"refine": early}, 0.3, 2.0) == {}  # before REFINE_FROM, whatever the table says
    assert refined_columns({}, 0.5, 2.0) == {}


@pytest.mark.parametrize("refine, why", [
    ({"fraction": [0.5], "ratio": ["1.1"], "half": [0.1]}, "lists of finite numbers"),
    ({"fraction": [0.5, 0.6], "ratio": [1.1], "half": [0.1]}, "of one length"),
    ({"fraction": [0.5], "ratio": [float("nan")], "half": [0.1]}, "finite"),
    ({"fraction": [0.6, 0.5], "ratio": [1.1, 1.0], "half": [0.1, 0.1]}, "rise within"),
    ({"fraction": [1.5], "ratio": [1.1], "half": [0.1]}, "rise within"),
    ([0.5, 1.1], "must map"),
    ({"fraction": [0.5, 0.6], "ratio": [1.1, 0.1], "half": [0.1, 0.1]}, "half in [0, ratio)"),  # a division by 0
    ({"fraction": [0.5], "ratio": [0.0], "half": [0.0]}, "each ratio within"),  # an outside tester: a crash mid-run
    ({"fraction": [0.5], "ratio": [1.1], "half": [-0.1]}, "half in [0, ratio)"),
    ({"fraction": [0.5], "ratio": [1e-300], "half": [0.0]}, "each ratio within"),  # a final of 2e300 logged
    ({"fraction": [0.1, 0.5], "ratio": [1.5, 1.1], "half": [0.1, 0.1]}, "from 0.5 of the run on"),
    ({"fraction": [0.5], "ratio": [1.1], "half": [0.1], "extra": 1}, "unknown key 'extra'"),
    ({"fraction": [0.5], "ratio": [1.1], "half": [0.1], "runs": "six"}, "runs, a whole number"),
    ({"fraction": [0.5], "ratio": [1.1], "half": [0.1], "widths": [-1, 0]}, "two positive whole numbers"),
])
def test_a_hand_edited_refine_is_refused_at_load_naming_the_field(refine, why):
    """The trainer reads it at every evaluation: a bad table would stop a run at its first one, after its
    start-up was paid; refused when the config is read, naming provenance.prediction."""
    with pytest.raises(ConfigError, match="provenance.prediction") as err:
        RunConfig.parse({"steps": 10, "provenance": {"prediction": {"refine": refine}}})
    assert why in str(err.value)


@pytest.mark.parametrize("prediction", [
    {"loss": 2.0, "low": 1.9, "high": float("inf")}, {"loss": float("nan"), "low": 1.9, "high": 2.1},
    {"loss": "low", "low": 1.9, "high": 2.1}, {"loss": 2.0, "low": 3.0, "high": 1.0}, {"low": 1.9, "high": 2.1},
    {"loss": -1.0, "low": -2.0, "high": -0.5}, {"loss": 2.0, "low": 1.9, "high": 2.1, "level": 2.0},
    {"level": 0.9}, {"refine": {"fraction": [], "ratio": [], "half": []}},  # second tester: `sweep report` crashed
    {"loss": 2.0, "low": 1.9, "high": 2.1, "levle": 0.9},  # a key transfer never writes was kept without a word
    {"loss": 2.0, "low": 1.9, "high": 2.1, "curve": {"fraction": [0.5, 1.0], "loss": [2.0, 2.0], "low": [2.5, 2.5],
                                                     "high": [1.0, 1.0]}}])  # a band running backwards
def test_a_hand_edited_final_interval_is_refused_at_load(prediction):
    """Found by an outside tester: each launched and trained, then `sweep status`, `report` and `compare` refused
    every run while this one was under the results root."""
    with pytest.raises(ConfigError, match="provenance.prediction"):
        RunConfig.parse({"steps": 10, "provenance": {"prediction": prediction}})


def test_the_latest_final_is_the_last_logged_one_up_to_a_step():
    rows = pd.DataFrame({"step": [10, 20, 30, 40], "val_loss": [3.0, 2.5, 2.2, 2.0],
                         "predicted_final": [np.nan, 2.1, 2.05, 2.01], "predicted_final_low": [np.nan, 2.0, 2.0, 2.0],
                         "predicted_final_high": [np.nan, 2.2, 2.1, 2.02]})
    assert latest_final(rows) == {"step": 40, "loss": 2.01, "low": 2.0, "high": 2.02}
    assert latest_final(rows, until=25)["step"] == 20
    assert latest_final(rows, until=15) is None and latest_final(rows.drop(columns=list(FINAL))) is None


def test_the_report_says_what_the_runs_own_curve_predicted_by_half_the_run():
    from sweep.results.decide import verdict

    rows = pd.DataFrame({"step": [10, 20, 30, 40], "val_loss": [3.0, 2.5, 2.2, 2.0],
                         "predicted_low": [2.5, 2.2, 2.0, 1.9], "predicted_high": [3.5, 2.8, 2.4, 2.1],
                         "predicted_final": [2.1, 2.05, 2.02, np.nan], "predicted_final_low": [2.0, 2.0, 2.0, np.nan],
                         "predicted_final_high": [2.2, 2.1, 2.04, np.nan]})
    said = verdict(rows, 40)
    assert said.startswith("inside its predicted band") and "at step 20 its own curve predicted a final 2.0500" in said
    assert "above" not in verdict(rows, 40, {"loss": 2.0, "low": 1.9, "high": 2.05})  # [2.0, 2.1] overlaps it
    held_lower = verdict(rows, 40, {"loss": 1.9, "low": 1.8, "high": 1.95})  # wholly under [2.0, 2.1]
    assert held_lower.endswith("[2.0000, 2.1000], <b>above the interval it was held to</b>; it ended at 2.0000")
    # found by an outside tester: a run with no band logged showed only why, not what its own curve predicted
    unbanded = verdict(rows.drop(columns=["predicted_low", "predicted_high"]), 40, {"loss": 2.0, "low": 1.9,
                                                                                    "high": 2.1, "no_band": "why"})
    assert unbanded == "no live band: why; at step 20 its own curve predicted a final 2.0500 [2.0000, 2.1000]; it " \
                       "ended at 2.0000"
    lower = rows.assign(val_loss=[3.0, 2.5, 2.2, 1.95])  # a second tester: a miss of its own interval went unsaid
    assert verdict(lower, 40).endswith("it ended at 1.9500, <b>outside what its own curve predicted</b>")


def test_transfer_reads_every_seed_of_the_width_ladders_best_run(tmp_path):
    """The ratios are priced on every seed (one per width would leave one residual, t(0.975, 1) = 12.7), the band
    and the ceiling on the first: `ladder_runs(every_seed=True)` reads each seed's curve of the best trial."""
    from sweep.rules.ladder import ladder_runs
    from sweep.rules.summary import axis_folder
    from trainer.curves import CurveWriter

    folder = axis_folder("v", "optimizer.lr")
    (tmp_path / folder).mkdir()
    points = pd.DataFrame({"parametrization": "mup", "width": [32, 32, 32, 32], "trial": [0, 0, 1, 1],
                           "loss": [2.0, 2.1, 2.5, 2.6]})
    points.to_parquet(tmp_path / folder / "points.parquet")
    for trial in (0, 1):
        for seed in (0, 1):
            writer = CurveWriter(tmp_path / folder / "curves", folder, "proxy", f"w32-mup-t{trial:05d}-s{seed}")
            for step in (10, 20):
                writer.log({"step": step, "val_loss": 3.0 - step / 100 + seed + 10 * trial, "width": 32})
            writer.close()
    first, every = ladder_runs(str(tmp_path), "v"), ladder_runs(str(tmp_path), "v", every_seed=True)
    assert [r["val_loss"].iloc[-1] for r in first] == [2.8]  # trial 0 (the lower mean loss), seed 0
    assert [r["val_loss"].iloc[-1] for r in every] == [2.8, 3.8]


def test_transfer_says_why_the_ladder_gives_no_ratios():
    from sweep.forecast.live import without_ratios

    few = rungs(widths=(32, 64), seeds=1)
    assert ratios(few, END) is None
    assert without_ratios(few, END).startswith("the ladder ran 2 run(s) on its schedule (depth 2, batch 16, 200 "
                                               "steps) narrower than width 128 (widths: 32, 64); 3 or more")
    early = [r[(r["step"] < 0.5 * END["step"]) | (r["step"] == END["step"])] for r in rungs()]  # nothing from half on
    assert ratios(early, END) is None
    assert "give no ratio with an interval from 50% of the run" in without_ratios(early, END)


def test_transfer_reads_the_own_curve_runs_sweep_plan_bought(tmp_path):
    """`sweep verify --plan` runs the plan's own-curve entry as a width ladder on the full run's schedule, in a folder
    of its own (summary.py `schedule_folder`); `ladder_runs(every_seed=True)` reads every seed of its best trial at
    each width there, and those give the loss ratios `sweep transfer` records (none were read before)."""
    from sweep.rules.ladder import ladder_runs
    from sweep.rules.summary import schedule_folder
    from trainer.curves import CurveWriter

    folder = schedule_folder("v", "optimizer.lr", END["depth"], END["batch_size"], END["tokens"])
    (tmp_path / folder).mkdir()
    runs = rungs(widths=(32, 64))
    points = pd.DataFrame({"parametrization": "mup", "width": [32] * 4 + [64] * 4, "trial": [0, 0, 1, 1] * 2,
                           "loss": [3.0, 3.1, 2.0, 2.1] * 2})  # trial 1 the best at each width
    points.to_parquet(tmp_path / folder / "points.parquet")
    for i, rows in enumerate(runs):
        width, seed = int(rows["width"].iloc[0]), i % 2
        writer = CurveWriter(tmp_path / folder / "curves", folder, "proxy", f"w{width}-mup-t00001-s{seed}")
        for row in rows.to_dict("records"):
            writer.log({**row, "step": int(row["step"])})
        writer.close()
    every = ladder_runs(str(tmp_path), "v", every_seed=True)
    assert len(every) == 4 and sorted({int(r["width"].iloc[-1]) for r in every}) == [32, 64]
    refine = ratios(every, END)
    assert refine["runs"] == 4 and refine["widths"] == [32, 64]
    np.testing.assert_allclose(refine["ratio"], true_ratio(128, refine["fraction"]))
