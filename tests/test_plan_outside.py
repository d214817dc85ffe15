"""`sweep plan` and `sweep verify --plan` as an outside tester used them: the budget the short-budget line names
really buys the goal (typed back as printed, as --flops and as --share), a budget over the full run, a proxy as wide
as the target, a full run under one batch, a --params no model comes near, a one-rung ladder the plan's own reader
refused, the printed `sweep verify` command, a plan for another study, and hand-edited or planted plan files."""
from __future__ import annotations

import os
import re
from dataclasses import replace
from pathlib import Path

import pytest
import yaml
from rich.console import Console

from sweep.errors import InputError
from sweep.forecast import planfile
from sweep.plan.command import PlanRequest, make_plan, run_plan
from sweep.verify.planned import PLANNED, run_planned
from sweep.verify.request import VerifyRequest

EXAMPLES = Path(__file__).parents[1] / "sweep" / "examples"
QUIET = Console(width=200, file=open(os.devnull, "w"))


def test_the_budget_the_line_names_buys_the_goal_when_typed_back_as_printed(tmp_path, monkeypatch, capsys):
    """A 125M llama at 5 %: the line used to name 4.92e+17 FLOPs (24.15 %), which bought ±0.51, not ±0.5 (the greedy
    growth is path-dependent and the figure was rounded down). Under the full run it is named as a --share."""
    monkeypatch.setenv("SWEEP_ROOT", str(tmp_path))
    request = PlanRequest(EXAMPLES / "llama.yaml", 25 * 10 ** 8, params=125e6, depth=12, batch_size=256)
    assert run_plan(request, QUIET) == 1
    line = capsys.readouterr().out.strip()
    assert line.startswith("--share: the budget")
    share = re.search(r"; --share ([0-9.]+) would$", line).group(1)
    assert make_plan(replace(request, share=float(share)), "llama")["verdict"]["reached"]


@pytest.mark.parametrize("changes,line", [
    ({"width": 256, "flops": 1e300}, "--flops: at most 1e+30"),  # was a share printed in ~300 digits
    ({"width": 256, "proxy_width": 512}, "--proxy-width: narrower"),  # was planned, exit 1, a plan file written
    ({"params": 2e6, "proxy_width": 4096}, "--proxy-width: narrower"),
    ({"width": 256, "tokens": 10}, "--tokens: at least 50 steps"),  # was "the goal needs no budget", a plan written
    ({"params": 1e3}, "--params: the nearest model"),  # was silently a 64-wide model of ~10⁵ parameters
])
def test_a_target_or_budget_that_is_no_run_is_refused_before_anything_is_written(tmp_path, monkeypatch, changes,
                                                                                 line):
    monkeypatch.setenv("SWEEP_ROOT", str(tmp_path))
    with pytest.raises(InputError, match=f"^{re.escape(line)}"):
        run_plan(PlanRequest(EXAMPLES / "demo.yaml", **{"tokens": 10 ** 6, **changes}), QUIET)
    assert list(tmp_path.iterdir()) == []


def test_a_proxy_run_too_short_for_a_second_rung_is_said_with_what_to_change(tmp_path, monkeypatch, capsys):
    """A spec of 20 steps: the tokens law's line named bounds the proxy itself lay below ("no second rung an octave
    from 2.048e+04 fits within its bounds [5.12e+04, 2e+06]") and not what to change."""
    monkeypatch.setenv("SWEEP_ROOT", str(tmp_path / "root"))
    spec = tmp_path / "demo.yaml"
    spec.write_text((EXAMPLES / "demo.yaml").read_text().replace("steps: 150", "steps: 20"))
    run_plan(PlanRequest(spec, 2 * 10 ** 6, width=256), Console(width=400))
    said = " ".join(capsys.readouterr().out.split())
    assert ("the spec's proxy run (2.048e+04 tokens) is too short for a second rung: one octave longer is still "
            "under a rung's 50 steps (5.12e+04 tokens); give the spec 25 steps (2.56e+04 tokens) or more") in said
    spec.write_text((EXAMPLES / "demo.yaml").read_text().replace("steps: 150", "steps: 25"))  # the advice, taken
    assert make_plan(PlanRequest(spec, 2 * 10 ** 6, width=256), "demo")["verdict"]["no_room"] == []


def _short_spec(tmp_path: Path) -> Path:
    """The demo spec at 60 steps (61440 tokens): half its tokens are under 50 steps, so a full run 1.5× as long
    leaves the horizon ladder room for the proxy's own rung only (its bounds [51200, 92160]); a full run of 61440
    tokens at batch 16 has the proxy's very schedule."""
    spec = tmp_path / "spec" / "demo.yaml"
    spec.parent.mkdir(exist_ok=True)
    spec.write_text((EXAMPLES / "demo.yaml").read_text().replace("steps: 150", "steps: 60"))
    return spec


def test_a_law_with_room_for_one_rung_is_not_written_as_a_ladder_the_reader_refuses(tmp_path, monkeypatch):
    """1.5× the proxy's tokens: the horizon ladder's bounds hold only the proxy's own rung. It was written as a
    one-rung ladder that `sweep verify --plan` then refused; now it is said, with its bounds (the prior stands), and
    left out."""
    monkeypatch.setenv("SWEEP_ROOT", str(tmp_path))
    spec = _short_spec(tmp_path)
    console = Console(record=True, width=300, file=open(os.devnull, "w"))
    run_plan(PlanRequest(spec, 92160, width=256, goal=0.1, flops=1e16), console)
    plan = planfile.read(tmp_path / "demo" / "plan.yaml", tmp_path)
    assert all(len(ld["rungs"]) >= 2 for ld in plan["ladders"])
    assert [law["name"] for law in plan["verdict"]["no_room"]] == ["lr × tokens"]
    text = console.export_text()
    assert "lr × tokens: no ladder; no second rung an octave from 6.144e+04 fits within its bounds [5.12e+04, " \
           "9.216e+04]" in text
    assert f"sweep verify {spec} --plan {tmp_path / 'demo' / 'plan.yaml'}" in text.replace("\n", "")


def test_a_law_with_room_for_one_rung_is_not_charged_to_the_budget(tmp_path, monkeypatch):
    """Its rung is left out of plan.yaml, so the smallest useful ladder the refusal prices is the width ladder alone,
    and that figure typed back plans it (the one-rung ladder was charged, and the budget named too high)."""
    monkeypatch.setenv("SWEEP_ROOT", str(tmp_path))
    request = PlanRequest(_short_spec(tmp_path), 92160, width=256, goal=0.1, flops=1e10)
    with pytest.raises(InputError, match="^--flops: the budget 1e\\+10 FLOPs") as refused:
        make_plan(request, "demo")
    named = float(re.search(r"; --flops ([0-9.e+]+) would buy it", str(refused.value)).group(1))
    plan = make_plan(replace(request, flops=named), "demo")
    assert [ld["across"] for ld in plan["ladders"]] == ["width"] and plan["verdict"]["no_room"]
    assert plan["total"]["flops"] <= named <= 1.01 * plan["total"]["flops"]


def _plan(tmp_path: Path, monkeypatch) -> Path:
    monkeypatch.setenv("SWEEP_ROOT", str(tmp_path))
    run_plan(PlanRequest(EXAMPLES / "demo.yaml", 614400, width=256, flops=1e16), QUIET)
    return tmp_path / "demo" / "plan.yaml"


def _plan_own(tmp_path: Path, monkeypatch) -> Path:
    """A plan that buys the own-curve runs (sweep/forecast/own_curve.py): beside a ladder across width."""
    monkeypatch.setenv("SWEEP_ROOT", str(tmp_path))
    run_plan(PlanRequest(EXAMPLES / "demo.yaml", 614400, width=256, flops=1e16, goal=0.3), QUIET)
    return tmp_path / "demo" / "plan.yaml"


def _edited(path: Path, edit) -> Path:
    plan = yaml.safe_load(path.read_text())
    edit(plan)
    out = path.with_name("edited.yaml")
    out.write_text(yaml.safe_dump(plan))
    return out


@pytest.mark.parametrize("edit,field", [
    (lambda p: p.update(ladders=["x"]), "ladders[0]"),  # was AttributeError
    (lambda p: p.update(ladders={"a": 1}), "ladders"),  # was AttributeError
    (lambda p: p["ladders"][0].update(seeds=True), "ladders[0].seeds"),
    (lambda p: p["ladders"][0].update(seeds=10 ** 6), "ladders[0].seeds"),  # was a million seeds per point
    (lambda p: p["ladders"][0].update(grid=10 ** 6 + 1), "ladders[0].grid"),
    (lambda p: p["ladders"][0].update(grid=8), "ladders[0].grid"),
    (lambda p: p["ladders"][0].update(grid=65), "ladders[0].grid"),  # verify refused it as --range, never typed
    (lambda p: p["ladders"][0].pop("name"), "ladders[0].name"),  # a KeyError when a refused rung was named
    (lambda p: p["ladders"][0].update(name="a\nb"), "ladders[0].name"),
    (lambda p: p["ladders"][0].update(rungs=[32, float("inf")]), "ladders[0].rungs[1]"),
    (lambda p: p["ladders"][0].update(rungs=[True, 64]), "ladders[0].rungs[0]"),
    (lambda p: p["ladders"][0].update(param="run.dir"), "ladders[0]: param"),
    (lambda p: p["ladders"][0].update(across="../../etc"), "ladders[0]: param"),
    (lambda p: p["ladders"][0].pop("proxy_value"), "ladders[0].proxy_value"),  # was a KeyError mid-run
    (lambda p: p["ladders"][0].update(prior={"centre": 0, "spread": 0}), "ladders[0].prior.spread"),
    (lambda p: p.pop("proxy"), "proxy"),
    (lambda p: p["proxy"].update(width="wide"), "proxy.width"),
    (lambda p: p.update(goal=-1), "goal"),
    (lambda p: p.update(study=["x"]), "study"),
    # keys it never writes were read past in silence, a law's ladder twice was run twice, a rung of 1e14 tokens trained
    (lambda p: p.update(extra=1), "extra: not a plan field; a plan's fields are plan, study"),
    (lambda p: p.update({"a\nb": 1}), "'a\\nb': not a plan field"),  # said on one line
    (lambda p: p["ladders"][0].update(range="0.001,0.1,9"), "ladders[0].range: not a ladder field"),
    (lambda p: p["ladders"][0].update(name="lr × batch"),  # a tokens ladder said to be the batch law in every line
     "ladders[0].name: 'lr × tokens', the name of the law across tokens, got 'lr × batch'"),
    (lambda p: p["ladders"].append(dict(p["ladders"][0])),
     "ladders[1]: a second ladder of optimizer.lr across tokens (as ladders[0])"),
    (lambda p: p["ladders"][0]["rungs"].append(10 ** 14), "ladders[0].rungs: within [9600, 1.2288e+06]"),
    (lambda p: p["ladders"][0]["rungs"].append(1228801), "ladders[0].rungs: within"),  # 2 × the target's 614400
    (lambda p: p["ladders"][0]["rungs"].append(9599), "ladders[0].rungs: within"),  # the proxy's 153600 / 16
    # the own-curve runs (sweep/forecast/own_curve.py), read as strictly as a ladder
    (lambda p: p.update(own_curve=[64, 128]), "own_curve: a mapping"),
    (lambda p: p["own_curve"].update(widths=[64]), "own_curve.widths: two to 8 distinct widths"),
    (lambda p: p["own_curve"].update(widths=[64, 64]), "own_curve.widths: two to 8 distinct widths"),
    (lambda p: p["own_curve"].update(widths=[64, 256]), "own_curve.widths[1]: a whole number in [1, 255]"),
    (lambda p: p["own_curve"].update(seeds=1), "own_curve.seeds: 3 runs or more over the widths"),
    (lambda p: p["own_curve"].update(grid=4), "own_curve.grid: an odd number"),
    (lambda p: p["own_curve"].update(tokens=1.5), "own_curve.tokens: a whole number"),
    (lambda p: p["own_curve"].update(batch_size=0), "own_curve.batch_size: a whole number"),
    (lambda p: p["own_curve"].pop("depth"), "own_curve.depth: a whole number"),
    (lambda p: p["own_curve"].update(steps=9), "own_curve.steps: not an own-curve field"),
])
def test_a_hand_edited_plan_is_one_line_naming_the_field(tmp_path, monkeypatch, edit, field):
    path = _edited((_plan_own if field.startswith("own_curve") else _plan)(tmp_path, monkeypatch), edit)
    with pytest.raises(InputError, match=f"^--plan: {re.escape(field)}"):
        planfile.read(path, tmp_path)


def test_the_own_curve_runs_round_trip_through_the_plan_file(tmp_path, monkeypatch):
    """What `sweep plan` bought for the full run's own-curve prediction is what `sweep verify --plan` reads back."""
    plan = make_plan(PlanRequest(EXAMPLES / "demo.yaml", 614400, width=256, flops=1e16, goal=0.3), "demo")
    read = planfile.read(_plan_own(tmp_path, monkeypatch), tmp_path)
    assert read["own_curve"] == plan["own_curve"] and read["own_curve"]["widths"] == [64, 128]
    assert (read["own_curve"]["depth"], read["own_curve"]["batch_size"], read["own_curve"]["tokens"]) == (2, 16, 614400)


def test_rungs_an_octave_past_where_sweep_plan_bounds_a_ladder_are_read(tmp_path, monkeypatch):
    """The reach is the design's bounds (sweep/plan/command.py `ladders_at`) and an octave: at its ends, a plan."""
    path = _edited(_plan(tmp_path, monkeypatch), lambda p: p["ladders"][0]["rungs"].extend([9600, 1228800]))
    assert {9600, 1228800} <= set(planfile.read(path, tmp_path)["ladders"][0]["rungs"])


@pytest.mark.parametrize("flag,value", [("--widths", "16,32"), ("--seeds", "2")])
def test_a_flag_the_plan_sets_is_named_as_typed(tmp_path, monkeypatch, run_cli, flag, value):
    """--widths beside --plan was refused as `--widths: not used with --across width=…`, a flag never typed; --seeds
    at its default value was taken for not given (typer's default)."""
    path = _plan(tmp_path, monkeypatch)
    code, _, err = run_cli("verify", EXAMPLES / "demo.yaml", "--plan", path, flag, value)
    assert (code, err) == (2, f"error: {flag}: set by the plan ({PLANNED[flag]}); not given with --plan\n")


def test_a_plan_for_another_study_is_refused_before_anything_runs(tmp_path, monkeypatch):
    path = _edited(_plan(tmp_path, monkeypatch), lambda p: p.update(study="other"))
    before = sorted(tmp_path.rglob("*"))
    with pytest.raises(InputError, match="^--plan: a plan for study 'other', not 'demo'"):
        run_planned(path, VerifyRequest(EXAMPLES / "demo.yaml"), QUIET)
    assert sorted(tmp_path.rglob("*")) == before


def test_a_planted_plan_is_refused_before_it_is_read(tmp_path, monkeypatch):
    """A link under the root to a file outside it, a FIFO (reading it hung), a folder, a file too big to be a plan."""
    root = tmp_path / "root"
    root.mkdir()
    monkeypatch.setenv("SWEEP_ROOT", str(root))
    outside = tmp_path / "secret.yaml"
    outside.write_text("plan: 1\n")
    (root / "link.yaml").symlink_to(outside)
    os.mkfifo(root / "fifo.yaml")
    (root / "big.yaml").write_text("#" * (planfile.MAX_BYTES + 1))
    for name, says in (("link.yaml", "--plan:.*root"), ("fifo.yaml", "not a regular file"),
                       (".", "not a regular file"), ("big.yaml", "larger than")):
        with pytest.raises(InputError, match=says):
            planfile.read(root / name, root)


def test_a_plan_outside_the_results_root_is_refused_however_it_is_named(tmp_path, monkeypatch):
    """A copy of the plan outside the root, named by its own path or as ROOT/../copy.yaml, was read and run, while
    the same file through a link under the root was refused (outside tester): a plan is read inside the root only."""
    root = tmp_path / "root"
    plan = _plan_own(root, monkeypatch)
    copy = tmp_path / "copy.yaml"
    copy.write_bytes(plan.read_bytes())
    for named in (copy, root / ".." / "copy.yaml"):
        with pytest.raises(InputError, match=f"^--plan: a plan inside the results root {root} .*, got {named}$"):
            planfile.read(named, root)
    assert planfile.read(plan, root)["study"] == "demo"  # the plan where sweep plan wrote it


def _verify_faked(monkeypatch, verify) -> list:
    """`sweep verify --plan` with verify itself replaced by `verify(request)` (its studies are what cost): the calls."""
    import sweep.verify.planned as planned

    calls = []
    monkeypatch.setattr(planned, "settings", lambda request, spec, axis: ({}, "a trial", 32))
    monkeypatch.setattr(planned, "base_values", lambda spec, chosen, param, width: ({}, 0.01))
    monkeypatch.setattr(planned, "run_verify", lambda request, console: calls.append(request.across) or verify(request))
    monkeypatch.setattr(planned, "check_request", lambda request: None)
    return calls


def test_an_interrupted_plan_stops_and_says_its_ladder_is_not_finished(tmp_path, monkeypatch):
    """Ctrl-C in a rung's verify (exit 130): the plan printed `±inf octave … (rungs spent)` for that ladder and went
    on to the next one; now it says the ladder is not finished, runs nothing more and ends with verify's code."""
    path = _plan(tmp_path, monkeypatch)
    calls = _verify_faked(monkeypatch, lambda request: 130)
    console = Console(record=True, width=300, file=open(os.devnull, "w"))
    assert run_planned(path, VerifyRequest(EXAMPLES / "demo.yaml"), console) == 130
    text = console.export_text()
    first = planfile.read(path, tmp_path)["ladders"][0]
    assert len(calls) == 1 and "inf" not in text and "rungs spent" not in text
    assert (f"{first['name']}: not finished at rungs {planfile.steps(first)[0]}: its interval at the target is not "
            "measured yet; the same command resumes it") in text


def test_trials_left_on_a_rung_are_not_read_as_its_law(tmp_path, monkeypatch):
    """Exit 1 without a summary of these rungs (verify's `N/M trials; the same command resumes it`): the rung did not
    finish, and the plan stops there rather than run the next rung over it."""
    path = _edited(_plan(tmp_path, monkeypatch), lambda p: p["ladders"][0].update(
        rungs=sorted(p["ladders"][0]["rungs"] + [min(p["ladders"][0]["rungs"]) // 2])))
    calls = _verify_faked(monkeypatch, lambda request: 1)
    assert run_planned(path, VerifyRequest(EXAMPLES / "demo.yaml"), QUIET) == 1 and len(calls) == 1


def test_a_rung_verify_refuses_names_the_plans_ladder_not_a_flag_the_user_never_typed(tmp_path, monkeypatch):
    """A rung of the plan that verify refuses was reported as `--across tokens=…`; the user typed `--plan`."""
    path = _edited(_plan(tmp_path, monkeypatch), lambda p: p["ladders"].reverse())

    def refuse(request):
        raise InputError(f"--across {request.across.split(',')[0]}: one step is 1024 tokens (batch 16), so the run "
                         "would train 100352 tokens, not 100000; use whole numbers of steps")

    _verify_faked(monkeypatch, refuse)
    plan = planfile.read(path, tmp_path)
    name, across = plan["ladders"][0]["name"], plan["ladders"][0]["across"]
    with pytest.raises(InputError, match=f"^--plan: ladders\\[0\\] \\({name}\\), {across}=[0-9]+: one step is") as err:
        run_planned(path, VerifyRequest(EXAMPLES / "demo.yaml"), QUIET)
    assert "--across" not in str(err.value)


def test_a_ladder_name_that_is_console_markup_is_refused_before_any_run(tmp_path, monkeypatch):
    """A hand-edited name `[/]` (printable, so the reader took it) ended the plan, after its runs, in rich's
    MarkupError when the ladder's line was said (found beside the fuzzer's name edits, tests/fuzz/plans.py). A
    ladder's name is now the one `sweep plan` gives its law (planfile.LAW_NAMES): refused in one line, nothing run."""
    path = _edited(_plan(tmp_path, monkeypatch), lambda p: p["ladders"][0].update(name="[/]"))
    calls = _verify_faked(monkeypatch, lambda request: 0)
    with pytest.raises(InputError, match=r"^--plan: ladders\[0\]\.name: 'lr × tokens', .*, got '\[/\]'$"):
        run_planned(path, VerifyRequest(EXAMPLES / "demo.yaml"), QUIET)
    assert calls == []


def test_a_plan_whose_version_is_a_boolean_is_refused(tmp_path, monkeypatch):
    """`plan: true` passed the version check (True == 1); the fuzzer's `plan:plan` class found it."""
    path = _edited(_plan(tmp_path, monkeypatch), lambda p: p.update(plan=True))
    with pytest.raises(InputError, match="is not a plan `sweep plan` writes"):
        planfile.read(path, tmp_path)


def test_a_grid_verify_refuses_names_the_plans_ladder_not_the_range_flag(tmp_path, monkeypatch):
    """The plan's grid reaches verify as --range; its refusal was said as `--range: …`, a flag the user never typed
    (the list of flags the plan sets named `--span`, which no line says)."""
    path = _plan(tmp_path, monkeypatch)

    def refuse(request):
        raise InputError("--range: verify scans positive values on a log₂ grid, got [0.0, 1.0, 2.0]")

    _verify_faked(monkeypatch, refuse)
    name = planfile.read(path, tmp_path)["ladders"][0]["name"]
    with pytest.raises(InputError, match=f"^--plan: ladders\\[0\\] \\({name}\\): verify scans positive values"):
        run_planned(path, VerifyRequest(EXAMPLES / "demo.yaml"), QUIET)


def test_a_later_ladders_refused_rung_is_said_before_the_first_ladder_trains(tmp_path, monkeypatch):
    """The fuzzer's find: each ladder's rungs were checked only when the plan reached that ladder, so a rung verify
    refuses in the second ladder surfaced after the first had trained (hours, on a real plan). Every ladder is now
    checked, as verify checks its own call, before anything runs: the refusal names the second ladder, nothing ran."""
    import sweep.verify.planned as planned

    path = _edited(_plan(tmp_path, monkeypatch), lambda p: p["ladders"].append(
        {**p["ladders"][0], "name": "lr × width", "across": "width", "rungs": [64, 128], "proxy_value": 64,
         "target_value": 256}))
    calls, checked = _verify_faked(monkeypatch, lambda request: 0), []

    def check(request):
        checked.append(request.across)
        if len(checked) == 2:
            raise InputError("--across: one step is more than a rung's tokens")
    monkeypatch.setattr(planned, "check_request", check)
    with pytest.raises(InputError, match=r"^--plan: ladders\[1\] \(lr × width\)"):
        run_planned(path, VerifyRequest(EXAMPLES / "demo.yaml"), QUIET)
    assert calls == [] and len(checked) == 2


def test_a_rung_no_model_has_names_the_plans_ladder_not_a_spec_field(tmp_path, monkeypatch):
    """Found by an outside tester: a hand-edited width rung of 24 (head dim 16) was refused as `model.width: 24 is
    not a multiple of the head dim 16`, a field the user never typed; it names the plan's ladder, before any run."""
    import sweep.verify.planned as planned
    from proxies.registry import ModelError

    path = _edited(_plan(tmp_path, monkeypatch), lambda p: p["ladders"].append(
        {**p["ladders"][0], "name": "lr × width", "across": "width", "rungs": [64, 96], "proxy_value": 64,
         "target_value": 256}))
    calls = _verify_faked(monkeypatch, lambda request: 0)

    def check(request):
        if request.across.startswith("width"):
            raise ModelError("model.width: 96 is not a multiple of the head dim 64 (or fix n_head)")
    monkeypatch.setattr(planned, "check_request", check)
    with pytest.raises(InputError, match=r"^--plan: ladders\[1\] \(lr × width\): a rung no model has \(model\.width: "
                                         r"96 is not a multiple"):
        run_planned(path, VerifyRequest(EXAMPLES / "demo.yaml"), QUIET)
    assert calls == []


def test_a_plan_made_again_on_another_grid_names_its_ladder_and_the_way_out(tmp_path, monkeypatch):
    """Found by an outside tester: planned again with a larger budget, a rung the first plan had run on a 9-point grid
    was wanted on 11; verify refused it as `search.optimizer.lr.choices: … differs …; put it back, or give the sweep
    a new name`, a field the user never typed. It names the plan's ladder and what to do."""
    path = _plan(tmp_path, monkeypatch)

    def refuse(request):
        raise InputError("search.optimizer.lr.choices: [1, 2, 3] differs from [1, 2], its value when study demo-x was "
                         "created; put it back, or give the sweep a new name")
    _verify_faked(monkeypatch, refuse)
    name = planfile.read(path, tmp_path)["ladders"][0]["name"]
    with pytest.raises(InputError, match=f"^--plan: ladders\\[0\\] \\({name}\\): a rung of it was run before") as err:
        run_planned(path, VerifyRequest(EXAMPLES / "demo.yaml"), QUIET)
    assert "grid:" in str(err.value) and "put it back" not in str(err.value)


def test_verify_plan_runs_the_own_curve_after_the_ladders_on_the_full_runs_schedule(tmp_path, monkeypatch):
    """The plan's own-curve entry is one width ladder over its widths on the full run's schedule (depth, batch,
    tokens), μP, its seeds and a grid of its size, after every ladder; interrupted, it is said not finished and the
    same command runs the same call again (verify's studies resume: nothing trains twice)."""
    path = _plan_own(tmp_path, monkeypatch)
    own = planfile.read(path, tmp_path)["own_curve"]
    requests = []

    def verify(request):  # Ctrl-C in the own-curve runs the first time
        requests.append(request)
        return 130 if request.schedule and sum(r.schedule is not None for r in requests) == 1 else 0

    _verify_faked(monkeypatch, verify)
    console = Console(record=True, width=300, file=open(os.devnull, "w"))
    assert run_planned(path, VerifyRequest(EXAMPLES / "demo.yaml"), console) == 130
    assert f"{own['name']}: not finished at widths [64, 128]: the same command resumes it" in console.export_text()
    first = len(requests)
    assert run_planned(path, VerifyRequest(EXAMPLES / "demo.yaml"), console) == 0
    last = requests[-1]
    assert [r.schedule is not None for r in requests] == [False] * (first - 1) + [True] + [False] * (first - 1) + [True]
    assert requests[first - 1] == last and last.across == "width=64,128"
    assert (last.schedule, last.seeds, last.parametrizations, last.param) == ((2, 16, 614400), 2, "mup",
                                                                              "optimizer.lr")
    assert last.values == f"{0.01 / 2},{0.01},{0.01 * 2}" and last.span is None  # the very floats of every ladder
    assert "ran on the full run's schedule; `sweep transfer` records the loss ratios" in console.export_text()


def test_a_refused_own_curve_names_the_plans_entry_before_anything_trains(tmp_path, monkeypatch):
    import sweep.verify.planned as planned

    path = _plan_own(tmp_path, monkeypatch)
    calls = _verify_faked(monkeypatch, lambda request: 0)

    def check(request):
        if request.schedule:
            raise InputError("--across width=64,128: AdamW's moments at this batch: κ = 16 makes beta1 = −0.6")
    monkeypatch.setattr(planned, "check_request", check)
    with pytest.raises(InputError, match=r"^--plan: own_curve \(final loss × own curve\), width=64,128: AdamW"):
        run_planned(path, VerifyRequest(EXAMPLES / "demo.yaml"), QUIET)
    assert calls == []


def test_the_own_curve_ladder_runs_the_full_runs_schedule_in_a_folder_of_its_own(tmp_path, monkeypatch):
    """verify's width ladder on a full run's schedule (what `--plan` runs for the own-curve entry): every run at the
    full run's depth, batch and tokens (so its steps), AdamW's moments moved as transfer moves the full run's, in a
    folder transfer's `ladder_runs` reads and no law does; checked, nothing written."""
    from sweep.rules.summary import schedule_folder
    from sweep.study.spec import load_spec
    from sweep.study.trial import base_run
    from sweep.verify.checks import check_request
    from trainer.config import RunConfig

    monkeypatch.setenv("SWEEP_ROOT", str(tmp_path))
    checked = check_request(VerifyRequest(EXAMPLES / "demo.yaml", across="width=64,128", parametrizations="mup",
                                          trials_from="spec", span="0.0005,0.002,3", schedule=(3, 32, 614400)))
    assert checked.out.name == schedule_folder("demo", "optimizer.lr", 3, 32, 614400)
    assert {at: (s["depth"], s["batch_size"], s["steps"], s["tokens"]) for at, s in checked.shapes.items()} == {
        64: (3, 32, 300, 614400), 128: (3, 32, 300, 614400)}
    _, job = checked.jobs[0]
    ran = RunConfig.parse(base_run(job.spec, job.width, "mup"))
    proxy = RunConfig.parse(base_run(load_spec(EXAMPLES / "demo.yaml"), job.width, "mup"))
    assert proxy.batch_size == 16 and 1 - ran.optimizer.beta1 == pytest.approx(2 * (1 - proxy.optimizer.beta1))
    assert list(tmp_path.iterdir()) == []
    long = tmp_path / "long.yaml"  # its folder's name is checked as the others' are, before the plan's ladders run
    long.write_text(yaml.safe_dump({**yaml.safe_load((EXAMPLES / "demo.yaml").read_text()), "name": "n" * 70}))
    with pytest.raises(InputError, match="^name: this verify's study n+… is longer than 100 characters"):
        check_request(VerifyRequest(long, across="width=64,128", parametrizations="mup", trials_from="spec",
                                    span="0.0005,0.002,3", schedule=(3, 32, 614400)))


def test_the_own_curve_row_is_not_bought_where_the_width_ladder_runs_the_full_runs_schedule(tmp_path):
    """Found by an outside tester: the full run at the proxy's depth, batch and tokens, its width ladder at 16 and 32
    already on that schedule, yet the plan priced 12 more runs there and named --flops 9.56e+12 to buy them."""
    plan = make_plan(PlanRequest(_short_spec(tmp_path), 61440, width=128, flops=3.8e11, proxy_width=16), "demo")
    assert plan["own_curve"] is None and plan["ladders"][0]["rungs"] == [16, 32]
    assert plan["verdict"]["own_curve"] == ("final loss × own curve: not bought: the lr × width ladder's 4 runs "
                                            "(widths 16, 32) already run the full run's schedule, and give the final "
                                            "loss from the run's own curve, from 50 % of the run on")


def test_the_own_curve_line_names_no_budget_where_the_ladders_grow_into_any(tmp_path):
    """Found by an outside tester: where a law reaches the goal at no budget the greedy grows the ladders into any
    budget; the line named --flops 4.5e+13 (892 % of the full run, 685 % of it on lr × width)."""
    plan = make_plan(PlanRequest(_short_spec(tmp_path), 491520, width=256, share=0.4, proxy_width=16, goal=0.2),
                     "demo")
    assert plan["own_curve"] is None and "--flops" not in plan["verdict"]["own_curve"]
    assert plan["verdict"]["own_curve"].endswith("more than the ladders leave of the budget; no budget would: the "
                                                 "ladders grow into any budget, as none brings lr × width; lr × "
                                                 "tokens to ±0.2 octave")


def test_the_plan_says_its_ladders_leave_transfer_no_final_loss(tmp_path, monkeypatch):
    """Found by an outside tester: a width ladder at 16 and 32 alone gives the loss law 2 points, and transfer said
    "no prediction" after the plan had run, the plan silent; with a tokens ladder, 3 points (one shared)."""
    monkeypatch.setenv("SWEEP_ROOT", str(tmp_path))
    spec, console = _short_spec(tmp_path), Console(record=True, width=1000)
    run_plan(PlanRequest(spec, 61440, width=128, flops=3.8e11, proxy_width=16), console)
    line = planfile.read(tmp_path / "demo" / "plan.yaml")["verdict"]["final_loss"]
    assert line == ("`sweep transfer` predicts no final loss from these ladders (it fits the loss law across width "
                    "and tokens): they give the law 2 points, and its 3 unknowns need 4 or more; 2 more rung(s) "
                    "across width or tokens add them")
    assert line in console.export_text().splitlines()
    both = make_plan(PlanRequest(spec, 245760, width=256, share=0.4, proxy_width=16), "demo")
    assert "they give the law 3 points" in both["verdict"]["final_loss"]  # one of the tokens ladder's is the proxy's
    longer = make_plan(PlanRequest(spec, 491520, width=256, share=0.4, proxy_width=16), "demo")
    assert [len(ld["rungs"]) for ld in longer["ladders"]] == [2, 3] and longer["verdict"]["final_loss"] == ""


def test_a_narrower_proxy_that_reaches_the_goal_for_less_is_named(tmp_path, monkeypatch):
    """Found by an outside tester: at 5 % the 1.3B llama plan took proxy width 128 (1.99 % of the full run) where
    width 64 reached every law's goal for 0.8 %, unsaid. The plan keeps the widest (its laws are carried least far)
    and names the cheaper width; typed back, that width reaches the goal for the share the line says."""
    monkeypatch.setenv("SWEEP_ROOT", str(tmp_path))
    request = PlanRequest(EXAMPLES / "llama.yaml", int(26e9), params=1.3e9, depth=24, batch_size=512)
    plan = make_plan(request, "llama")
    line = plan["verdict"]["cheaper"]
    width, share = re.search(r"`--proxy-width (\d+)`'s ladders reach it too, for ([0-9.]+) % of the full",
                             line).groups()
    assert plan["proxy"]["width"] == 128 and int(width) < 128 and plan["verdict"]["reached"]
    narrow = make_plan(replace(request, proxy_width=int(width)), "llama")  # its own-curve runs fit the rest too
    ladders = (sum(ld["flops"] for ld in narrow["ladders"]) - narrow["total"]["shared_flops"]) / \
        narrow["target"]["flops"]
    assert narrow["verdict"]["reached"] and f"{100 * ladders:.3g}" == share
    assert ladders < (sum(ld["flops"] for ld in plan["ladders"]) - plan["total"]["shared_flops"]) / \
        plan["target"]["flops"]
    alone = make_plan(replace(request, proxy_width=128), "llama")
    assert alone["verdict"]["cheaper"] == ""  # a proxy the user chose: no other width was weighed


def test_a_full_run_four_times_the_proxys_tokens_gets_the_rungs_between_them(tmp_path, monkeypatch):
    """Found by an outside tester: at 4× the proxy's tokens the horizon ladder stopped at a quarter of the full run's
    tokens, the proxy's own, and the plan said no second rung fits between the bounds (by the guide's, 2× and 4× do)."""
    monkeypatch.setenv("SWEEP_ROOT", str(tmp_path))
    plan = make_plan(PlanRequest(_short_spec(tmp_path), 245760, width=256, share=0.5, proxy_width=16), "demo")
    tokens = next(ld for ld in plan["ladders"] if ld["across"] == "tokens")
    assert tokens["rungs"][:2] == [61440, 122880] and max(tokens["rungs"]) <= 245760
    assert plan["verdict"]["no_room"] == []


def test_a_plan_without_a_ladder_names_no_proxy_sweep_to_run(tmp_path, monkeypatch):
    """Found by an outside tester: a plan with no ladder still said `first: sweep proxy … --width 64` (and `run it
    with sweep verify`), for a plan with nothing to run."""
    monkeypatch.setenv("SWEEP_ROOT", str(tmp_path))
    console = Console(record=True, width=300, file=open(os.devnull, "w"))
    assert run_plan(PlanRequest(EXAMPLES / "demo.yaml", 2 * 153600, width=256), console) == 0
    text = console.export_text()
    assert "no ladder is needed" in text and "sweep proxy" not in text and "sweep verify" not in text


def test_a_plan_whose_priors_are_within_the_goal_says_so_in_one_line(tmp_path, monkeypatch):
    """Found by an outside tester: the guide promises one line; it was a headline, a line per law and the own-curve
    line. The one line names each law's prior at the target."""
    monkeypatch.setenv("SWEEP_ROOT", str(tmp_path))
    console = Console(record=True, width=1000, file=open(os.devnull, "w"))
    run_plan(PlanRequest(EXAMPLES / "llama.yaml", 26 * 10 ** 9, params=1.3e9, depth=24, batch_size=512, goal=100),
             console)
    said, written = console.export_text().strip().splitlines()
    assert said.endswith("no ladder is needed: every law's published prior already holds the LR within ±100 octave "
                         "at the target, carried from proxy width 256 (lr × width ±0.58, lr × batch ±1.96, lr × "
                         "tokens ±3.04, lr × depth ±1.27)")  # the width named: a prior at the target depends on it
    assert written.startswith("plan written to ")


def test_an_explicit_proxy_width_under_32_lets_a_full_run_of_32_be_planned(tmp_path, monkeypatch):
    """Found by an outside tester: `--width 32 --proxy-width 16` was refused as leaving no narrower proxy (widths
    start at 32), while `--width 128 --proxy-width 16` planned rungs 16 and 32. Without --proxy-width the line says
    the real rule."""
    monkeypatch.setenv("SWEEP_ROOT", str(tmp_path))
    request = PlanRequest(EXAMPLES / "demo.yaml", 153600, width=32, proxy_width=16, flops=1e13)
    assert make_plan(request, "demo")["proxy"]["width"] == 16
    with pytest.raises(InputError, match=r"^--width: the full run's width 32 leaves no narrower proxy \(the plan "
                                         r"picks proxy widths from 32; --proxy-width names a narrower one\)$"):
        make_plan(replace(request, proxy_width=None), "demo")


@pytest.mark.parametrize("width", [17, 1])
def test_a_proxy_width_no_model_has_is_named_as_the_flag(tmp_path, monkeypatch, width):
    """Found by an outside tester: `--proxy-width 17` was refused as `model.width: 17 is not a multiple of the head
    dim 16`, a field the user never typed."""
    monkeypatch.setenv("SWEEP_ROOT", str(tmp_path))
    with pytest.raises(InputError, match=f"^--proxy-width: {width} is not a multiple of the head dim"):
        make_plan(PlanRequest(EXAMPLES / "demo.yaml", 122880, width=64, proxy_width=width), "demo")
