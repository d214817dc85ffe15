"""`sweep verify`: the fitted optimum, the drift per parametrization, the verdict, on real runs."""
import json
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import optuna
import pandas as pd
import pytest
import yaml

from sweep.verify.analysis import optima, verdicts
from sweep.verify.fit import sensitivity, vertex
from tests.sweep_helpers import VERIFY_SPEC as SPEC
from tests.sweep_helpers import run_sweep, sweep_env

REPO = Path(__file__).resolve().parents[1]  # so the runs can import tests.drifting


def test_the_optimum_is_the_vertex_of_the_parabola_not_the_argmin():
    x = np.arange(-10.0, -1.0)
    y = 0.1 * (x + 6.3) ** 2 + 2.0
    y[0] = y[-1] = 9.0  # far points outside the fitted window do not pull the vertex
    best = vertex(x, y)
    assert best.fitted and best.x == pytest.approx(-6.3) and best.loss == pytest.approx(2.0)


def test_without_an_upward_parabola_the_optimum_is_the_best_point_and_diverged_points_are_skipped():
    x = np.arange(5.0)
    assert vertex(x, -x).x == 4.0 and not vertex(x, -x).fitted  # monotone: the edge, not an extrapolation
    y = np.array([2.8, 2.2, 2.0, 2.2, np.nan])  # 0.2·(x − 2)² + 2, the last diverged
    assert vertex(x, y).x == pytest.approx(2.0)
    assert vertex(x, np.full(5, np.nan)) is None


def test_sensitivity_caps_each_point_at_the_loss_at_init():
    """Wortsman et al. 2023: mean over the grid of min(loss, loss at init) − the best loss."""
    assert sensitivity(np.array([3.0, 2.0, np.nan]), loss_init=2.5) == pytest.approx((2.5 + 2.0 + 2.5) / 3 - 2.0)


def synthetic(optimum_of) -> pd.DataFrame:
    rows = []
    for param in ("mup", "sp"):
        for width in (32, 64, 128, 256):
            for seed in (0, 1):
                for x in np.arange(-12.0, -2.0):
                    top = optimum_of(param, width) + (0.1 if seed else -0.1)
                    rows.append(dict(parametrization=param, width=width, x=x, seed=seed, loss_init=5.5,
                                     loss=0.05 * (x - top) ** 2 + 2.0))
    return pd.DataFrame(rows)


def test_one_seeds_noise_is_unknown_never_zero():
    """Found by an outside tester: with one seed the optima table printed "± seeds 0.00" and summary.json held 0.0,
    a precision nobody measured; it is unknown (NaN: "?" in the table, null in summary.json)."""
    from rich.console import Console

    from sweep.verify.command import optima_table

    one = synthetic(lambda p, w: -7.0)
    table = optima(one[one["seed"] == 0])
    assert table["seed_spread"].isna().all()
    assert all(np.isnan(v.noise) for v in verdicts(table, max_drift=1.0))
    console = Console(record=True, width=200)
    console.print(optima_table(table, "optimizer.lr"))
    rows = [line.split("│") for line in console.export_text().splitlines() if "μP" in line or "SP" in line]
    assert len(rows) == len(table) and {row[5].strip() for row in rows} == {"?"}  # the "± seeds" column
    assert not optima(one)["seed_spread"].isna().any()  # two seeds: measured


def test_drift_is_measured_per_parametrization_with_its_seed_noise():
    table = optima(synthetic(lambda p, w: -7.0 if p == "mup" else -5.0 - np.log2(w / 32)))
    judged = {v.parametrization: v for v in verdicts(table, max_drift=1.0)}
    assert judged["mup"].drift == pytest.approx(0.0, abs=1e-9) and judged["mup"].passed
    assert judged["sp"].drift == pytest.approx(3.0) and judged["sp"].passed is None  # shown, not judged
    assert judged["mup"].noise == pytest.approx(0.1)  # two seeds at ±0.1: the vertices' std


def test_a_mup_optimum_that_moves_with_width_fails():
    table = optima(synthetic(lambda p, w: -5.0 - 0.5 * np.log2(w / 32)))  # half an octave per doubling
    judged = {v.parametrization: v for v in verdicts(table, max_drift=1.0)}
    assert judged["mup"].drift == pytest.approx(1.5) and judged["mup"].passed is False


def test_a_width_where_every_point_diverged_fails():
    points = synthetic(lambda p, w: -7.0)
    points.loc[points["width"] == 256, "loss"] = np.nan
    judged = {v.parametrization: v for v in verdicts(optima(points), max_drift=1.0)}
    assert judged["mup"].passed is False


def test_a_failed_point_is_left_out_of_the_fit_not_counted_as_diverged():
    """A trial that raised (a tool error) trained nothing: counted as diverged it made the point beside the best one
    an edge, and the optimum the best grid point (−7) instead of the vertex (−6.6); it is as if it was never run."""
    points = synthetic(lambda p, w: -6.6).assign(error=None)
    beside = (points["width"] == 256) & (points["x"] == -6.0)
    failed = points.assign(loss=points["loss"].mask(beside), error=points["error"].mask(beside, "RuntimeError: boom"))
    got, want = optima(failed), optima(points[~beside])
    assert got.drop(columns="failed").equals(want.drop(columns="failed"))
    assert got.loc[got["width"] == 256, "optimum_x"].to_numpy() == pytest.approx(-6.6)
    assert got["diverged"].sum() == 0 and got["failed"].sum() == beside.sum() == 4  # two seeds, μP and SP


def test_a_width_where_every_run_failed_is_not_measured_and_gives_no_verdict():
    """Unlike a width whose every run diverged (FAIL): nothing was measured there, so μP is undecided, unless the
    drift over the other widths fails already (that width's optimum could only widen it)."""
    for moves, passed in ((0.0, None), (1.0, False)):
        points = synthetic(lambda p, w, moves=moves: -5.0 - moves * np.log2(w / 32)).assign(error=None)
        points.loc[points["width"] == 256, ["loss", "error"]] = [np.nan, "OSError: no space left on device"]
        table = optima(points)
        gone = table[table["width"] == 256]
        assert not gone["measured"].any() and (gone["failed"] == 20).all() and (gone["diverged"] == 0).all()
        judged = {v.parametrization: v for v in verdicts(table, max_drift=1.0)}
        assert judged["mup"].passed is passed and judged["mup"].unmeasured == 1, moves


def fake_verify(root: Path, failed=(), absent=()) -> tuple[int, dict, str]:
    """`sweep verify`'s report on μP studies built directly, no training: at widths 32 and 64 the LR grid
    2^-9 … 2^-3, two seeds, the loss a parabola in log₂ LR about −6.6; the (width, log₂ LR) points in `failed` a trial
    that raised a tool error, those in `absent` never run. (exit code, summary.json, what it printed)."""
    from optuna.distributions import FloatDistribution
    from optuna.trial import TrialState, create_trial
    from rich.console import Console

    from sweep.rules.axis import Axis
    from sweep.verify.command import collect, report

    storage, jobs, grid = optuna.storages.InMemoryStorage(), [], {"optimizer.lr": FloatDistribution(1e-6, 1, log=True)}
    for width in (32, 64):
        study = optuna.create_study(study_name=f"v-w{width}-mup", storage=storage)
        for x in [x for x in np.arange(-9.0, -2.0) if (width, x) not in absent]:
            seeds = [0.05 * (x + 6.6 + d) ** 2 + 2.0 for d in (-0.1, 0.1)]
            study.add_trial(create_trial(params={"optimizer.lr": 2.0 ** x}, distributions=grid, **(
                {"state": TrialState.FAIL, "user_attrs": {"error": "RuntimeError: CUDA error: illegal memory access"}}
                if (width, x) in failed else {"value": float(np.mean(seeds)), "user_attrs": {"seed_values": seeds}})))
        jobs.append((width, SimpleNamespace(study_name=study.study_name, storage="memory", parametrization="mup",
                                            width=width, spec=SimpleNamespace(seeds_per_trial=2), root=str(root))))
    points = collect(jobs, {"memory": storage}, "optimizer.lr", "width")
    summary = {"param": "optimizer.lr", "axis": "width", "seeds": 2, "max_drift": 1.0, "prior": "published",
               "optimizer": "adamw", "depth_rule": False, "refined": []}
    (root / "out").mkdir(parents=True)
    console = Console(record=True, width=200)
    code = report(root / "out", points, Axis("width", (32.0, 64.0)), summary, console)
    return code, json.loads((root / "out" / "summary.json").read_text()), console.export_text()


def test_verify_counts_failed_trials_apart_and_fits_as_if_they_were_not_run(tmp_path):
    """The bug: `collect` gave a failed trial NaN losses and the analysis counted them diverged, moving the edge."""
    code, summary, printed = fake_verify(tmp_path / "failed", failed={(64, -6.0)})
    same, without, _ = fake_verify(tmp_path / "absent", absent={(64, -6.0)})
    assert code == same == 0 and summary["failed"] == 2 and without["failed"] == 0
    assert summary["failed_errors"] == {"RuntimeError": 2}
    assert fits(summary["optima"]) == fits(without["optima"])
    assert summary["parametrizations"] == without["parametrizations"]
    assert summary["laws"]["mup"]["slope"] == pytest.approx(without["laws"]["mup"]["slope"])
    assert summary["optima"][1]["optimum"] == pytest.approx(2 ** -6.6) and summary["optima"][1]["diverged"] == 0
    assert "failed: 2 of 28 runs raised an error and trained nothing (RuntimeError ×2)" in printed
    points = pd.read_parquet(tmp_path / "failed" / "out" / "points.parquet")
    assert points["error"].notna().sum() == 2 and points.loc[points["error"].notna(), "loss"].isna().all()


def fits(optima_rows: list[dict]) -> list[dict]:
    """summary.json's optima without their count of failed runs."""
    return [{k: v for k, v in row.items() if k != "failed"} for row in optima_rows]


def test_verify_gives_no_verdict_at_a_width_whose_every_run_failed(tmp_path):
    """Read as diverged, every run failing at width 64 failed μP (exit 1); nothing was measured there."""
    code, summary, printed = fake_verify(tmp_path, failed={(64, x) for x in np.arange(-9.0, -2.0)})
    assert code == 0 and summary["parametrizations"]["mup"]["passed"] is None and summary["failed"] == 14
    assert {k: summary["optima"][1][k] for k in ("measured", "optimum", "diverged", "failed")} == \
        {"measured": False, "optimum": None, "diverged": 0, "failed": 14}
    assert "μP drift 0.00 octaves over width 32 (seed noise ±0.10) — no verdict: not measured at width 64" in printed
    assert any("μP" in line and "not measured" in line for line in printed.splitlines())  # the optima table's row


VERIFY = ["--trials-from", "spec", "--widths", "32,256", "--parametrizations", "mup",
          "--range", "2^-11,2^-3,9", "--seeds", "2", "--workers", "2", "--refine", "0"]


@pytest.mark.parametrize("model, code", [("mlp", 0), ("tests.drifting:drifting_mlp", 1)])
def test_verify_passes_mup_and_fails_a_model_whose_optimum_follows_width(tmp_path, model, code):
    spec = tmp_path / "spec.yaml"
    spec.write_text(yaml.safe_dump({**SPEC, "run": {**SPEC["run"], "model": {**SPEC["run"]["model"], "name": model}}}))
    env = sweep_env(tmp_path, PYTHONPATH=str(REPO))
    done = run_sweep(tmp_path, "verify", spec, *VERIFY, env=env)
    assert done.returncode == code, done.stdout + done.stderr
    out = tmp_path / "v-verify-lr"
    summary = json.loads((out / "summary.json").read_text())
    drift = summary["parametrizations"]["mup"]["drift"]
    assert (drift <= 1.0) == (code == 0), drift
    assert f"drift {drift:.2f} octaves" in done.stdout
    assert (out / "figure1.png").stat().st_size > 10_000
    points = pd.read_parquet(out / "points.parquet")
    assert len(points) == 2 * 9 * 2 and set(points["width"]) == {32, 256}
    assert pd.read_parquet(out / "optima.parquet")["optimum_x"].notna().all()
    if code == 0:  # the same command resumes: every study has its trials, nothing runs again
        again = run_sweep(tmp_path, "verify", spec, *VERIFY, env=env)
        assert again.returncode == 0 and "COMPLETE" not in again.stdout
        assert json.loads((out / "summary.json").read_text()) == summary


def test_bad_verify_flags_are_one_line_and_write_nothing(tmp_path):
    spec = tmp_path / "spec.yaml"
    spec.write_text(yaml.safe_dump(SPEC))
    before = sorted(tmp_path.rglob("*"))
    for flags, message in (([ "--widths", "32"], "--widths: at least two"),
                           (["--range", "0.1,0.01,5"], "--range: need 0 < LO < HI"),
                           (["--range", "0.01,0.04,1000000"], "--range: need 0 < LO < HI and 3 ≤ N ≤ 64"),  # hung
                           (["--values", ",".join(str(2 ** -k) for k in range(65))], "--values: 3 to 64 values"),
                           (["--values", "1e-3,x,3"], "--values: 'x' is not a number"),
                           (["--parametrizations", "mup,ntk"], "--parametrizations:"),
                           (["--param", "model.width"], "--param model.width: set by the sweep"),
                           (["--param", "optimizer.roles.embeding.lr_mult"],  # named the spec's search (tester)
                            "--param optimizer.roles.embeding.lr_mult: not a RunConfig field"),
                           (["--param", "optimizer.roles.embedding.lr_width_exp", "--values", "-0.5,0,0.5"],
                            "an exponent, not a multiplier"),  # scanned as a log₂ grid, a law of an exponent (tester)
                           (["--param", "optimizer.roles.embedding.lr_mult/x"],  # was a name-length message (tester)
                            "--param optimizer.roles.embedding.lr_mult/x: not a RunConfig field"),
                           (["--trials-from", "best"], "study: no sweep named 'v'")):
        base = [a for flag, value in (("--trials-from", "spec"), ("--widths", "32,64")) if flag not in flags
                for a in (flag, value)]  # a flag given twice is refused as such
        done = run_sweep(tmp_path, "verify", spec, *base, *flags)
        assert done.returncode == 2, (flags, done.stdout, done.stderr)
        assert done.stderr.count("\n") == 1 and message in done.stderr, (flags, done.stderr)
    assert sorted(tmp_path.rglob("*")) == before


def test_a_fail_beside_a_value_not_measured_says_the_drift_over_the_others_failed():
    """Found by an outside tester: "FAIL: not measured at width 64" read as if the width no run measured failed."""
    from sweep.verify.analysis import Verdict
    from sweep.verify.command import verdict_text

    table = pd.DataFrame({"parametrization": ["mup"] * 3, "width": [16, 32, 64], "measured": [True, True, False]})
    failed = verdict_text(Verdict("mup", 1.15, 0.1, False, unmeasured=1), table, "width")
    assert failed == (" — FAIL: the drift over the measured values is past the bound; not measured at width 64, "
                      "every run failed")
    assert verdict_text(Verdict("mup", 0.2, 0.1, None, unmeasured=1), table, "width") == (
        " — no verdict: not measured at width 64, every run failed")


def test_the_tuning_compute_charges_nothing_for_a_run_that_failed(tmp_path):
    """Found by an outside tester: transfer's tuning compute charged a run that raised a tool error (it trained
    nothing, verify says) as a run trained to the end."""
    from sweep.rules.ladder import tuning_compute

    _, summary, _ = fake_verify(tmp_path, failed={(64, -6.0)})  # one trial of two seeds at width 64
    shapes = [{"at": float(w), "width": w, "depth": 2, "batch_size": 4, "params": 1000.0 * w, "tokens": 640}
              for w in (32, 64)]
    (tmp_path / "v-verify-lr").mkdir()
    (tmp_path / "v-verify-lr" / "summary.json").write_text(json.dumps(
        {**summary, "grid": [2.0 ** x for x in range(-9, -2)], "shapes": shapes, "values": [32.0, 64.0]}))
    spent = tuning_compute(str(tmp_path), [], lambda cfg: 1.0, 1, 1.0, "v")["verify_flops"]
    assert spent == pytest.approx(6 * 640 * 2 * (7 * 32000 + 6 * 64000))  # 7 points × 2 seeds at 32, 6 at 64
