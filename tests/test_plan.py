"""`sweep plan`: the FLOP arithmetic (6·N·D and the trainer's own count), the expected intervals, a real target on
paper (a 1.3B llama on 26B tokens at batch 512, nothing trained), the one line when the budget cannot buy the goal,
the plan file `sweep verify --plan` runs rung by rung, and bad targets and budgets refused (exit 2, nothing written)."""
from __future__ import annotations

import io
import math
import re
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from rich.console import Console

from proxies.data import open_data
from proxies.registry import build_model
from sweep.errors import InputError
from sweep.forecast import planfile
from sweep.forecast.interval import Noise, expected_half_width, grid_points, slope_se
from sweep.plan.command import PlanRequest, make_plan, run_plan, suggest, typed
from sweep.plan.printout import percent
from sweep.plan.shapes import Sizer
from sweep.rules.bracket import REFINE
from sweep.rules.prior import Prior, posterior
from sweep.study.spec import load_spec
from tests.sweep_helpers import run_sweep
from trainer.flops import flops_per_token

EXAMPLES = Path(__file__).parents[1] / "sweep" / "examples"


def test_the_plan_prices_a_run_as_the_trainer_counts_it_and_the_full_run_also_at_6nd():
    """A rung's FLOPs are the trainer's flops_per_token of the real model × its tokens, and that count is 6·N·D
    within the attention term and the embedding lookups (which 6·N counts and the trainer does not)."""
    spec = load_spec(EXAMPLES / "demo.yaml")
    sizer = Sizer(spec, 32)
    data = sizer.run.data
    source = open_data(data.kind, seq_len=data.seq_len)
    for width in (32, 128):
        model = build_model("gpt", width, 2, "mup", **{**source.model_options(), **sizer.run.model.options})
        shape = sizer.shape(width)
        assert shape.flops_per_token == flops_per_token(model, data.seq_len)
        assert shape.params == sum(p.numel() for p in model.parameters())
        attention = 12 * 2 * width * data.seq_len
        embeddings = model.wte.weight.numel() + model.wpe.weight.numel()
        assert shape.flops_per_token == pytest.approx(6 * (shape.params - embeddings) + attention, rel=1e-9)
    # goal 0.3: μP's width prior (0 ± 0.1) alone is ±0.39 octave two octaves out, so ±0.5 would need no width ladder
    plan = make_plan(PlanRequest(EXAMPLES / "demo.yaml", 10 ** 7, width=512, flops=1e20, goal=0.3), "demo")
    tokens = sizer.proxy_tokens()
    assert plan["target"]["kaplan_flops"] == 6 * plan["target"]["params"] * 10 ** 7
    assert plan["target"]["flops"] == sizer.shape(512).flops_per_token * 10 ** 7
    width = next(ld for ld in plan["ladders"] if ld["across"] == "width")
    assert width["flops"] == pytest.approx(width["grid"] * width["seeds"] * sum(
        sizer.shape(w).flops_per_token * tokens for w in width["rungs"]))
    own = plan["own_curve"]  # the full run's schedule (its depth and tokens) at the proxy's width and one up
    assert own["widths"] == [plan["proxy"]["width"], 2 * plan["proxy"]["width"]] and own["tokens"] == 10 ** 7
    assert own["flops"] == pytest.approx(own["grid"] * own["seeds"] * sum(
        sizer.shape(w).flops_per_token * 10 ** 7 for w in own["widths"]))
    # the proxy's own rung, in every ladder, is trained once (sweep/study/twin.py): the union of the ladders'
    # grids × seeds there, counted by brute force
    proxy_rung = {(k, s) for ld in plan["ladders"] for k in range(-(ld["grid"] // 2), ld["grid"] // 2 + 1)
                  for s in range(ld["seeds"])}
    shared = sum(ld["grid"] * ld["seeds"] for ld in plan["ladders"]) - len(proxy_rung)
    assert len(plan["ladders"]) >= 2 and plan["total"]["shared_runs"] == shared > 0
    run = sizer.shape(plan["proxy"]["width"]).flops_per_token * tokens
    assert plan["total"]["flops"] == pytest.approx(
        sum(ld["flops"] for ld in plan["ladders"]) - shared * run + own["flops"])
    assert plan["total"]["runs"] == sum(ld["runs"] for ld in plan["ladders"]) - shared + own["runs"]


def test_expected_interval_is_a_regression_slopes_standard_error_combined_with_the_prior():
    noise = Noise(0.8)
    se = slope_se([1, 2, 4, 8], 4, noise)  # u = 0..3: Σ(u − ū)² = 5
    assert se == pytest.approx(0.8 / 2 / math.sqrt(5))
    prior = Prior(0.5, 0.25, "test")
    assert prior.sd_after(se) == pytest.approx((0.25 ** -2 + se ** -2) ** -0.5)
    assert expected_half_width(prior, [1], 4, noise) == pytest.approx(1.96 * 0.25, rel=1e-3)  # one rung: the prior
    widths = [expected_half_width(prior, [1, 2, 4, 8], s, noise) for s in (2, 4, 8, 16)]
    assert all(a > b for a, b in zip(widths, widths[1:], strict=False))  # seeds narrow it
    assert grid_points(prior, [32, 64, 128, 256], 32) % 2 == 1


def test_coverage_of_the_expected_interval_on_synthetic_ladders():
    """The posterior interval the arithmetic promises holds the true slope 95 % of the time when the vertices carry
    the noise it assumes and the true slope is drawn from the prior (3000 synthetic ladders)."""
    rng, prior, noise = np.random.default_rng(0), Prior(0.5, 0.25, "test"), Noise(0.8)
    rungs, seeds = np.array([16, 32, 64, 128, 256.0]), 3
    u = np.log2(rungs)
    se = slope_se(rungs, seeds, noise)
    held = 0
    for _ in range(3000):
        truth = rng.normal(prior.centre, prior.spread)
        optima = truth * u + rng.normal(0, noise.vertex_sd / math.sqrt(seeds), len(u))
        estimate = np.polyfit(u, optima, 1)[0]
        sd = prior.sd_after(se)
        mean = sd ** 2 * (prior.centre / prior.spread ** 2 + estimate / se ** 2)
        held += abs(mean - truth) <= 1.96 * sd
    assert 0.935 <= held / 3000 <= 0.965


def test_a_1p3b_llama_on_26b_tokens_is_planned_on_paper(tmp_path, monkeypatch):
    monkeypatch.setenv("SWEEP_ROOT", str(tmp_path))
    request = PlanRequest(EXAMPLES / "llama.yaml", 26 * 10 ** 9, params=1.3e9, depth=24, batch_size=512)
    console = Console(record=True, width=200)
    code = run_plan(request, console)
    plan = planfile.read(tmp_path / "llama" / "plan.yaml")
    assert code == 0 and plan["verdict"]["reached"]
    assert plan["target"]["params"] == pytest.approx(1.3e9, rel=0.05)
    assert plan["total"]["flops"] <= plan["budget"]["flops"] == pytest.approx(0.05 * plan["target"]["flops"])
    assert {ld["across"] for ld in plan["ladders"]} == {"width", "batch_size", "tokens", "depth"}
    for ld in plan["ladders"]:
        assert ld["expected_at_target"] <= plan["goal"] < ld["prior_at_target"]
        assert ld["proxy_value"] in ld["rungs"] and max(ld["rungs"]) <= ld["target_value"]
    text = console.export_text()
    assert "lr × batch" in text and "of the full run" in text
    refinement = sum(ld["seeds"] * len(ld["rungs"]) * REFINE for ld in plan["ladders"])
    assert f"up to {REFINE} points until its optimum is bracketed (--refine): at most {refinement} runs" in text
    # found by an outside tester: `verify --plan` then stopped at "no study at width 128"; the plan says it first
    width = plan["proxy"]["width"]
    assert f"first: `sweep proxy {request.spec} --width {width}`, since sweep 'llama' has no study at width " \
           f"{width} (it has none yet)" in " ".join(text.split())


def test_a_plan_at_a_width_not_yet_swept_names_the_sweep_to_run_or_the_widths_there_are():
    from sweep.plan.printout import unswept

    assert unswept("s", "s.yaml", 64, [32, 64]) == ""
    assert unswept("s", "s.yaml", 128, [16, 32]) == ("first: `sweep proxy s.yaml --width 128`, since sweep 's' has no "
                                                     "study at width 128 (it has 16, 32: or plan from one with "
                                                     "`--proxy-width 32`)")


def test_a_budget_below_the_smallest_ladder_is_one_line_exit_2_and_nothing_written(tmp_path):
    """Width 256 on 614400 tokens: 5 % cannot buy two rungs and two seeds of one law. It was a table, a plan file
    and, after them on stdout, the line; now the line alone, on stderr, naming the flag that set the budget (the
    default --share), what the smallest useful ladder costs and the budget that buys it, exit 2, nothing written."""
    result = run_sweep(tmp_path, "plan", EXAMPLES / "demo.yaml", "--tokens", "614400", "--width", "256")
    lines = result.stderr.strip().splitlines()
    assert result.returncode == 2 and result.stdout == "" and len(lines) == 1, result
    assert lines[0].startswith("error: --share: the budget 3.15e+11 FLOPs (5.00 % of the full run) cannot buy the "
                               "smallest useful ladder (two rungs, two seeds per law"), lines[0]
    assert list(tmp_path.iterdir()) == []
    ladder, goal = re.search(r"; --share ([0-9.e-]+) would buy it, and --flops ([0-9.e+]+) the goal", lines[0]).groups()
    request = PlanRequest(EXAMPLES / "demo.yaml", 614400, width=256)
    with pytest.raises(InputError, match="cannot buy the smallest"):  # the figure is rounded up, not down
        make_plan(replace(request, share=float(ladder) - 0.01), "demo")
    assert not make_plan(replace(request, share=float(ladder)), "demo")["verdict"]["reached"]  # planned, exit 1
    assert make_plan(replace(request, flops=float(goal)), "demo")["verdict"]["reached"]  # typed back as printed


def test_the_refusal_names_the_flag_the_budget_came_from_and_a_tiny_share_in_significant_digits(tmp_path,
                                                                                                 monkeypatch):
    """A share printed to two decimals of a percent read 0.00 % for any budget under 5e-5 of the full run."""
    monkeypatch.setenv("SWEEP_ROOT", str(tmp_path))
    request = PlanRequest(EXAMPLES / "demo.yaml", 614400, width=256, flops=1e8)
    with pytest.raises(InputError, match=r"^--flops: the budget 1e\+08 FLOPs \(0\.00159 % of the full run\)"):
        run_plan(request, Console(file=open("/dev/null", "w")))
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("share,text", [(1e-300, "1e-298 %"), (1e-9, "1e-7 %"), (3.12e-9, "3.12e-7 %"),
                                        (9.99e-6, "9.99e-4 %"), (1e-5, "0.00100 %"), (3.1e-5, "0.00310 %"),
                                        (0.000672, "0.0672 %"), (0.05, "5.00 %"), (0.6246, "62.5 %"),
                                        (0.999999, "100 %"), (1, "100 %"), (14.7, "1470 %"), (14.712, "1471 %"),
                                        (1500, "1.5e5 %"), (1e300, "1e302 %")])
def test_a_share_prints_in_significant_digits(share, text):
    assert percent(share) == text


def test_a_share_of_1e_300_is_one_short_line_not_280_zeros(tmp_path, monkeypatch):
    """An outside tester's `--share 1e-300` printed a 551-character line, 280 of them zeros."""
    monkeypatch.setenv("SWEEP_ROOT", str(tmp_path))
    request = PlanRequest(EXAMPLES / "demo.yaml", 614400, width=256, share=1e-300)
    with pytest.raises(InputError, match=r"^--share: the budget 6\.31e-288 FLOPs \(1e-298 % of the full run\)") as err:
        run_plan(request, Console(file=open("/dev/null", "w")))
    assert len(str(err.value)) < 300 and "0000" not in str(err.value), str(err.value)
    assert list(tmp_path.iterdir()) == []


def test_a_budget_that_buys_less_than_the_goal_names_one_the_user_can_type_back(tmp_path, monkeypatch, capsys):
    """--flops 5e12 buys the smallest ladder but not ±½ octave, which needs 15× the full run: the line named it as
    a share, 1471.20 %, which --share refuses (at most 1); past the full run it is named as --flops. (It was 4e12
    until the horizon ladder's second rung went up toward the full run's tokens, not down.)"""
    monkeypatch.setenv("SWEEP_ROOT", str(tmp_path))
    request = PlanRequest(EXAMPLES / "demo.yaml", 614400, width=256, flops=5e12)
    assert run_plan(request, Console(width=200, file=open("/dev/null", "w"))) == 1
    lines = capsys.readouterr().out.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("--flops: the budget 5e+12 FLOPs (79.3 % of the full run) buys")
    named = re.search(r"; --flops ([0-9.e+]+) would$", lines[0]).group(1)
    plan = planfile.read(tmp_path / "demo" / "plan.yaml")
    assert float(named) > plan["target"]["flops"] and plan["verdict"]["needed"] == float(named)
    assert make_plan(replace(request, flops=float(named)), "demo")["verdict"]["reached"]


def test_the_plan_names_the_transfer_that_uses_what_it_measures_and_transfer_takes_it(tmp_path, monkeypatch,
                                                                                        run_cli):
    """Found by an outside tester: plan → verify --plan → transfer failed by default, since the plan's top tokens
    rung sits far below the full run's tokens and transfer refuses a law carried more than 2× past its range unless
    --extrapolate. The plan prices each law's interval at the full run, so it names the transfer that carries them
    there, each planned law's fitted rule included; every flag of it is one transfer takes."""
    monkeypatch.setenv("SWEEP_ROOT", str(tmp_path))
    code, out, err = run_cli("plan", EXAMPLES / "demo.yaml", "--width", "512", "--tokens", "2000000", "--batch-size",
                             "64", "--share", "0.5")
    assert code == 1, err
    command = re.search(r"then `sweep (transfer [^`]+)`", out.replace("\n", " ")).group(1).split()
    plan = planfile.read(tmp_path / "demo" / "plan.yaml")
    assert {ld["across"] for ld in plan["ladders"]} == {"width", "batch_size", "tokens"}
    assert {"--horizon-rule", "--batch-rule"} <= set(command) and "--depth-rule" not in command
    assert command[-1] == "--extrapolate"
    code, _, err = run_cli(*command)
    assert code == 2 and err.startswith("error: study: no sweep named 'demo'")  # every flag taken; no sweep yet


def test_a_suggested_budget_is_what_its_text_types_back_as_and_buys_what_it_must():
    """`typed`: --share S up to the full run, --flops past it (--share refuses more than 1), each rounded up;
    `suggest`: the first such value that buys, typed back exactly as printed."""
    full = 6.31e12
    assert typed(0.2415 * full, full) == ("--share 0.25", 0.25 * full)
    assert typed(0.996 * full, full) == ("--share 1", full)
    assert typed(14.712 * full, full) == ("--flops 9.29e+13", 9.29e13)
    for flops in (1e-7 * full, 0.05 * full, 0.99 * full, 1.0001 * full, 3e4 * full):
        text, value = typed(flops, full)
        flag, number = text.split()
        assert value >= flops and value == (float(number) * full if flag == "--share" else float(number))
        assert flag == "--flops" or float(number) <= 1
    need = 0.31 * full
    text, value = suggest(0.2 * full, full, lambda b: b >= need)
    assert text == "--share 0.31" and value >= need


def test_the_plan_runs_rung_by_rung_and_stops_each_ladder_at_its_goal():
    plan = {"goal": 0.5, "ladders": [
        {"name": "a", "rungs": [8, 16, 32, 64], "proxy_value": 16, "target_value": 512},
        {"name": "b", "rungs": [1, 2, 4], "proxy_value": 1, "target_value": 2}]}
    calls = []

    def run_one(ladder, rungs):
        calls.append((ladder["name"], rungs))
        half = 0.5 / len(rungs)  # a law that narrows as rungs are added
        return {"slope": 0.0, "low": -half, "high": half}

    done = planfile.execute(plan, run_one, lambda line: None)
    assert calls == [("a", [16, 32]), ("a", [8, 16, 32]), ("a", [8, 16, 32, 64]), ("b", [1, 2])]
    assert [d["stopped"] for d in done] == ["rungs spent", "goal"]


@pytest.mark.parametrize("changes,line", [
    ({"width": 256, "params": 1e9}, "--width, --params:"),
    ({"width": 256, "share": 0.0}, "--share:"),
    ({"width": 256, "share": 1.5}, "--share:"),
    ({"width": 256, "share": 0.1, "flops": 1e15}, "--share, --flops:"),
    ({"width": 256, "flops": float("nan")}, "--flops:"),
    ({"width": 256, "tokens": 0}, "--tokens:"),
    ({"width": 256, "goal": -1.0}, "--goal:"),
    ({"width": 16}, "--width:"),
    ({"width": 2047}, "--width: 2047 is not a multiple of the head dim"),  # an outside tester: named model.width
])
def test_bad_targets_and_budgets_name_the_flag_and_write_nothing(tmp_path, monkeypatch, changes, line):
    monkeypatch.setenv("SWEEP_ROOT", str(tmp_path))
    request = PlanRequest(EXAMPLES / "demo.yaml", **{"tokens": 10 ** 6, **changes})
    with pytest.raises(InputError, match=f"^{line}"):
        run_plan(request, Console(file=open("/dev/null", "w")))
    assert list(tmp_path.iterdir()) == []


def test_a_bad_budget_through_the_command_is_one_line_and_exit_2(tmp_path):
    result = run_sweep(tmp_path, "plan", EXAMPLES / "demo.yaml", "--tokens", "1000000", "--width", "256",
                       "--share", "0")
    assert result.returncode == 2 and result.stderr.strip() == (
        "error: --share: a fraction of the full run's FLOPs in (0, 1], got 0.0")
    assert list(tmp_path.iterdir()) == []


def test_a_plan_file_not_written_by_the_tool_is_refused(tmp_path):
    (tmp_path / "p.yaml").write_text("plan: 1\nladders: [{rungs: [1], seeds: 2, grid: 9}]\n")
    with pytest.raises(InputError, match=r"ladders\[0\].rungs"):
        planfile.read(tmp_path / "p.yaml")


def test_a_law_whose_prior_already_reaches_the_goal_gets_no_ladder():
    """Twice the proxy's tokens: the horizon prior (D^−0.3 ± 0.15) holds the LR to ±0.29 octave there, inside the
    goal, so the plan spends nothing on that law and says so; four times the tokens needs a ladder. μP's width prior
    (0 ± 0.1, sweep/rules/prior.py) holds it to ±0.39 octave two octaves out (proxy 64 → 256): no width ladder
    either."""
    near = make_plan(PlanRequest(EXAMPLES / "demo.yaml", 2 * 153600, width=256, flops=1e20), "demo")
    assert "tokens" not in {ld["across"] for ld in near["ladders"]}
    assert [law["name"] for law in near["verdict"]["prior_only"]] == ["lr × width", "lr × tokens"]
    assert near["verdict"]["prior_only"][1]["prior_at_target"] == pytest.approx(1.96 * 0.15, rel=1e-3)
    assert near["verdict"]["prior_only"][0]["prior_at_target"] == pytest.approx(2 * 1.96 * 0.1, rel=1e-3)
    far = make_plan(PlanRequest(EXAMPLES / "demo.yaml", 16 * 153600, width=256, flops=1e20), "demo")
    assert "tokens" in {ld["across"] for ld in far["ladders"]}


def test_a_ladder_stops_once_its_measurement_combined_with_the_prior_reaches_the_goal():
    """±0.25 measured on the slope is ±1 octave four octaves out, past the goal; with the prior's sd 0.05 the
    posterior is ±0.38 octave there: the first rungs suffice. The posterior is the one `sweep verify` records in its
    summary (sweep/rules/prior.py's update); a law without one (--prior none) is judged on its measurement alone."""
    prior = Prior(0.0, 0.05, "test")
    ladder = {"name": "c", "rungs": [16, 32, 64], "proxy_value": 16, "target_value": 256, "prior": prior.record()}
    measured = {"slope": 0.0, "low": -0.25, "high": 0.25}
    recorded = {**measured, "posterior": posterior(prior, 0.0, -0.25, 0.25).record()}
    calls = []
    done = planfile.execute({"goal": 0.5, "ladders": [ladder]}, lambda ld, rungs: calls.append(rungs) or recorded,
                            lambda line: None)
    alone = planfile.execute({"goal": 0.5, "ladders": [ladder]}, lambda ld, rungs: measured, lambda line: None)
    assert alone[0]["stopped"] == "rungs spent" and alone[0]["at_target"] == pytest.approx(4 * 0.25)
    assert calls == [[16, 32]] and done[0]["stopped"] == "goal" and done[0]["at_target"] == pytest.approx(
        4 * 1.96 * (0.05 ** -2 + (0.25 / 1.96) ** -2) ** -0.5, rel=1e-3)


def test_an_interval_beside_its_goal_prints_the_digits_that_set_them_apart():
    """±0.5049 was printed `±0.5, not the goal ±0.5` (plan) and `±0.5 … (rungs spent)` (verify --plan)."""
    assert [planfile.octaves(v, 0.5) for v in (0.5049, 0.50004, 0.58, 0.4951)] == ["0.505", "0.50004", "0.58",
                                                                                 "0.495"]
    ladder = {"name": "a", "rungs": [16, 32], "proxy_value": 16, "target_value": 32}
    said = []
    half = 0.5049  # one octave out: the slope's 95 % half-width is the LR's there
    planfile.execute({"goal": 0.5, "ladders": [ladder]}, lambda ld, rungs: {"slope": 0, "low": -half, "high": half},
                     said.append)
    assert said == ["a: ±0.505 octave at the target after rungs [16, 32] (rungs spent)"]


def test_a_plan_without_a_ladder_says_why_in_one_line_instead_of_an_empty_table(tmp_path, monkeypatch, run_cli):
    """Width 128 (two octaves from the 32-wide proxy) on twice the proxy's tokens: every law's prior is within the
    goal, so nothing is planned; the table was printed with its header only."""
    monkeypatch.setenv("SWEEP_ROOT", str(tmp_path))
    console = Console(record=True, width=300, file=open("/dev/null", "w"))
    assert run_plan(PlanRequest(EXAMPLES / "demo.yaml", 2 * 153600, width=128), console) == 0
    text = console.export_text()
    assert planfile.read(tmp_path / "demo" / "plan.yaml")["ladders"] == []
    assert "no ladder is needed: every law's published prior already holds the LR within ±0.5 octave" in text
    assert "┃" not in text and "expected ±oct" not in text and "total 0 runs" not in text
    # a second outside tester: `sweep verify --plan` of it printed nothing, exit 0
    code, out, err = run_cli("verify", EXAMPLES / "demo.yaml", "--plan", tmp_path / "demo" / "plan.yaml")
    assert code == 0 and "has no ladder to run" in out, out + err


@pytest.mark.parametrize("optimizer,source", [("sgd", "Goyal et al. 2017"), ("lion", "no prior published for lion"),
                                              ("adamw", "Malladi et al. 2022")])
def test_the_batch_ladder_is_priced_by_the_specs_optimizers_prior(tmp_path, monkeypatch, optimizer, source):
    """Found by an outside tester: a plan for an SGD spec used Adam's square-root batch prior without a word. The
    prior is the spec's optimizer's (SGD's linear rule); where none is published (Lion), a vague one, said."""
    import yaml

    monkeypatch.setenv("SWEEP_ROOT", str(tmp_path))
    spec = yaml.safe_load((EXAMPLES / "demo.yaml").read_text())
    spec["run"]["optimizer"]["name"] = optimizer
    (tmp_path / "spec.yaml").write_text(yaml.safe_dump(spec))
    request = PlanRequest(tmp_path / "spec.yaml", 4 * 10 ** 6, width=256, batch_size=64, share=1.0)
    shown = io.StringIO()
    run_plan(request, Console(width=300, file=shown))
    ladders = planfile.read(tmp_path / "demo" / "plan.yaml")["ladders"]
    ladder = next(ld for ld in ladders if ld["across"] == "batch_size")
    assert ladder["prior"]["source"].startswith(source)
    assert ("lr × batch: no prior published for lion across batch_size: a vague N(0, 1²)" in shown.getvalue()) == \
        (optimizer == "lion")


def test_a_plan_without_a_width_ladder_says_transfer_will_predict_no_loss(tmp_path, monkeypatch):
    """Found by an outside tester: μP's width prior alone reached the goal, the plan bought no width ladder, and
    transfer then had no predicted loss, unannounced. The plan says so, and what adds one."""
    monkeypatch.setenv("SWEEP_ROOT", str(tmp_path))
    shown = io.StringIO()
    run_plan(PlanRequest(EXAMPLES / "demo.yaml", 16 * 153600, width=256, flops=1e20), Console(width=400, file=shown))
    assert "lr × width: no ladder; the prior alone" in shown.getvalue()
    assert "`sweep transfer` predicts no final loss" in shown.getvalue() and "--widths" in shown.getvalue()


def test_the_own_curve_runs_are_bought_only_from_what_the_ladders_leave_else_one_line(tmp_path, monkeypatch):
    """The laws keep priority: the full run's schedule at two proxy widths is bought only where the ladders leave
    its FLOPs; else one line says what it would cost and the budget that buys it beside the ladders, and that budget,
    typed back as printed, does."""
    monkeypatch.setenv("SWEEP_ROOT", str(tmp_path))
    request = PlanRequest(EXAMPLES / "demo.yaml", 10 ** 7, width=512, share=0.5)
    console = Console(record=True, width=1000)
    run_plan(request, console)
    plan = planfile.read(tmp_path / "demo" / "plan.yaml")
    line = plan["verdict"]["own_curve"]
    assert plan["own_curve"] is None and line in console.export_text().splitlines()
    assert plan["total"]["flops"] == pytest.approx(sum(ld["flops"] for ld in plan["ladders"])
                                                   - plan["total"]["shared_flops"])
    assert re.match(r"final loss × own curve: not bought: its 12 runs on the full run's schedule \(widths \d+, \d+\) "
                    r"cost [0-9.e+]+ FLOPs \([0-9.]+ % of the full run\)", line)
    flag, value, proxy = re.search(r"`(--share|--flops) ([0-9.e+]+) --proxy-width ([0-9]+)` would buy", line).groups()
    budget = {"share": float(value)} if flag == "--share" else {"share": None, "flops": float(value)}
    console = Console(record=True, width=1000)
    run_plan(replace(request, proxy_width=int(proxy), **budget), console)
    bought = planfile.read(tmp_path / "demo" / "plan.yaml")
    assert bought["own_curve"]["widths"] == [int(proxy), 2 * int(proxy)] and bought["verdict"]["own_curve"] == ""
    assert bought["total"]["flops"] <= bought["budget"]["flops"]
    row = next(line for line in console.export_text().splitlines() if "final loss × own curve" in line)
    assert re.search(rf"│ width +│ {proxy}, {2 * int(proxy)} +│ +2 │ +3 │ +12 │ +[0-9.e+]+ │ +[0-9.]+ % │ +- │ "
                     r"the final loss from the run's own curve, from 50 % of the run on", row), row


def test_the_own_curve_widths_are_the_proxys_and_one_octave_up_under_the_full_run():
    from sweep.forecast.own_curve import widths

    assert widths(64, 2048, 32) == [64, 128]
    assert widths(64, 128, 32) == [32, 64]  # up would reach the full run's width: one octave down
    assert widths(32, 64, 32) == []  # neither pair fits: said, not bought
    assert widths(16, 128, 32) == [16, 32]  # a --proxy-width under the smallest searched is the user's choice


def test_the_own_curve_runs_are_not_bought_where_no_ladder_across_width_gives_transfer_a_final_loss():
    """transfer records the loss ratios beside the loss law's final loss, fitted across width and tokens: without a
    width ladder the runs would buy nothing, so they are said and not bought, whatever the budget."""
    plan = make_plan(PlanRequest(EXAMPLES / "demo.yaml", 614400, width=256, flops=1e16), "demo")
    assert [ld["across"] for ld in plan["ladders"]] == ["tokens"] and plan["own_curve"] is None
    assert plan["verdict"]["own_curve"] == ("final loss × own curve: not bought: transfer records the loss ratios "
                                            "beside the loss law's final loss, which needs a ladder across width, and "
                                            "the plan has none")


def test_a_plan_whose_ladders_give_four_points_says_nothing_of_the_final_loss():
    plan = make_plan(PlanRequest(EXAMPLES / "demo.yaml", 10 ** 7, width=512, share=0.5), "demo")
    assert plan["verdict"]["final_loss"] == ""
