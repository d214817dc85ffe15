"""Issue 37: laws as posteriors over published priors, one joint fit over every point, verdicts as equivalence
tests — the statistics on synthetic ladders with a known answer, and what transfer records."""
import json
import math

import numpy as np
import pandas as pd
import pytest
import yaml

from sweep.rules import Target
from sweep.rules.bracket import REFINE, next_values, refine
from sweep.rules.equivalence import equivalence
from sweep.rules.fitted import Law
from sweep.rules.plan import transfer_run
from sweep.rules.prior import BATCH_ADAM, HORIZON, posterior, prior_for, slope_chain
from sweep.rules.summary import certificate
from sweep.rules.valley import fit_valley, valley_fit
from sweep.verify.fit import vertex
from tests.sweep_helpers import VERIFY_SPEC as SPEC
from tests.sweep_helpers import run_sweep
from trainer.config import RunConfig

GRID = np.arange(-11.0, -2.0)  # log₂ LR, an octave apart


def ladder(slope: float, rng, seeds=3, values=(16, 32, 64), jitter=0.15, noise=0.01, curvature=0.08, grid=GRID):
    """Arrays (axis value, log₂ LR, seed, loss) of a synthetic ladder: each (value, seed) curve a parabola whose
    vertex is −6.7 + slope·log₂(value/16) moved by the seed (`jitter` octaves), shifted by the seed's level, with
    point noise `noise`; vectorised so hundreds of ladders fit in seconds."""
    curves = len(values) * seeds
    at = np.repeat(values, seeds * len(grid)).astype(float)
    seed = np.tile(np.repeat(np.arange(seeds), len(grid)), len(values)).astype(float)
    x = np.tile(grid, curves)
    top = -6.7 + slope * np.log2(at / values[0]) + np.repeat(rng.normal(0, jitter, curves), len(grid))
    level = np.repeat(rng.normal(0, 0.02, curves), len(grid))
    return at, x, seed, curvature * (x - top) ** 2 + 2.0 + level + rng.normal(0, noise, len(x))


def test_a_flat_measurement_returns_the_prior_and_a_sharp_one_the_measurement():
    flat = posterior(BATCH_ADAM, -0.58, -60.0, 59.0)  # a ladder that saw nothing
    assert flat.centre == pytest.approx(0.5, abs=0.01) and flat.weight < 1e-3
    assert (flat.low, flat.high) == pytest.approx(BATCH_ADAM.interval(), abs=0.01)
    sharp = posterior(BATCH_ADAM, 0.31, 0.30, 0.32)
    assert sharp.centre == pytest.approx(0.31, abs=0.002) and sharp.weight > 0.99 and sharp.high - sharp.low < 0.021
    unmeasured = posterior(BATCH_ADAM, 0.9, math.nan, math.nan)  # one seed, two values: no interval
    assert (unmeasured.centre, unmeasured.used, unmeasured.weight) == (0.5, "prior", 0.0)
    alone = posterior(None, -0.58, -0.81, 0.82)  # --prior none: today's pure fit, as it is
    assert (alone.centre, alone.low, alone.high, alone.used) == (-0.58, -0.81, 0.82, "measured")
    z = 1.959963984540054
    middle = posterior(HORIZON, 0.0, -z * 0.15, z * 0.15)  # se = 0.15 = the prior's spread: halfway, √2 narrower
    assert middle.centre == pytest.approx(-0.15) and middle.weight == pytest.approx(0.5)
    assert middle.high - middle.low == pytest.approx(2 * z * 0.15 / math.sqrt(2))


def test_every_published_prior_names_its_source_and_none_is_invented():
    assert prior_for("optimizer.lr", "batch_size").centre == 0.5 and "Malladi" in BATCH_ADAM.source
    assert prior_for("optimizer.lr", "batch_size", optimizer="sgd").centre == 1.0
    assert prior_for("optimizer.lr", "steps").centre == prior_for("optimizer.lr", "tokens").centre == -0.3
    assert prior_for("optimizer.lr", "width").centre == 0.0 and prior_for("optimizer.lr", "width", "sp") is None
    assert prior_for("optimizer.lr", "depth").centre == 0.0 and prior_for("optimizer.lr", "depth",
                                                                           depth_rule=False) is None
    assert "Wang & Aitchison" in prior_for("optimizer.weight_decay", "tokens").source
    assert prior_for("optimizer.beta2", "batch_size") is None and prior_for("optimizer.lr", "batch_size",
                                                                            optimizer="lion") is None


def test_95_percent_intervals_cover_the_truth_in_93_to_97_percent_of_400_synthetic_ladders():
    """Truth drawn from the prior (so the posterior's coverage is defined), seeds jitter the optimum 0.15 octave
    and points carry 0.01 of noise: both the measurement's interval (--prior none) and the posterior's hold it at
    their stated level. A Wald interval from the point scatter alone held it in 58%: it missed the seeds' jitter."""
    measured = updated = 0
    n = 400
    for r in range(n):
        rng = np.random.default_rng(r)
        truth = rng.normal(BATCH_ADAM.centre, BATCH_ADAM.spread)
        law = fit_valley(*ladder(truth, rng))
        post = posterior(BATCH_ADAM, law["slope"], law["low"], law["high"])
        measured += law["low"] <= truth <= law["high"]
        updated += post.low <= truth <= post.high
    assert 0.93 <= measured / n <= 0.97 and 0.93 <= updated / n <= 0.97, (measured / n, updated / n)


def test_the_joint_fit_recovers_a_known_slope_from_noisy_valleys():
    rng = np.random.default_rng(7)
    fits = [fit_valley(*ladder(-0.3, rng, seeds=4, values=(75, 150, 300, 600), jitter=0.1)) for _ in range(30)]
    assert np.mean([f["slope"] for f in fits]) == pytest.approx(-0.3, abs=0.03)
    assert np.median([f["high"] - f["low"] for f in fits]) < 0.4 and all(f["seed_noise_known"] for f in fits)
    exact = fit_valley(*ladder(0.5, rng, seeds=1, jitter=0, noise=0))
    assert exact["slope"] == pytest.approx(0.5, abs=1e-6) and exact["high"] - exact["low"] < 1e-6
    assert exact["residual"] == pytest.approx(0, abs=1e-8) and not exact["seed_noise_known"]
    at, x, seed, loss = ladder(0.5, rng)
    loss[(x == GRID[-1]) & (seed == 0)] = np.nan  # a diverged run at the top LR: left out, not fitted
    frame = pd.DataFrame({"batch_size": at, "x": x, "seed": seed, "loss": loss})
    assert valley_fit(frame, "batch_size")["slope"] == pytest.approx(0.5, abs=0.3)
    two = fit_valley(*ladder(0.5, rng, seeds=1, values=(16, 32)))  # two curves: no scatter seen, no interval
    assert math.isfinite(two["slope"]) and math.isnan(two["low"]) and math.isnan(two["high"])


@pytest.mark.parametrize("low, high, verdict", [(-0.1, 0.1, "pass"), (0.4, 0.6, "fail"), (-0.6, -0.4, "fail"),
                                                (0.1, 0.5, "undecided"), (-0.8, 0.8, "undecided"),
                                                (math.nan, math.nan, "unmeasured")])
def test_the_verdict_is_an_equivalence_test(low, high, verdict):
    said = equivalence(low, high, 0.0, 0.3)
    assert said.verdict == verdict
    if verdict == "undecided":
        assert "measure more" in said.text("s =") and said.more_runs > 1


def test_an_undecided_verdict_whose_centre_sits_about_the_bound_gives_no_absurd_advice():
    """Found by an outside tester: "measure more: ≈ 1455.4× the runs would decide it" is no advice anyone can take;
    past 100× the verdict says the slope is about the band's edge."""
    said = equivalence(-0.42, 0.08, -0.3, 0.15)  # centre −0.17, 0.02 inside the bound −0.15, half-width 0.25: 156×
    assert said.verdict == "undecided" and said.more_runs > 100
    assert "unlikely to decide" in said.text("s =") and "would decide it" not in said.text("s =")
    near = equivalence(-0.5, 0.1, -0.3, 0.15)  # centre −0.2: 0.05 in, half-width 0.3 → 36×
    assert "≈ 36.0× the runs" in near.text("s =")


def test_a_precise_tiny_width_slope_passes_where_the_old_test_failed_it():
    """The issue's case: s = −0.162 [−0.332, −0.060] over widths 32–128 "excluded 0 — FAIL"; inside ±0.5 it passes,
    and a wide interval is undecided (naming how many more runs), never a pass."""
    law = {"slope": -0.162, "low": -0.332, "high": -0.060, "at": [32, 64, 128]}
    assert certificate("width", "mup", law, 1.0)["passed"] is True
    wide = certificate("width", "mup", {**law, "low": -0.7, "high": 0.4}, 1.0)
    assert wide["passed"] is None and "undecided" in wide["certificate"] and "× the runs" in wide["certificate"]
    far = certificate("width", "mup", {**law, "low": 0.6, "high": 0.9}, 1.0)
    assert far["passed"] is False and "FAIL" in far["certificate"]
    batch = certificate("batch_size", "mup", {"slope": 0.45, "low": 0.4, "high": 0.5, "at": [16, 32]}, 1.0, 0.5)
    assert batch["passed"] is None and "pass" in batch["certificate"]


PROXY = RunConfig.parse({"model": {"name": "mlp", "width": 32, "depth": 2},
                         "data": {"kind": "synthetic-vectors", "options": {"in_features": 16, "classes": 10}},
                         "optimizer": {"name": "adamw", "lr": 0.01}, "batch_size": 32, "steps": 40})


def test_transfer_uses_the_posterior_and_the_provenance_records_prior_measurement_and_posterior():
    """The demo's defect: a ladder measured −0.58 [−0.81, 0.82] across batch and transfer lowered the LR when the
    batch doubled. Over the published prior the posterior is ≈ ½ and the LR rises; `--prior none` keeps the fit."""
    measured = {"slope": -0.58, "low": -0.81, "high": 0.82, "level": 0.95}
    law = Law.updated("optimizer.lr", "batch_size", measured, (16.0, 32.0), "v-verify-lr-across-batch_size",
                      BATCH_ADAM)
    result = transfer_run(PROXY, Target(width=64, batch_size=64, batch_rule="fitted"), 1, laws=(law,))
    (record,) = result.laws
    assert record["prior"]["centre"] == 0.5 and "Malladi" in record["prior"]["source"]
    assert record["measurement"] == {"slope": -0.58, "low": -0.81, "high": 0.82}
    assert record["posterior"]["centre"] == record["slope"] and 0.3 < record["slope"] < 0.5
    assert result.config.optimizer.lr > 0.01 and record["posterior"]["weight"] < 0.2
    assert "prior 0.50" in slope_chain(record) and "≈ the published prior" in slope_chain(record)
    (change,) = [c for c in result.changes if c.field == "optimizer.lr" and c.rule == "batch_size.fitted"]
    assert "posterior (measurement weight" in change.formula and "measured," not in change.formula  # not mislabelled
    pure = Law.updated("optimizer.lr", "batch_size", measured, (16.0, 32.0), "v", None)
    alone = transfer_run(PROXY, Target(width=64, batch_size=64, batch_rule="fitted", prior="none"), 1, laws=(pure,))
    assert alone.config.optimizer.lr == pytest.approx(0.01 * 2 ** -0.58)
    assert any("^-0.580 [-0.810, 0.820], measured, over batch_size 16–32" in c.formula for c in alone.changes)
    assert Law.updated("optimizer.beta2", "batch_size", {**measured, "low": None, "high": None}, (16.0, 32.0),
                       "v", None) is None  # no prior and no interval: nothing to carry with


@pytest.mark.parametrize("command, flags", [("verify", ["--trials-from", "spec", "--widths", "32,64"]),
                                            ("transfer", ["--width", "64"])])
def test_a_bad_prior_is_one_line_exit_2_and_writes_nothing(tmp_path, command, flags):
    spec = tmp_path / "spec.yaml"
    spec.write_text(yaml.safe_dump(SPEC))
    before = sorted(tmp_path.rglob("*"))
    done = run_sweep(tmp_path, command, spec, *flags, "--prior", "flat")
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert done.stderr.count("\n") == 1 and "--prior: 'flat' is not one of published, none" in done.stderr
    assert sorted(tmp_path.rglob("*")) == before


def valley(top: float, seed: int = 0, noise: float = 0.005):
    """A synthetic LR valley (no training): steep above the optimum, diverged 4 octaves past it, noisy."""
    rng = np.random.default_rng(seed)

    def loss(x: float) -> float:
        if x > top + 4:
            return math.nan
        return 2.0 + 0.05 * (top - x) ** 2 + (0.1 * (x - top) ** 2 if x > top else 0) + rng.normal(0, noise)
    return loss


@pytest.mark.parametrize("top", [-6.37, -13.2, -2.6])  # off-grid inside, past the low edge, past the high edge
def test_refinement_brackets_an_optimum_off_grid_and_at_an_edge(top):
    grid = [-11.0, -10.0, -9.0, -8.0, -7.0, -6.0, -5.0]
    seen, done = refine(valley(top), grid, noise=0.01, budget=20)
    assert done, sorted(seen.items())
    x = np.array(sorted(seen))
    y = np.array([seen[v] for v in x])
    best = int(np.nanargmin(y))
    assert 0 < best < len(x) - 1 and x[best + 1] - x[best] <= 0.5 and x[best] - x[best - 1] <= 0.5
    above = np.where(np.isfinite(y), y - y[best], np.inf) > 0.01  # risen past the noise (a divergence is above)
    assert above[:best].any() and above[best + 1:].any()
    assert abs(vertex(x, y).x - top) < 0.35  # the vertex now interpolates the optimum
    assert vertex(np.array(grid), np.array([valley(top)(v) for v in grid])).fitted == (top == -6.37)


def test_refinement_stops_at_its_budget_and_says_it_is_not_bracketed():
    seen, done = refine(valley(-20.0), [-11.0, -10.0, -9.0], noise=0.01, budget=4)
    assert not done and len(seen) == 3 + 4 and min(seen) == -15.0  # one octave further down per round
    assert next_values(np.array([-3.0, -2.0, -1.0]), np.array([math.nan] * 3), 0.01) == [-4.0]  # all diverged
    assert next_values(np.array([0.0, 1.0, 2.0]), np.array([2.0, 1.995, 2.0]), 0.01) == [-1.0, 3.0]  # flat: both


def test_verify_refines_each_grid_by_default_until_its_optimum_is_bracketed_and_resumes_without_rerunning(
        tmp_path, run_cli, monkeypatch):
    """A coarse grid two octaves apart, no --refine given: refinement adds points around each width's best (its own
    studies, …-rK), within the default budget; the same command again runs nothing and writes the same summary, and
    so does it with --refine 0 (no more points): the points already run are kept, not refitted away. Each command
    runs in this process (the first one's workers spawn from it)."""
    monkeypatch.setenv("SWEEP_ROOT", str(tmp_path))
    monkeypatch.chdir(tmp_path)
    spec = tmp_path / "spec.yaml"
    spec.write_text(yaml.safe_dump(SPEC))
    flags = ["--trials-from", "spec", "--widths", "32,64", "--parametrizations", "mup", "--range", "2^-12,2^-2,6",
             "--seeds", "1"]
    first, printed, err = run_cli("verify", spec, *flags)
    assert first in (0, 1), printed + err
    summary = json.loads((tmp_path / "v-verify-lr" / "summary.json").read_text())
    points = pd.read_parquet(tmp_path / "v-verify-lr" / "points.parquet")
    for row in summary["refined"]:
        assert 1 <= len(row["added"]) <= REFINE, row
        assert len(points[points["width"] == row["at"]]) == 6 + len(row["added"])
        assert row["bracketed"] or "not bracketed" in printed
    code, again, err = run_cli("verify", spec, *flags)
    assert code == first and "COMPLETE" not in again, again + err
    assert json.loads((tmp_path / "v-verify-lr" / "summary.json").read_text()) == summary
    code, kept, err = run_cli("verify", spec, *flags, "--refine", "0")
    assert code == first and "COMPLETE" not in kept, kept + err
    assert "kept from an earlier run (round 1)" in " ".join(kept.split())
    assert json.loads((tmp_path / "v-verify-lr" / "summary.json").read_text()) == summary
    assert pd.read_parquet(tmp_path / "v-verify-lr" / "points.parquet").equals(points)


def test_an_optimum_left_at_the_grid_edge_names_the_refinement_that_brackets_it(tmp_path):
    """With refinement turned off (--refine 0), a grid whose best point is its edge says how to bracket it in the same
    studies, where the old advice (a new --range) started a new ladder."""
    spec = tmp_path / "spec.yaml"
    spec.write_text(yaml.safe_dump(SPEC))
    done = run_sweep(tmp_path, "verify", spec, "--trials-from", "spec", "--widths", "32,64", "--parametrizations",
                     "mup", "--range", "2^-16,2^-14,3", "--seeds", "1", "--workers", "2", "--refine", "0",
                     timeout=600)  # far too low, and refinement off
    assert done.returncode in (0, 1), done.stdout + done.stderr
    assert "grid's edge" in done.stdout and "the same command with --refine 4" in " ".join(done.stdout.split())
    assert not list(tmp_path.glob("*-r1"))  # looking for an earlier run's refinement made no storage
