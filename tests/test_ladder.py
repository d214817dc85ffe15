"""Issue 20's ladder: the vertex fit, the law along an axis with its interval, fitted transfer, the predicted loss
and the run held to it, on synthetic data and on real (tiny) runs."""
import json
import math
import re
from pathlib import Path

import numpy as np
import optuna
import pandas as pd
import pytest
import yaml
from rich.console import Console

from sweep.errors import InputError
from sweep.rules import Target
from sweep.rules.fitted import Law
from sweep.rules.ladder import ladder_points, measured_anchors, measured_laws, predicted_loss, tuning_compute
from sweep.rules.plan import transfer_run
from sweep.rules.summary import certificate, interval_text, load_summary, read_summary, write_summary
from sweep.study.lookup import read_curve
from sweep.transfer.command import combined, explain
from sweep.verify.fit import vertex
from sweep.verify.grid import parse_number
from sweep.verify.law import LEVEL, fit_law
from tests.sweep_helpers import VERIFY_SPEC as SPEC
from tests.sweep_helpers import load
from trainer.config import Provenance, RunConfig


def test_the_vertex_loss_never_sits_above_the_best_run_point_on_an_asymmetric_valley():
    """The bug: a least-squares parabola through five points of a valley steep on one side put its vertex loss
    0.039 above every point run; the three-point parabola cannot."""
    x = np.arange(-10.0, -3.0)
    y = np.where(x < -7, 2.0 + 0.1 * np.abs(x + 7), 2.0 + 0.4 * np.abs(x + 7))  # a sharp valley, steep right
    best = vertex(x, y)  # the five-point least-squares vertex: 2.033 at −7.7, above the run point 2.0 at −7
    assert best.fitted and best.loss <= y.min() and -8 <= best.x <= -6
    assert best.residual > 0  # the parabola through −8, −7, −6 mispredicts −9 and −5
    exact = vertex(x, 0.1 * (x + 6.6) ** 2 + 2.0)
    assert exact.residual == pytest.approx(0.0, abs=1e-12) and not exact.poor


def test_a_run_that_blew_up_but_ended_finite_is_diverged_not_a_neighbour_of_the_vertex():
    """Found by an outside tester: a 10-step run at the top LR ended at loss 8598 (too short for the trainer to stop
    it) beside the best point; the parabola through it put the optimum's loss at −1073, not flagged poor."""
    from sweep.verify.analysis import optima

    x = np.arange(-5.0, 2.0)
    loss = [1.30, 1.25, 1.20, 1.15, 1.10, 1.05, 8598.47]  # the best point beside the blown-up one
    points = pd.DataFrame({"parametrization": "mup", "steps": 10, "x": x, "value": 2.0 ** x, "seed": 0,
                           "loss": loss, "loss_init": 1.39, "trial": range(7)})
    (row,) = optima(points, "steps").to_dict(orient="records")
    assert row["diverged"] == 1 and not row["fitted"] and row["poor_fit"]
    assert row["loss"] == row["best_loss"] == 1.05 and row["optimum"] == 1.0  # the best run, beside a divergence


def test_a_valley_the_grid_does_not_resolve_is_flagged_poor():
    x = np.arange(7.0)
    assert vertex(x, np.array([3.0, 2.5, 2.0, 2.0, 1.9, 2.4, 2.6])).poor is False
    noisy = np.array([2.0, 2.3, 1.95, 1.9, 1.93, 2.4, 1.96])  # a 0.03-deep dip in 0.3 of noise
    assert vertex(x, noisy).poor
    assert vertex(x, x.astype(float)).poor  # the edge: nothing fitted


def ladder(slope: float, rng, seeds=3, jitter=0.15, noise=0.01, values=(8, 16, 32, 64)) -> pd.DataFrame:
    rows = []
    for at in values:
        for seed in range(seeds):
            top = -7 + slope * np.log2(at / values[0]) + rng.normal(0, jitter)
            for x in np.arange(-11.0, -2.0):
                rows.append(dict(parametrization="mup", batch_size=at, x=x, seed=seed, loss_init=5.0,
                                 loss=0.08 * (x - top) ** 2 + 2 + rng.normal(0, noise)))
    return pd.DataFrame(rows)


def test_a_known_exponent_is_recovered_within_its_interval_at_the_stated_coverage():
    """20 synthetic ladders (seed jitter 0.15 octave, grid noise 0.01): the true s = ½ lies inside the 95% interval
    in at least 17 (a binomial 95% lower bound; an interval of seed noise only, or none, holds it far less)."""
    laws = [fit_law(ladder(0.5, np.random.default_rng(r)), "batch_size") for r in range(20)]
    assert LEVEL == 0.95
    inside = sum(law["low"] <= 0.5 <= law["high"] for law in laws)
    assert inside >= 17, [(law["low"], law["high"]) for law in laws]
    assert np.mean([law["slope"] for law in laws]) == pytest.approx(0.5, abs=0.05)
    assert max(law["high"] - law["low"] for law in laws) < 0.5  # an interval, not the whole line


def test_a_noiseless_ladder_has_the_exact_slope_and_no_width():
    law = fit_law(ladder(-0.3, np.random.default_rng(0), seeds=1, jitter=0, noise=0), "batch_size")
    assert law["slope"] == pytest.approx(-0.3, abs=1e-6) and law["high"] - law["low"] == pytest.approx(0, abs=1e-6)
    # found by an outside tester: equal optima at every width fit a slope of -8e-17 with no width, and μP's
    # certificate said the interval excluded 0: FAIL, beside a drift of 0.00 octaves
    flat = {"slope": -8.1e-17, "low": -8.1e-17, "high": -8.1e-17, "at": [16, 32], "level": 0.95}
    assert certificate("width", "mup", flat, 1.0)["passed"] is True
    assert "inside s = 0 ± 1.00 — pass" in certificate("width", "mup", flat, 1.0)["certificate"]


def test_a_law_without_an_interval_claims_nothing_and_is_strict_json(tmp_path):
    """Found by an outside tester: with no interval the law still said "outside the interval" / "FAIL", and
    summary.json held NaN (not JSON)."""
    law = {"slope": 0.7, "low": math.nan, "high": math.nan, "at": [4, 8, 16], "level": 0.95}
    for axis in ("width", "batch_size", "tokens"):
        said = certificate(axis, "mup", law, 1.0)
        assert said["passed"] is None and "interval" in said["certificate"] and "FAIL" not in said["certificate"]
    assert interval_text(law).startswith("(no interval")
    write_summary(tmp_path, {"laws": {"mup": law}})
    read = json.loads((tmp_path / "summary.json").read_text(), parse_constant=lambda c: pytest.fail(c))
    assert read["laws"]["mup"]["low"] is None
    with pytest.raises(InputError, match="--values: '2\\^9999' is not a finite number"):
        parse_number("2^9999", "--values")


GOOD = {"axis": "batch_size", "source": "v-w32-mup#0", "grid": [0.001, 0.1], "values": [16, 64], "widths": [32],
        "laws": {"mup": {"slope": 0.4, "low": 0.3, "high": 0.5, "at": [16, 64]}},
        "shapes": [{"at": 16, "width": 32, "depth": 2, "batch_size": 16, "params": 1000, "tokens": 1280}],
        "optima": [{"parametrization": "mup", "batch_size": 16, "optimum": 0.01, "fitted": True, "poor_fit": False}]}


@pytest.mark.parametrize("edit, field", [
    (("laws", "mup", "slope", 2000), "laws.mup.slope"), (("laws", "mup", "slope", "abc"), "laws.mup.slope"),
    (("laws", "mup", "high", math.nan), "laws.mup.high"), (("laws", "mup", "at", []), "laws.mup.at"),
    (("laws", "mup", "at", [0, 32]), "laws.mup.at"),
    # found by a second outside tester: a string or a bool was read as a number, a missing key or a list where a
    # number goes was a traceback, a slope outside its own interval was applied
    (("laws", "mup", "slope", "0.45"), "laws.mup.slope"), (("laws", "mup", "at", ["16", "64"]), "laws.mup.at.0"),
    (("laws", "mup", "slope", 5.0), "laws.mup"), (("optima", 0, "optimum", "0.006"), "optima.0.optimum"),
    (("optima", 0, "optimum", True), "optima.0.optimum"), (("optima", 0, "optimum", -0.01), "optima.0.optimum"),
    (("optima", 0, "parametrization", None), "optima.0.parametrization"), (("optima", 0, "batch_size", [16]), "optima"),
    (("optima", {"a": 1}), "optima"), (("optima", 0, "x"), "optima.0"), (("shapes", "x"), "shapes"),
    (("shapes", 0, "at", [8]), "shapes.0.at"), (("shapes", 0, "at", None), "shapes.0.at"),
    (("source", 5), "source"), (("source", "t-w16-mup#0\u001b[31mRED\u0007"), "source"), (("grid", ["a"]), "grid.0"),
    (("laws", "\u001b]0;pwn", {}), "laws.\\x1b]0;pwn.[key]"),
    (("optima", 0, "parametrization", "μp"), "optima.0.parametrization"),
    (("widths", ["32"]), "widths.0"),
    (("parametrizations", {"mup": {"drift": "0.2"}}), "parametrizations.mup.drift"),
    # found by a third outside tester: a loss of 1e308 overflowed the loss law into a traceback after the config
    # was written; a copied ladder folder edited to claim another width, or values its rows are not at, was read
    (("optima", 0, "best_loss", 1e308), "optima.0.best_loss"), (("values", [16, 32]), "optima"),
    (("widths", [64]), "shapes"),
    # found by a fourth: 6·N·D of a shape's 1e305 parameters overflowed the tuning compute into a traceback after
    # the config was written; 1e300 tokens printed a 140-digit share
    (("shapes", 0, "params", 1e305), "shapes.0.params"), (("shapes", 0, "tokens", 1e300), "shapes.0.tokens"),
    (("shapes", 0, "tokens", 1e-300), "shapes.0.tokens"), (("shapes", 0, "width", 2**30), "shapes.0.width")])
def test_a_hand_edited_summary_is_one_line_naming_its_field(tmp_path, edit, field):
    """Found by outside testers: these were an OverflowError, a TypeError, a KeyError, a ValueError, or a config
    written from a value no verify could write."""
    summary, (*where, last, value) = json.loads(json.dumps(GOOD)), edit
    node = summary
    for key in where:
        node = node[key]
    node[last] = value
    (tmp_path / "summary.json").write_text(json.dumps(summary))
    with pytest.raises(InputError, match=f"summary.json: field {re.escape(field)}: .*; rerun the `sweep verify`") \
            as err:
        load_summary(tmp_path / "summary.json", tmp_path)
    assert str(err.value).isprintable()  # no terminal escape from the file reaches the screen
    (tmp_path / "summary.json").write_text(json.dumps(GOOD))
    assert load_summary(tmp_path / "summary.json", tmp_path) == GOOD


def test_a_summary_that_names_another_setting_or_axis_or_loops_is_refused(tmp_path):
    folder = tmp_path / "v-verify-lr-across-batch_size"
    write_summary(folder, {**GOOD, "param": "optimizer.weight_decay"})
    with pytest.raises(InputError, match="field param: 'optimizer.weight_decay', where its folder holds "
                                         "'optimizer.lr'"):
        read_summary(tmp_path, "v", "optimizer.lr", "batch_size")
    write_summary(folder, {**GOOD, "axis": "steps", "values": [], "optima": [{**GOOD["optima"][0], "steps": 40}]})
    with pytest.raises(InputError, match="field axis: 'steps', where its folder holds 'batch_size'"):
        read_summary(tmp_path, "v", "optimizer.lr", "batch_size")
    (folder / "summary.json").unlink()
    (folder / "summary.json").symlink_to("summary.json")  # a link to itself
    with pytest.raises(InputError, match="verify summary: .*summary.json cannot be resolved"):
        read_summary(tmp_path, "v", "optimizer.lr", "batch_size")


def test_one_seed_at_two_values_gives_no_interval_rather_than_a_false_one():
    """Two curves fix a line exactly: the optimum's scatter about it is not seen (one seed), so no interval."""
    points = ladder(0.5, np.random.default_rng(0), seeds=1, values=(8, 16))
    law = fit_law(points, "batch_size")
    assert np.isfinite(law["slope"]) and np.isnan(law["low"]) and np.isnan(law["high"])


PROXY = RunConfig.parse({"model": {"name": "mlp", "width": 32, "depth": 2},
                         "data": {"kind": "synthetic-vectors", "options": {"in_features": 16, "classes": 10}},
                         "optimizer": {"name": "adamw", "lr": 0.01, "weight_decay": 0.1}, "batch_size": 32,
                         "steps": 40})
LR_BATCH = Law("optimizer.lr", "batch_size", 0.4, 0.3, 0.5, (16.0, 64.0), "v-verify-lr-across-batch_size")


def test_a_fitted_law_scales_the_lr_with_its_interval_beside_the_textbook_values():
    result = transfer_run(PROXY, Target(width=64, batch_size=128, batch_rule="fitted"), 1, laws=(LR_BATCH,))
    assert result.config.optimizer.lr == pytest.approx(0.01 * 4 ** 0.4)
    (law,) = result.laws
    assert law["interval"] == pytest.approx([0.01 * 4 ** 0.3, 0.01 * 4 ** 0.5])
    assert law["textbook"] == pytest.approx({"linear": 0.04, "sqrt": 0.02}) and not law["extrapolated"]
    assert result.warnings == []
    wide = Law("optimizer.lr", "batch_size", 0.2, -0.45, 1.1, (16.0, 64.0), "v-verify-lr-across-batch_size")
    result = transfer_run(PROXY, Target(width=64, batch_size=128, batch_rule="fitted"), 1, laws=(wide,))
    assert result.warnings == ["--batch-rule fitted: the optimizer.lr law's interval [-0.45, 1.10] holds the "
                               "square-root (½) and the linear (1) rule, so it does not decide between them; more "
                               "seeds, a finer --range or more values narrow it"]
    assert any(c.rule == "batch_size.fitted" and c.field == "optimizer.lr" for c in result.changes)


def test_a_fitted_batch_law_moves_adams_moments_by_the_sde_rule_unless_a_law_measured_them():
    """Classic bug: the LR law carried alone at 4× the batch, with β1 and ε left at the proxy's (the law was measured
    with them moving as one batch change would): Malladi et al. 2022's moments at κ = 4."""
    result = transfer_run(PROXY, Target(width=64, batch_size=128, batch_rule="fitted"), 1, laws=(LR_BATCH,))
    opt = result.config.optimizer
    assert (opt.beta1, opt.beta2, opt.eps) == pytest.approx((1 - 4 * (1 - 0.9), 1 - 4 * (1 - 0.95), 1e-8 / 2))
    assert not any(c.rule.startswith("horizon.beta2") for c in result.changes)
    beta2 = Law("optimizer.beta2", "batch_size", 0.0, -0.1, 0.1, (16.0, 64.0), "v-verify-beta2-across-batch_size")
    opt = transfer_run(PROXY, Target(width=64, batch_size=128, batch_rule="fitted"), 1,
                       laws=(LR_BATCH, beta2)).config.optimizer
    assert (opt.beta1, opt.beta2) == pytest.approx((0.6, 0.95))  # the measured flat law, not the SDE's 0.8
    with pytest.raises(InputError, match="--batch-rule fitted: κ = 16 makes beta1 = 1 − κ"):
        transfer_run(PROXY, Target(width=64, batch_size=512, batch_rule="fitted", extrapolate=True), 1,
                     laws=(LR_BATCH,))


def test_a_target_past_the_measured_range_is_refused_unless_asked_and_then_flagged():
    target = Target(width=64, batch_size=256, batch_rule="fitted")  # 4× past the range 16–64
    with pytest.raises(InputError, match=r"--batch-rule fitted: batch_size 32 → 256 reaches 4× past the range 16–64"):
        transfer_run(PROXY, target, 1, laws=(LR_BATCH,))
    # found by an outside tester: only the target's end was checked, so a law measured over batch 128–256 carried
    # the proxy's batch 32 across 32–128, where nothing was measured
    high = Law("optimizer.lr", "batch_size", 0.4, 0.3, 0.5, (128.0, 256.0), "v-verify-lr-across-batch_size")
    with pytest.raises(InputError, match=r"batch_size 32 → 256 reaches 4× past the range 128–256"):
        transfer_run(PROXY, target, 1, laws=(high,))
    edge = Law("optimizer.lr", "batch_size", 0.4, 0.3, 0.5, (16.0, 63.99999999), "v-verify-lr-across-batch_size")
    with pytest.raises(InputError, match=r"reaches more than 2× past the range 16–64 .* \(at most 2×\)"):
        transfer_run(PROXY, Target(width=64, batch_size=128, batch_rule="fitted"), 1, laws=(edge,))
    result = transfer_run(PROXY, Target(**{**target.__dict__, "extrapolate": True}), 1, laws=(LR_BATCH,))
    fitted = [c for c in result.changes if c.rule == "batch_size.fitted"]
    assert result.laws[0]["extrapolated"] and "EXTRAPOLATED" in fitted[0].formula
    with pytest.raises(InputError, match="--horizon-rule fitted: no law of optimizer.lr with an interval "
                                         "measured across tokens"):
        transfer_run(PROXY, Target(width=64, steps=80, horizon="fitted"), 1, laws=(LR_BATCH,))
    kept = transfer_run(PROXY, Target(width=64, horizon="fitted"), 1)  # nothing to fit: said, not silent
    assert kept.warnings == ["--horizon-rule fitted: the target keeps the proxy's tokens (1280), so no law applies "
                             "along it"]


def test_a_fitted_depth_law_moves_the_lr_with_depth_even_without_a_depth_rule_in_the_model():
    depth = Law("optimizer.lr", "depth", -0.5, -0.7, -0.3, (2.0, 8.0), "v-verify-lr-across-depth")
    result = transfer_run(PROXY, Target(width=64, depth=4, depth_rule="fitted"), 1, laws=(depth,))
    assert (result.config.model.depth, result.config.optimizer.lr) == (4, pytest.approx(0.01 * 2 ** -0.5))
    with pytest.raises(InputError, match="--depth: μP transfers across width, not depth"):
        transfer_run(PROXY, Target(width=64, depth=4), 1, laws=(depth,))  # the model's own rule: it has none


def test_a_weight_decay_law_replaces_the_textbook_timescale_rule():
    wd = Law("optimizer.weight_decay", "batch_size", -1.0, -1.2, -0.8, (16.0, 64.0), "v-verify-weight_decay-…")
    result = transfer_run(PROXY, Target(width=64, batch_size=64, batch_rule="fitted"), 1, laws=(LR_BATCH, wd))
    assert result.config.optimizer.weight_decay == pytest.approx(0.05)
    assert not any(c.rule.startswith("horizon.weight_decay") for c in result.changes)


def test_a_law_through_poor_optima_says_so_and_two_laws_on_one_setting_show_their_compounded_interval(tmp_path):
    """Found by an outside tester: a law fitted through optima verify flagged poor carried no remark into transfer,
    and with batch and horizon laws both moving the LR only the last law's interval was shown."""
    write_summary(tmp_path / "v-verify-lr-across-batch_size",
                  {"laws": {"mup": {"slope": 0.4, "low": 0.3, "high": 0.5, "at": [16, 64], "poor_at": [64.0]}}})
    (batch_law,) = measured_laws(str(tmp_path), "v", prior="none")  # the measured figures, as they are
    assert batch_law.poor_at == (64.0,)
    tokens = Law("optimizer.lr", "tokens", -0.5, -0.7, -0.3, (640.0, 5120.0), "v-verify-lr-across-tokens")
    target = Target(width=64, batch_size=64, steps=80, batch_rule="fitted", horizon="fitted")  # 2× batch, 4× tokens
    result = transfer_run(PROXY, target, 1, laws=(batch_law, tokens))
    (*values, axes), = combined(result.laws).values()
    assert values == pytest.approx((0.01, 0.01 * 2 ** -0.6, 0.01 * 2 ** (0.3 - 1.4), 0.01 * 2 ** (0.5 - 0.6)))
    assert list(combined(result.laws)) == ["optimizer.lr"] and axes == ["batch_size", "tokens"]
    console = Console(width=300, record=True)
    explain(Provenance(laws=result.laws, tuning={"proxy_flops": 1, "verify_flops": 1, "full_flops": 4, "share": 0.5}),
            None, [], Path("spec.yaml"), console)
    shown = console.export_text()
    assert "fitted through poor optima at batch_size 64" in shown
    assert f"fitted optimizer.lr across batch_size and tokens: 0.01 → {0.01 * 2 ** -0.6:.4g}" in shown


def test_batch_and_horizon_laws_composed_at_a_batch_the_horizon_was_not_measured_at_say_the_interaction_is_unmeasured(
        tmp_path):
    """Found by the transfer benchmark: at 4× batch and 4× tokens the batch law (tokens held) times the horizon law
    (measured at the proxy's batch 8) set the LR 0.55 octave below the target's optimum, outside the compounded
    interval: at batch 32 the optimum barely moved with the horizon. The horizon law records its ladder's batch, and
    transfer says where the product assumes a slope that no ladder measured at the target's batch."""
    shapes = [{"at": v, "params": 1000, "tokens": v * 32, "batch_size": 32} for v in (40, 80, 160)]
    write_summary(tmp_path / "v-verify-lr-across-steps", {"axis": "steps", "shapes": shapes, "laws": {
        "mup": {"slope": -0.4, "low": -0.5, "high": -0.3, "at": [40, 80, 160]}}})
    (horizon,) = measured_laws(str(tmp_path), "v")
    assert horizon.batch == 32 and LR_BATCH.batch is None
    said = "the horizon law was measured at batch 32 and the target trains at batch 64"
    both = Target(width=64, batch_size=64, steps=80, batch_rule="fitted", horizon="fitted")  # 2× batch, 4× tokens
    assert any(said in w for w in transfer_run(PROXY, both, 1, laws=(LR_BATCH, horizon)).warnings)
    at_its_batch = Target(width=64, batch_size=32, steps=160, batch_rule="fitted", horizon="fitted")  # 4× tokens
    longer = transfer_run(PROXY, at_its_batch, 1, laws=(LR_BATCH, horizon))
    assert not any("compose as independent" in w for w in longer.warnings)
    measured_there = Law(**{**horizon.__dict__, "batch": 64})
    assert not any("compose as independent" in w
                   for w in transfer_run(PROXY, both, 1, laws=(LR_BATCH, measured_there)).warnings)


def test_a_tokens_and_a_steps_ladder_are_one_horizon_law_and_one_set_of_loss_points(tmp_path):
    """Found by an outside tester: with both ladders (the same runs at one batch) the horizon law moved the LR twice
    and each run entered the loss fit twice; and a ladder at one width priced a wider target's width term at 0."""
    tokens = [640, 1280, 2560, 5120]  # four points: three fit the loss law exactly, leaving it no interval
    for axis, values in (("tokens", tokens), ("steps", [20, 40, 80, 160])):
        shapes = [{"at": v, "params": 1000, "tokens": t} for v, t in zip(values, tokens, strict=True)]
        optima = [{axis: v, "parametrization": "mup", "best_loss": loss}
                  for v, loss in zip(values, (3.0, 2.8, 2.7, 2.65), strict=True)]
        law = {"slope": -0.3, "low": -0.5, "high": -0.1, "at": values}
        summary = {"axis": axis, "laws": {"mup": law}, "shapes": shapes, "optima": optima}
        write_summary(tmp_path / f"v-verify-lr-across-{axis}", summary)
    (horizon,) = measured_laws(str(tmp_path), "v")
    assert (horizon.axis, horizon.source, horizon.measured) == ("tokens", "v-verify-lr-across-tokens", (640, 5120))
    assert ladder_points(str(tmp_path), "v") == ([1000] * 4, tokens, [3.0, 2.8, 2.7, 2.65])
    assert predicted_loss(str(tmp_path), "v", 4000, 2560)[0] == {}  # one N measured, a target of another
    assert predicted_loss(str(tmp_path), "v", 1000, 10240)[0]["form"]


def test_a_sweep_folder_linked_out_of_the_root_is_refused_and_a_copied_root_reads_none_of_the_old_ones_curves(
        tmp_path, run_cli, monkeypatch):
    """Found by an outside tester: a verify value's folder linked out of the root had its optuna.db written there,
    and a root copied elsewhere read the old root's curves through the paths its trials stored."""
    root, outside = tmp_path / "root", tmp_path / "outside"
    root.mkdir()
    outside.mkdir()
    monkeypatch.setenv("SWEEP_ROOT", str(root))
    (root / "v").symlink_to(outside, target_is_directory=True)
    (tmp_path / "spec.yaml").write_text(yaml.safe_dump(SPEC))
    code, _, err = run_cli("proxy", tmp_path / "spec.yaml", "--width", "32")
    assert code == 2 and err.count("\n") == 1 and "leads out of the results root" in err, err
    assert list(outside.iterdir()) == []
    monkeypatch.setattr("sweep.study.lookup.read_run", lambda folder: None if Path(folder).is_relative_to(
        root.resolve()) else pytest.fail(f"read {folder}"))  # its tail under this root, where it is missing
    trial = optuna.trial.create_trial(value=1.0, user_attrs={"curves": str(outside / "curves")})
    assert read_curve(trial, root) is None


@pytest.mark.parametrize("across, message", [
    ("optimizer.nosuch=1,2", "--across: 'optimizer.nosuch' is not an axis (not a RunConfig field (at optimizer: "),
    ("seed=1,2", "--across: 'seed' is not an axis (set by the sweep, not searchable"),  # it is a RunConfig path
    ("batch_size=16", "--across batch_size: at least two distinct values"),
    # found by an outside tester: a repeated value was dropped in silence, and the ladder ran shorter than typed
    ("batch_size=16,16,32", "--across batch_size: each value once, got '16,16,32' (16 more than once)"),
    ("tokens=0,1000", "--across tokens: values must be positive and finite"),
    ("steps=75,1e400", "--across steps: values must be positive and finite, got '75,1e400'"),  # 1e400 reads as inf
    ("depth=2,2.5", "--across depth: values must be whole numbers"),
    ("batch_size=6,8", "--across batch_size=6: run.batch_size: 6 is not divisible by grad_accum 4"),
    ("optimizer.lr=1e-3,1e-2", "--across optimizer.lr: the axis cannot be the setting on the grid"),
    # found by an outside tester: a huge batch trained (every trial a torch overflow) and tokens below one step
    # ran the same one-step run at every value, fitted into a "law"
    ("batch_size=1e30,8", "less than or equal to 16777216"),
    ("tokens=1,2", "--across tokens=1: one step is 32 tokens (batch 32), so the run would train 32 tokens, not 1"),
    ("tokens=640,1290", "--across tokens=1290: one step is 32 tokens (batch 32), so the run would train 1312 tokens, "
                        "not 1290; use whole numbers of steps"),
    ("width=16,1e9", "--across width: run.model.width"),
    ("batch_size=16,512", "--across batch_size=512: AdamW's moments at this batch: κ = 16 makes beta1 = 1 − κ"),
    # found by an outside tester: --widths beside --across was dropped in silence
    ("batch_size=16,32 --widths 32,64", "--widths: not used with --across batch_size=16,32"),
    # given at the default value, it was taken for not given (detected by comparing with the default)
    ("batch_size=16,32 --widths 32,64,128,256", "--widths: not used with --across batch_size=16,32"),
    ("steps=20,40 --ladder-width 0", "--ladder-width: a width from 1 to 1048576, got 0"),
    ("width=32,64 --ladder-width 64", "--ladder-width: for a ladder across another axis"),
    ("steps=20,40 --ladder-width 1000000000", "--ladder-width: at most 1048576 (a width), got 1000000000"),
    ("batch_size=16,32 --ladder-batch 64", "--ladder-batch: for a ladder across tokens or steps (the horizon), not "
                                           "batch_size"),
    ("width=32,64 --ladder-batch 64", "--ladder-batch: for a ladder across tokens or steps"),
    ("steps=20,40 --ladder-batch 0", "--ladder-batch: a batch size from 1 to 16777216, got 0"),
    ("steps=20,40 --ladder-batch 1000000000", "--ladder-batch: at most 16777216 (a batch size), got 1000000000"),
    ("steps=20,40 --ladder-batch 64 --ladder-width 64", "--ladder-batch: not with --ladder-width"),
    ("steps=20,40 --ladder-batch 512", "--ladder-batch 512: AdamW's moments at this batch: κ = 16 makes beta1 = 1 − κ"),
])
def test_bad_axes_are_one_line_exit_2_and_write_nothing(tmp_path, run_cli, monkeypatch, across, message):
    monkeypatch.setenv("SWEEP_ROOT", str(tmp_path))
    spec = tmp_path / "spec.yaml"
    spec.write_text(yaml.safe_dump({**SPEC, "run": {**SPEC["run"], "grad_accum": 4}}))
    before = sorted(tmp_path.rglob("*"))
    code, out, err = run_cli("verify", spec, "--trials-from", "spec", "--across", *across.split())
    assert code == 2 and err.count("\n") == 1 and message in err, (out, err)
    assert sorted(tmp_path.rglob("*")) == before


def test_a_fitted_transfer_from_a_measured_batch_law_round_trips_and_trains(tmp_path, run_cli, monkeypatch):
    """proxy sweep → verify across batch (tokens held) → transfer --batch-rule fitted → sweep train, each command in
    this process (a process of its own would import torch again; the sweeps' workers spawn from it)."""
    monkeypatch.setenv("SWEEP_ROOT", str(tmp_path))
    monkeypatch.chdir(tmp_path)
    spec = tmp_path / "spec.yaml"
    spec.write_text(yaml.safe_dump(SPEC))
    code, printed, err = run_cli("proxy", spec, "--width", "32")
    assert code == 0, printed + err
    code, printed, err = run_cli("verify", spec, "--across", "batch_size=16,64", "--range", "2^-11,2^-3,5",
                                 "--seeds", "2", "--refine", "0")  # one seed: no interval
    assert code == 0, printed + err
    summary = json.loads((tmp_path / "v-verify-lr-across-batch_size" / "summary.json").read_text())
    law = summary["laws"]["mup"]
    assert law["at"] == [16, 64] and law["low"] <= law["slope"] <= law["high"]
    assert {s["tokens"] for s in summary["shapes"]} == {40 * 32}  # the token budget held (a vector is a token)
    # found by an outside tester: the ladder kept Adam's moments while transfer moved them by the SDE rule
    ran = RunConfig.load(next((tmp_path / "v-verify-lr-across-batch_size-64").rglob("config.yaml")))
    assert (ran.optimizer.beta1, ran.optimizer.beta2, ran.optimizer.eps) == pytest.approx((0.8, 0.9, 1e-8 / 2 ** 0.5))
    assert f"s = {law['slope']:.3f}" in printed.replace("\n", "")
    code, _, err = run_cli("transfer", spec, "--width", "64", "--batch-size", "256", "--batch-rule", "fitted")
    assert code == 2 and "pass --extrapolate" in err and err.count("\n") == 1, err
    assert not (tmp_path / "v" / "transfer").exists()
    out = tmp_path / "full.yaml"
    code, said, err = run_cli("transfer", spec, "--width", "64", "--batch-size", "128", "--batch-rule", "fitted",
                              "--out", out)
    assert code == 0, err
    assert "optimizer.lr starts from the trial's value" in " ".join(said.split())  # batch 32 not on the ladder
    cfg = RunConfig.load(out)
    other = next(t.number for t in load(tmp_path, "v", 32).trials if t.number != cfg.provenance.trial)
    code, said, err = run_cli("transfer", spec, "--width", "64", "--batch-size", "128", "--batch-rule", "fitted",
                              "--trial", str(other), "--out", tmp_path / "other.yaml")
    assert code == 0, err  # found by an outside tester: another trial's law, applied silently
    assert (f"the law of optimizer.lr across batch_size was measured from the settings of v-w32-mup#"
            f"{cfg.provenance.trial}, not this trial's (v-w32-mup#{other})") in " ".join(said.split())
    (fitted,) = [r for r in cfg.provenance.laws if r["param"] == "optimizer.lr"]
    assert cfg.optimizer.lr == pytest.approx(fitted["after"]) and fitted["measurement"]["slope"] == law["slope"]
    assert fitted["slope"] == pytest.approx(law["posterior"]["centre"]) and fitted["prior"]["centre"] == 0.5
    assert fitted["before"] * 4 ** fitted["interval_slope"][0] == pytest.approx(min(fitted["interval"]))
    assert RunConfig.parse(yaml.safe_load(cfg.to_yaml())) == cfg  # the provenance round-trips
    assert 0 < cfg.provenance.tuning["share"]
    code, _, err = run_cli("train", out, "--quiet")
    assert code == 0, err
    assert json.loads((cfg.run_dir() / "result.json").read_text())["status"] == "completed"
    refuses_broken_ladders(tmp_path, spec, run_cli)


def refuses_broken_ladders(root, spec, run_cli):
    """Found by an outside tester: a budget below one step of the target was written; a corrupt summary.json was
    a traceback; a ladder folder linked out of the results root was read."""
    def one_line(*flags) -> str:
        code, _, err = run_cli("transfer", spec, "--width", "64", "--batch-size", "128", "--batch-rule", "fitted",
                               "--out", root / "never.yaml", *flags)
        assert code == 2 and err.count("\n") == 1, err
        assert not (root / "never.yaml").exists()
        return err

    assert "--tokens: at least 50 steps of the full run's batch 128" in one_line("--tokens", "100")
    folder = root / "v-verify-lr-across-batch_size"
    outside = root.parent / f"{root.name}-outside"
    folder.rename(outside)
    folder.symlink_to(outside, target_is_directory=True)
    assert "leads out of the results root" in one_line()
    folder.unlink()
    outside.rename(folder)
    (folder / "summary.json").write_text('{"laws": 5')
    said = one_line()
    assert "verify summary" in said and "unreadable" in said


def test_the_tuning_compute_charges_every_study_of_the_sweep_at_its_own_width(tmp_path):
    """A halving rung's narrow study (the one `--warm-start` read) is tuning too: the share counted only the study
    transferred from (outside tester). 6·N·D per finished trial (Kaplan et al. 2020), N at the trial's own width;
    a pruned trial up to its last report."""
    from trainer.config import RunConfig

    studies = []
    for width, steps in ((32, 40), (64, 20)):
        study = optuna.create_study()
        cfg = RunConfig.parse({"model": {"name": "gpt", "width": width}, "batch_size": 4, "steps": steps})
        study.add_trial(optuna.trial.create_trial(value=1.0, user_attrs={"config": cfg.to_yaml()}))
        study.add_trial(optuna.trial.create_trial(state=optuna.trial.TrialState.PRUNED, intermediate_values={5: 2.0},
                                                  user_attrs={"config": cfg.to_yaml()}))
        studies.append(study)
    tuning = tuning_compute(str(tmp_path), studies, lambda c: 1000.0 * c.model.width, 8, 1e12, "none")
    expected = sum(6 * 1000.0 * w * (s + 5) * 4 * 8 for w, s in ((32, 40), (64, 20)))
    assert tuning["proxy_flops"] == pytest.approx(expected) and tuning["share"] == pytest.approx(expected / 1e12)


def anchor_summary(root: Path, axis: str, source: str, optima: dict, poor: tuple = ()) -> None:
    """A verify summary along `axis` from the settings of `source`: the μP optimum at each axis value (width 32,
    depth 2; the token budget held across batch, the batch held across steps)."""
    shapes = [{"at": float(v), "width": 32, "depth": 2, "batch_size": v if axis == "batch_size" else 32,
               "tokens": 1280 if axis == "batch_size" else v * 32} for v in optima]
    rows = [{"parametrization": "mup", axis: v, "optimum": o, "fitted": True, "poor_fit": v in poor}
            for v, o in optima.items()]
    write_summary(root / f"v-verify-lr-across-{axis}",
                  {"axis": axis, "source": source, "grid": [0.001, 0.2], "shapes": shapes, "optima": rows,
                   "laws": {"mup": {"slope": 0.4, "low": 0.3, "high": 0.5, "at": [float(v) for v in optima]}}})


def test_a_fitted_law_starts_from_the_optimum_measured_at_the_proxys_point_not_the_trials_value(tmp_path):
    """Classic bug (the winner's curse): the best of many single-seed trials sits off the optimum (issue 20's ladder:
    the trial's LR 0.0033, the optimum measured at its point 0.0054), and a law that multiplies the trial's LR
    carries the miss to the target. The anchor counts only vertices verify measured from this trial at the proxy's
    width, depth, batch and tokens; both values stay in provenance."""
    point = {"width": 32, "depth": 2, "batch_size": 32, "tokens": 1280}
    anchor_summary(tmp_path, "batch_size", "v-w32-mup#3", {16: 0.01, 32: 0.02, 64: 0.03})
    anchor_summary(tmp_path, "steps", "v-w32-mup#3", {20: 0.02, 40: 0.08, 80: 0.1})
    assert measured_anchors(str(tmp_path), "v", "v-w32-mup#3", point) == {"optimizer.lr": {
        "value": pytest.approx(0.04), "optima": [0.02, 0.08],
        "sources": ["v-verify-lr-across-batch_size", "v-verify-lr-across-steps"]}}
    assert measured_anchors(str(tmp_path), "v", "v-w32-mup#4", point) == {}  # another trial's settings
    assert measured_anchors(str(tmp_path), "v", "v-w32-mup#3", {**point, "width": 64}) == {}  # another point
    anchor_summary(tmp_path, "steps", "v-w32-mup#3", {20: 0.02, 40: 0.08, 80: 0.1}, poor=(40,))
    assert measured_anchors(str(tmp_path), "v", "v-w32-mup#3", point)["optimizer.lr"]["optima"] == [0.02]
    anchor_summary(tmp_path, "steps", "v-w32-mup#3", {20: 0.02, 40: 0.5, 80: 0.1})  # outside the grid 0.001–0.2
    assert measured_anchors(str(tmp_path), "v", "v-w32-mup#3", point)["optimizer.lr"]["optima"] == [0.02]

    anchors = {"optimizer.lr": {"value": 0.04, "optima": [0.02, 0.08], "sources": ["a", "b"]}}
    fitted = transfer_run(PROXY, Target(width=64, batch_size=128, batch_rule="fitted"), 1, laws=(LR_BATCH,),
                          anchors=anchors)
    assert fitted.config.optimizer.lr == pytest.approx(0.04 * 4 ** 0.4) and fitted.warnings == []
    (anchor,) = [c for c in fitted.changes if c.rule == "anchor"]
    assert (anchor.field, anchor.before, anchor.after) == ("optimizer.lr", 0.01, 0.04)
    assert fitted.laws[0]["before"] == 0.04
    # the AdamW timescale rule keeps 1/(η·λ) of the anchored pair (the pair the ladder measured): λ' = λ·(η/η')·(B'/B)
    assert fitted.config.optimizer.weight_decay == pytest.approx(0.1 * 4 ** -0.4 * 4)
    sqrt = transfer_run(PROXY, Target(width=64, batch_size=128, batch_rule="sqrt"), 1, laws=(LR_BATCH,),
                        anchors=anchors)
    assert sqrt.config.optimizer.lr == pytest.approx(0.02)  # no fitted rule: the trial's value, as textbook rules do
    bare = transfer_run(PROXY, Target(width=64, batch_size=128, batch_rule="fitted"), 1, laws=(LR_BATCH,),
                        anchors={})
    assert bare.config.optimizer.lr == pytest.approx(0.01 * 4 ** 0.4)
    assert bare.warnings == ["optimizer.lr starts from the trial's value: no `sweep verify` of it from this trial "
                             "fitted an optimum at the proxy's own point (a vertex inside its grid, not a poor fit), "
                             "and the best of single-seed trials sits off it"]


def test_an_integer_builder_option_can_be_an_axis():
    """Found by an outside tester: `--across model.options.block_size=16,32` gave the builder 16.0, which it refused
    as not a positive integer; a fractional option keeps its value."""
    from sweep.rules.axis import parse_axis

    run = {"model": {"name": "gpt", "options": {"block_size": 64}}}
    assert parse_axis("model.options.block_size=16,32").apply(run, 16.0, 0)["model"]["options"]["block_size"] == 16
    assert isinstance(parse_axis("model.options.block_size=16,32").apply(run, 16.0, 0)["model"]["options"][
        "block_size"], int)
    assert parse_axis("model.options.output_mult=0.5,2").apply(run, 0.5, 0)["model"]["options"]["output_mult"] == 0.5


def test_a_horizon_ladder_at_the_targets_batch_is_the_horizon_law_transfer_applies(tmp_path, run_cli, monkeypatch):
    """Found by the transfer benchmark: a horizon law measured at the proxy's batch 8 and applied at batch 32 set the
    LR 0.55 octave low. `verify --ladder-batch B` runs the horizon ladder at B in its own folder (AdamW's moments
    moved by the SDE rule, as across batch), and transfer to batch B takes that law; to any other batch the proxy's."""
    monkeypatch.setenv("SWEEP_ROOT", str(tmp_path))
    monkeypatch.chdir(tmp_path)
    spec = tmp_path / "spec.yaml"
    spec.write_text(yaml.safe_dump(SPEC))
    code, printed, err = run_cli("proxy", spec, "--width", "32")  # each command in this process
    assert code == 0, printed + err
    code, printed, err = run_cli("verify", spec, "--across", "steps=20,40,80", "--ladder-batch", "64", "--range",
                                 "2^-11,2^-3,5", "--seeds", "1", "--refine", "0")  # one seed: the prior holds
    assert code == 0, printed + err
    assert "steps 20, 40, 80 at width 32, batch 64 × μP" in " ".join(printed.split())  # the batch it ran at
    folder = tmp_path / "v-verify-lr-across-steps-b64"
    summary = json.loads((folder / "summary.json").read_text())
    assert {s["batch_size"] for s in summary["shapes"]} == {64} and not (tmp_path / "v-verify-lr-across-steps").exists()
    ran = RunConfig.load(next((tmp_path / "v-verify-lr-across-steps-b64-40").rglob("config.yaml")))
    assert (ran.batch_size, ran.optimizer.beta1, ran.optimizer.beta2) == (64, pytest.approx(0.8), pytest.approx(0.9))
    (horizon,) = measured_laws(str(tmp_path), "v", batch=64)
    assert (horizon.source, horizon.batch) == ("v-verify-lr-across-steps-b64", 64)
    assert measured_laws(str(tmp_path), "v", batch=128) == ()  # no horizon ladder at the proxy's batch
    out = tmp_path / "full.yaml"
    code, said, err = run_cli("transfer", spec, "--width", "64", "--batch-size", "64", "--tokens", str(2 * 80 * 32),
                              "--batch-rule", "sqrt", "--horizon-rule", "fitted", "--out", out)
    assert code == 0, said + err
    (law,) = RunConfig.load(out).provenance.laws
    assert law["source"] == "v-verify-lr-across-steps-b64" and law["axis"] == "tokens"
