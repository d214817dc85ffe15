"""Issue 20's predicted loss: the scaling law fitted to the ladder's points (the additive form, and the width ×
tokens term once a ladder at a second width measures it), its interval, what it refuses to predict, and the run
held to it (`status`, `compare`)."""
import json
import os
import re

import numpy as np
import pytest
import yaml

from sweep.errors import InputError
from sweep.plan.command import PlanRequest, make_plan
from sweep.rules.ladder import ladder_points, predicted_loss
from sweep.rules.scaling import held_out, predict
from sweep.rules.summary import write_summary
from sweep.transfer.command import reach_lines
from tests.sweep_helpers import VERIFY_SPEC as SPEC
from trainer.config import RunConfig


def test_the_scaling_law_is_recovered_from_synthetic_losses():
    rng = np.random.default_rng(0)
    n, d = np.array([1e5, 2e5, 4e5, 8e5, 1e5, 1e5, 1e5]), np.array([1e6] * 4 + [2e6, 4e6, 8e6])
    truth = lambda n, d: 1.5 + 30 * n ** -0.34 + 40 * d ** -0.28  # noqa: E731 (Hoffmann's exponents)
    p = predict(n, d, truth(n, d) + rng.normal(0, 0.003, len(n)), 3.2e6, 2e6)
    assert p["form"].startswith("reduced") and p["E"] == pytest.approx(1.5, abs=0.05)
    assert p["low"] <= truth(3.2e6, 2e6) <= p["high"] and p["loss"] == pytest.approx(truth(3.2e6, 2e6), abs=0.01)
    n, d = np.repeat([1e5, 2e5, 4e5, 8e5], 3), np.tile([1e6, 3e6, 9e6], 4)  # enough points: all five fitted
    truth = lambda n, d: 1.2 + 50 * n ** -0.5 + 20 * d ** -0.3  # noqa: E731
    p = predict(n, d, truth(n, d) + rng.normal(0, 0.002, len(n)), 3.2e6, 2e7)
    assert p["form"].startswith("full") and p["beta"] == pytest.approx(0.3, abs=0.05)
    assert p["low"] <= truth(3.2e6, 2e7) <= p["high"]


def test_the_law_fitted_without_the_largest_rung_predicts_it_and_says_whether_its_interval_held():
    """The prediction's check on its own ladder (issue: report the leave-one-out error on the largest rung): a
    ladder on the law holds its held-out rung; one whose largest rung sits off the law is flagged; too few points,
    or a rung whose N the others never varied, give no check rather than a term priced at 0."""
    rng = np.random.default_rng(1)
    n, d = np.array([1e5, 2e5, 4e5, 8e5, 1e5, 1e5, 1e5]), np.array([1e6] * 4 + [2e6, 4e6, 8e6])
    truth = 1.5 + 30 * n ** -0.34 + 40 * d ** -0.28
    check = held_out(n, d, truth + rng.normal(0, 0.003, len(n)))
    assert (check["params"], check["tokens"]) == (8e5, 1e6) and check["holds"] and abs(check["error"]) < 0.01
    off = truth.copy()
    off[3] += 0.5  # the largest rung far above the law
    assert not held_out(n, d, off)["holds"] and held_out(n, d, off)["error"] < -0.1
    assert held_out(n[:4], d[:4], truth[:4]) is None
    assert held_out(np.array([1e5] * 4 + [2e5]), np.array([1e6, 2e6, 4e6, 8e6, 1e6]), truth[:5]) is None


def test_the_reduced_forms_interval_spans_the_published_exponents():
    """The classic bug, seen on two fresh `sweep demo`s: their five ladder points agreed within 0.02 nats, their
    full runs (each at its own transferred LR) ended at 2.2521 and 2.1886, and the reduced form's interval with
    Hoffmann's exponents alone, [2.2592, 2.2897] (rms 0.0014 on two spare points), missed the better run by 0.07:
    it priced the points' noise with exponents nobody measured. Its interval now spans each published pair's; its
    point stays Hoffmann's."""
    from sweep.rules.scaling import EXPONENTS, reduced, t_interval

    n = np.array([43904, 136960, 470528, 43904, 43904], float)
    d = np.array([153600, 153600, 153600, 76800, 307200], float)
    loss = np.array([2.5593, 2.4988, 2.4485, 2.7343, 2.4158])  # the failed demo's ladder
    p = predict(n, d, loss, 1727488, 307200)
    assert p["form"].startswith("reduced") and p["loss"] == pytest.approx(2.2745, abs=1e-3)
    assert p["low"] <= 2.1886 <= p["high"] and p["low"] <= 2.2521 <= p["high"]
    spans = [t_interval(reduced(n, d, loss, a, b), n, d, loss, 1727488, 307200) for a, b in EXPONENTS]
    assert (p["low"], p["high"]) == (min(lo for lo, _ in spans), max(hi for _, hi in spans))
    hoffmann = spans[0]
    assert not hoffmann[0] <= 2.1886 <= hoffmann[1]  # the interval that missed


def interacting(n, d):
    """A loss whose gain per doubling of width grows with the tokens (as measured on a 2-layer GPT), about (N₀, D₀)."""
    u, v = np.log(np.asarray(n) / 1.7e5), np.log(np.asarray(d) / 3.4e5)
    return 2.32 - 0.07 * u - 0.32 * v - 0.045 * u * v


def test_the_width_by_tokens_term_is_fitted_once_a_second_widths_ladder_measures_it():
    """The classic bug: an additive law (Hoffmann's) fitted to a cross of points (widths at one token count, token
    counts at one width) prices a wider and longer target, the cross's corner, as if width bought as much at every
    token count. A steps ladder at a second width measures the term; then the target's loss is inside its interval."""
    rng = np.random.default_rng(0)
    cross_n = np.array([4.4e4, 1.37e5, 4.7e5, 1.37e5, 1.37e5])
    cross_d = np.array([3.07e5, 3.07e5, 3.07e5, 1.54e5, 6.14e5])
    target, truth = (1.73e6, 6.14e5), float(interacting(1.73e6, 6.14e5))
    cross = predict(cross_n, cross_d, interacting(cross_n, cross_d) + rng.normal(0, 0.003, 5), *target)
    assert not cross["source"].startswith("local") and abs(cross["loss"] - truth) > 0.1  # the term priced at 0
    n, d = np.append(cross_n, 4.7e5), np.append(cross_d, 6.14e5)  # steps 300, 600 at width 128: (4.7e5, 6.14e5) new
    p = predict(n, d, interacting(n, d) + rng.normal(0, 0.003, 6), *target)
    assert p["source"].startswith("local") and p["g"] == pytest.approx(0.045, abs=0.01)
    assert p["low"] <= truth <= p["high"] and abs(p["loss"] - truth) < 0.02
    # the form is uncertain too: the interval holds both fitted forms' intervals, each recorded
    additive, local = p["forms"]
    assert additive["form"].startswith("reduced") and local["standard_error"] < additive["standard_error"]
    assert (p["low"], p["high"]) == (min(additive["low"], local["low"]), max(additive["high"], local["high"]))
    wide = np.repeat([1e5, 2e5, 4e5, 8e5], 2), np.tile([1e6, 1e6], 4)  # 8 points, one token count: no term to fit
    assert not predict(*wide, 3 - np.log(wide[0]) * 0.1, 1.6e6, 1e6)["source"].startswith("local")


def test_the_local_form_reaches_no_farther_than_the_widths_where_its_term_is_measured():
    """The classic bug, seen on the demo: the width × tokens term measured between widths 32 and 64 (a steps ladder
    at each) was carried to a target at width 256, two doublings past 64, because the width ladder alone reached
    128; its point was 12–17 % off. The term's reach is the widths (and token counts) it is measured at."""
    d = 1.536e5
    n = np.array([4.4e4, 4.4e4, 4.4e4, 1.37e5, 1.37e5, 4.7e5])  # widths 32, 32, 32, 64, 64, 128
    tokens = np.array([d / 2, d, 2 * d, d, 2 * d, d])
    assert len(predict(n, tokens, interacting(n, tokens), 1.73e6, 2 * d)["forms"]) == 1  # additive only
    n, tokens = np.append(n, 4.7e5), np.append(tokens, 2 * d)  # the steps ladder at width 128 too: in reach
    p = predict(n, tokens, interacting(n, tokens), 1.73e6, 2 * d)
    assert len(p["forms"]) == 2 and p["source"].startswith("local")


def test_a_steps_ladder_at_a_second_width_lands_in_its_own_folder_and_gives_the_prediction_its_term(
        tmp_path, run_cli, monkeypatch):
    """proxy sweep → verify across steps at the proxy's width and at a second width (real runs) → transfer, each
    command in this process (the sweeps' workers spawn from it): the second width's studies and summary are its own
    (never the proxy's ladder resumed at another width), and its points give the loss law the width × tokens term;
    then the own-curve runs `sweep plan` buys, run by `sweep verify --plan`, give transfer the loss ratios of the
    full run's own curve."""
    monkeypatch.setenv("SWEEP_ROOT", str(tmp_path))
    monkeypatch.chdir(tmp_path)
    spec = tmp_path / "spec.yaml"
    spec.write_text(yaml.safe_dump(SPEC))
    code, printed, err = run_cli("proxy", spec, "--width", "32")
    assert code == 0, printed + err
    grid = ("--across", "steps=20,40,80", "--range", "2^-9,2^-5,3", "--seeds", "1", "--refine", "0")
    for width in ((), ("--ladder-width", "64")):
        code, printed, err = run_cli("verify", spec, *grid, *width)
        assert code == 0, printed + err
    summary = json.loads((tmp_path / "v-verify-lr-across-steps-w64" / "summary.json").read_text())
    assert summary["widths"] == [64] and {s["width"] for s in summary["shapes"]} == {64}
    assert (tmp_path / "v-verify-lr-across-steps-w64-80").is_dir()
    assert json.loads((tmp_path / "v-verify-lr-across-steps" / "summary.json").read_text())["widths"] == [32]
    n, d, _ = ladder_points(str(tmp_path), "v")
    assert len(set(zip(n, d, strict=True))) == 6 and len(set(n)) == 2 and len(set(d)) == 3
    out = tmp_path / "full.yaml"
    code, printed, err = run_cli("transfer", spec, "--width", "64", "--steps", "160", "--out", out)  # within reach
    assert code == 0, err
    forms = [f["form"] for f in RunConfig.load(out).provenance.prediction["forms"]]  # the one with the smaller
    assert len(forms) == 2 and forms[1].startswith("local")  # residual standard error is the law: both are fitted
    prediction = RunConfig.load(out).provenance.prediction  # six tiny ladder points: an interval from 0 to 8×
    assert prediction["low"] == 0.0 and prediction["high"] > 2 * prediction["loss"]  # the loss, cut at 0
    assert "curve" not in prediction and "no live band" in printed  # a band no run could leave is refused
    assert prediction["no_band"].startswith("the ladder's curves scaled")  # and why, for the report
    held = prediction["held_out"]  # six points: the law fitted on five predicts the largest rung
    assert held["params"] == max(n) and "held out: the largest rung" in printed
    # found by an outside tester: the second width's ladder was not read for the run's own-curve ratios, and their
    # absence went unsaid; here one seed at widths 32 and 64 on the 80-step schedule: two runs, three needed
    code, printed, err = run_cli("transfer", spec, "--width", "128", "--steps", "80", "--out", tmp_path / "w128.yaml")
    assert code == 0, err
    said = RunConfig.load(tmp_path / "w128.yaml").provenance.prediction["no_refine"]
    assert said.startswith("the ladder ran 2 run(s) on its schedule (depth 2, batch") and "(widths: 32, 64)" in said
    assert "no final loss from its own curve" in printed
    # `sweep plan` buys the runs on that schedule at two widths and `sweep verify --plan` runs them (the plan's law
    # ladder dropped here: the steps ladders above give the law); transfer then records the ratios
    plan = make_plan(PlanRequest(spec, 80 * 32, width=128, flops=1e12, proxy_width=32, goal=0.3), "v")
    assert plan["own_curve"]["widths"] == [32, 64]
    (tmp_path / "plan.yaml").write_text(yaml.safe_dump({**plan, "ladders": []}, sort_keys=False, allow_unicode=True))
    code, printed, err = run_cli("verify", spec, "--plan", tmp_path / "plan.yaml", "--refine", "0")
    assert code in (0, 1) and "ran on the full run's schedule" in printed, printed + err
    code, printed, err = run_cli("transfer", spec, "--width", "128", "--steps", "80", "--out", tmp_path / "w128.yaml")
    refine = RunConfig.load(tmp_path / "w128.yaml").provenance.prediction["refine"]
    assert refine["widths"] == [32, 64] and refine["runs"] == 6  # the plan's 2 seeds × 2 widths, the ladders' 2
    assert "the trainer predicts the final loss from its own curve" in " ".join(printed.split())


def test_a_prediction_no_run_can_reach_is_none_and_the_local_form_keeps_to_its_reach(tmp_path):
    """Found by an outside tester: ladders whose loss falls steeply gave a target 4× past them a negative loss (an
    interval wholly below 0 further out), held over the full run. The local form, which has no floor, is used no
    farther out than the ladder spans; where the law still gives a loss no run can reach, there is no prediction,
    and it says why."""
    def law(n, d):  # steep and interacting: negative just inside the local form's reach
        u, v = np.log(np.asarray(n, float) / 1000), np.log(np.asarray(d, float) / 640)
        return 2.0 - 0.3 * u - 0.5 * v - 0.3 * u * v

    for width, params in ((32, 1000.0), (64, 3000.0)):
        shapes = [{"at": s, "width": width, "params": params, "tokens": 32.0 * s} for s in (20, 40, 80)]
        optima = [{"steps": s, "parametrization": "mup", "best_loss": float(law(params, 32 * s))} for s in (20, 40, 80)]
        write_summary(tmp_path / ("v-verify-lr-across-steps" + ("-w64" if width == 64 else "")),
                      {"axis": "steps", "widths": [width], "shapes": shapes, "optima": optima, "laws": {}})
    assert law(9000, 5120) < 0
    prediction, why = predicted_loss(str(tmp_path), "v", 9000, 5120)
    assert prediction == {} and "gives the target a loss of -" in why and "--ladder-width" in why
    near, _ = predicted_loss(str(tmp_path), "v", 3000, 3000)  # inside: the local form, exact on exact points
    assert near["source"].startswith("local") and near["loss"] == pytest.approx(law(3000, 3000), abs=1e-6)
    assert near["beyond"] == {"params": 1.0, "tokens": pytest.approx(3000 / 2560)}
    far = predict(np.repeat([1e3, 3e3], 3), np.tile([640.0, 1280, 2560], 2), law(np.repeat([1e3, 3e3], 3),
                  np.tile([640.0, 1280, 2560], 2)), 3e5, 2560)  # 100× past the widths: the floored form
    assert far["source"].startswith("Hoffmann") and far["loss"] > 0 and len(far["forms"]) == 1


def test_every_key_transfer_writes_in_a_prediction_is_one_the_config_check_keeps(tmp_path):
    """The check refuses a key transfer never writes (trainer/config/_prediction.py: KEYS); transfer's own
    prediction, built as it builds it (`predicted_loss`, then `live_band`) in each form the law takes (the additive
    form, reduced here: the full one has the same keys; the local one), is read back whole: a key added to what
    transfer writes and not to KEYS fails here (and every transfer with a prediction then stops at its own config)."""
    from sweep.transfer.command import live_band
    from trainer.config._prediction import KEYS, check_prediction

    def additive(n, d):
        return 1.5 + 30 * np.asarray(n) ** -0.34 + 40 * np.asarray(d) ** -0.28

    config = RunConfig.parse({"model": {"width": 256}, "steps": 100})
    for law, form in ((additive, "reduced"), (interacting, "local")):
        root = tmp_path / form
        for width, params in ((32, 1e5), (64, 2e5)):  # a steps ladder at each: the width × tokens term measured
            shapes = [{"at": s, "width": width, "params": params, "tokens": 3.2e5 * s} for s in (1, 2, 4)]
            optima = [{"steps": s, "parametrization": "mup", "best_loss": float(law(params, 3.2e5 * s))}
                      for s in (1, 2, 4)]
            write_summary(root / ("v-verify-lr-across-steps" + ("-w64" if width == 64 else "")),
                          {"axis": "steps", "widths": [width], "shapes": shapes, "optima": optima, "laws": {}})
        prediction, why = predicted_loss(str(root), "v", 2e5, 9.6e5)
        assert prediction["form"].startswith(form) and prediction["held_out"], (prediction.get("form"), why)
        assert live_band(str(root), "v", prediction, config, 64)  # no ladder curves here: why there is no band
        assert set(prediction) <= KEYS and check_prediction(prediction) is prediction
        assert RunConfig.parse({"steps": 10, "provenance": {"prediction": prediction}})
    with pytest.raises(ValueError, match="^unknown key 'levle': not one `sweep transfer` writes"):
        check_prediction({**prediction, "levle": 0.9})  # a misspelled key was kept without a word


def test_a_second_widths_ladder_is_read_from_its_own_folder_and_its_width_checked(tmp_path):
    """A ladder at another width adds its points; its folder's width is the one its summary ran at, and folders
    that only look like one (…-w064, …-wide, a value's study folder …-w64-20) are not ladders."""
    def ladder(folder: str, width: int, values, params: float):
        shapes = [{"at": v, "width": width, "params": params, "tokens": 32 * v} for v in values]
        optima = [{"steps": v, "parametrization": "mup", "best_loss": 3.0 - v / 100} for v in values]
        write_summary(tmp_path / folder, {"axis": "steps", "widths": [width], "shapes": shapes, "optima": optima,
                                          "laws": {}})

    ladder("v-verify-lr-across-steps", 32, [20, 40], 1000.0)
    ladder("v-verify-lr-across-steps-w64", 64, [20, 40], 3000.0)
    for decoy in ("v-verify-lr-across-steps-w064", "v-verify-lr-across-steps-wide", "v-verify-lr-across-steps-w64-20"):
        ladder(decoy, 64, [80, 160], 3000.0)
    assert ladder_points(str(tmp_path), "v") == ([1000.0, 1000.0, 3000.0, 3000.0], [640, 1280] * 2, [2.8, 2.6] * 2)
    ladder("v-verify-lr-across-steps-w64", 32, [20, 40], 3000.0)  # a summary moved into another width's folder
    with pytest.raises(InputError, match=r"field widths: \[32\], where its folder holds \[64\]"):
        ladder_points(str(tmp_path), "v")


def test_a_prediction_far_past_the_ladder_or_cut_at_zero_says_so():
    """Found by an outside tester: a target 750× past the ladder's parameters got 0.1943 [0.0000, 1.0961] with no
    remark, an interval that can flag only a run ending above 1.10. Both facts are now said where it is printed."""
    far = reach_lines({"beyond": {"params": 750.0, "tokens": 1.5}, "cut_at_zero": True, "high": 1.0961})
    assert len(far) == 2 and "params ×750" in far[0] and "tokens" not in far[0]
    assert "cut there" in far[1] and "above 1.0961" in far[1]
    assert reach_lines({"beyond": {"params": 2.0, "tokens": 1.0}, "cut_at_zero": False, "high": 3.0}) == []


RUN = {"model": {"name": "mlp", "width": 32, "depth": 2},
       "data": {"kind": "synthetic-vectors", "options": {"in_features": 16, "classes": 10}},
       "optimizer": {"name": "adamw", "lr": 0.003}, "batch_size": 32, "steps": 20, "log_every": 5, "device": "cpu",
       "eval": {"every": 10, "batches": 2, "noise_scale_batches": 0}, "output": {"study": "full", "kind": "full"}}


def test_status_and_compare_flag_a_run_forced_outside_its_predicted_interval(tmp_path, run_cli, monkeypatch):
    monkeypatch.setenv("SWEEP_ROOT", str(tmp_path))
    runs = {}
    for name, low, high in (("held", 0.0, 99.0), ("forced", 0.01, 0.02)):  # no 20-step run reaches 0.02
        path = tmp_path / f"{name}.yaml"
        prediction = {"loss": (low + high) / 2, "low": low, "high": high, "level": 0.95}
        path.write_text(yaml.safe_dump({**RUN, "output": {**RUN["output"], "root": str(tmp_path), "run": name},
                                        "provenance": {"prediction": prediction}}))
        code, _, err = run_cli("launch", path)
        assert code == 0, err
        runs[name] = RunConfig.load(path)
    code, out, err = run_cli("status", "--format", "json")
    rows = {row["run"]: row for row in json.loads(out)}
    assert rows["forced"]["outside"] and "outside the predicted interval" in rows["forced"]["detail"]
    assert not rows["held"]["outside"] and "OUTSIDE" not in rows["held"]["predicted"]
    assert (rows["forced"]["predicted_low"], rows["forced"]["predicted_high"]) == (0.01, 0.02)  # numbers, for scripts
    code, out, err = run_cli("compare", "held", "forced", "--out", tmp_path / "c.png")
    assert code == 0, err
    lines = {line.split()[1]: line for line in out.splitlines() if "held" in line or "forced" in line}
    assert "OUTSIDE" in lines["forced"] and "OUTSIDE" not in lines["held"], out
    # found by an outside tester: a hand-edited prediction was a traceback (a string), or taken (a bool, NaN, an
    # interval running backwards); a corrupt result.json was a traceback
    config = runs["held"].run_dir() / "config.yaml"
    text = config.read_text()
    interval = "provenance.prediction: loss, low, high: finite numbers, all three, with loss ≥ 0 and 0 ≤ low ≤ high"
    for edit, field in (("loss: 'abc'", interval), ("low: true", interval), ("high: .nan", interval),
                        ("low: 200.0", interval)):
        key = edit.split(":")[0]
        config.write_text(re.sub(rf"(\n\s+){key}: [^\n]*", rf"\g<1>{edit}", text, count=1))
        for command in (("status",), ("compare", "held", "forced")):
            code, out, err = run_cli(*command)
            assert code == 2 and err.count("\n") == 1 and field in err, (edit, command, out, err)
        assert "forced" in run_cli("status")[1]  # an outside tester: one hand-edited run hid every other one
    # found by an outside tester: status followed a config.yaml linked out of the root (compare refused it), and
    # took a FIFO or an empty file for a run with no prediction, or refused it without naming it
    elsewhere = tmp_path.parent / f"{tmp_path.name}-elsewhere.yaml"
    elsewhere.write_text(text)
    for make, said in ((lambda: config.symlink_to(elsewhere), f"(to {elsewhere})"),
                       (lambda: os.mkfifo(config), "not a regular file"),
                       (lambda: config.write_text(""), str(config))):
        config.unlink()
        make()
        for command in (("status",), ("compare", "held", "forced")):
            code, out, err = run_cli(*command)
            assert code == 2 and err.count("\n") == 1 and said in err, (said, command, out, err)
    config.unlink()
    config.write_text(text)
    result = runs["held"].run_dir() / "result.json"
    result.write_text("[" * 100_000 + "]" * 100_000)
    code, out, err = run_cli("status")
    assert code == 2 and err.count("\n") == 1 and "result.json is damaged" in err, (out, err)
    # found by an outside tester: status read a result.json, a curve file or a whole curve folder linked out of
    # the root (a copy edited to "diverged", val loss × 9), where compare, sql and report refuse them
    result.write_text(json.dumps({"status": "completed", "step": 1}))  # the fields every reader of a result takes
    curve = next(tmp_path.rglob("run=held"))
    part = next(curve.glob("*.parquet"))
    outside = tmp_path.parent / f"{tmp_path.name}-outside"
    outside.mkdir()
    for path in (result, part, curve):
        moved = outside / path.name
        path.rename(moved)
        path.symlink_to(moved, target_is_directory=moved.is_dir())
        code, out, err = run_cli("status")
        assert code == 2 and err.count("\n") == 1 and "leads out of the results root" in err, (path, out, err)
        path.unlink()
        moved.rename(path)
    assert run_cli("status")[0] == 0


def test_three_ladder_points_give_no_prediction_rather_than_an_interval_of_width_zero(tmp_path):
    """Found by an outside tester: three points fit the reduced form's three unknowns exactly, and the prediction
    came with the interval [2.5043, 2.5043]; the run, at 2.3661, was flagged outside it. With no residual left to
    price the noise there is no interval, so there is no prediction, and it says what would give one."""
    law = lambda n, d: 1.2 + 50 * np.asarray(n, float) ** -0.5 + 20 * np.asarray(d, float) ** -0.3  # noqa: E731
    shapes = [{"at": w, "width": w, "params": 1000.0 * w, "tokens": 6400.0} for w in (32, 64)]
    optima = [{"width": w, "parametrization": "mup", "best_loss": float(law(1000.0 * w, 6400))} for w in (32, 64)]
    write_summary(tmp_path / "v-verify-lr", {"axis": "width", "widths": [32, 64], "shapes": shapes, "optima": optima,
                                             "laws": {}})
    shapes = [{"at": s, "width": 32, "params": 32000.0, "tokens": 32.0 * s} for s in (200, 400)]
    optima = [{"steps": s, "parametrization": "mup", "best_loss": float(law(32000.0, 32 * s))} for s in (200, 400)]
    write_summary(tmp_path / "v-verify-lr-across-steps", {"axis": "steps", "widths": [32], "shapes": shapes,
                                                          "optima": optima, "laws": {}})
    n, _, loss = ladder_points(str(tmp_path), "v")
    assert len(loss) == 3  # the cross: two widths and two token counts sharing one point
    prediction, why = predicted_loss(str(tmp_path), "v", 256000.0, 25600.0)
    assert prediction == {} and "3 ladder points" in why and "one more rung" in why
