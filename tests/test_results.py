"""`sweep results`: trials ranked by value with their params, state, steps and duration, in table,
CSV and JSON; plots as PNG and one HTML page; one-line errors for a missing sweep or a bad flag."""
import io
import json
import subprocess
from pathlib import Path

import pandas as pd
import pytest

from tests.sweep_helpers import run_sweep, write_spec


@pytest.fixture(scope="module")
def swept(tmp_path_factory):
    root = tmp_path_factory.mktemp("results")
    spec = write_spec(root, trials=4, pruner={"name": "median", "options": {"n_startup_trials": 2}},
                      run={"signals": {"every": 5}})
    done = run_sweep(root, "proxy", spec, "--width", "16", "--enqueue", "optimizer.lr=0.001")
    assert done.returncode == 0, done.stderr
    return root, spec


def test_json_ranks_completed_trials_by_value(swept):
    root, _ = swept
    shown = run_sweep(root, "results", "tiny", "--format", "json", "--no-plots")
    assert shown.returncode == 0, shown.stderr
    [(study, rows)] = json.loads(shown.stdout).items()
    assert study == "tiny-w16-mup" and len(rows) == 4
    complete = [r for r in rows if r["state"] == "COMPLETE"]
    assert [r["rank"] for r in complete] == list(range(1, len(complete) + 1))
    assert [r["value"] for r in complete] == sorted(r["value"] for r in complete)
    assert all(r["steps"] > 0 and r["duration_s"] > 0 and "params.optimizer.lr" in r for r in rows)


def test_csv_and_table_and_top(swept):
    root, spec = swept
    shown = run_sweep(root, "results", spec, "--format", "csv", "--top", "2", "--no-plots")
    frame = pd.read_csv(io.StringIO(shown.stdout))
    assert len(frame) == 2 and list(frame["rank"]) == [1, 2] and set(frame["study"]) == {"tiny-w16-mup"}
    table = run_sweep(root, "results", "tiny", "--width", "16", "--no-plots")
    assert table.returncode == 0 and "tiny-w16-mup: top 4 of 4 trials" in table.stdout


def test_plots_are_written_as_png_and_one_html_page(swept):
    """Every view, the top trials' loss curves and, as the runs logged them, the best trial's signals."""
    root, _ = swept
    shown = run_sweep(root, "results", "tiny")
    assert shown.returncode == 0, shown.stderr
    folder = root / "tiny" / "plots" / "tiny-w16-mup"
    for name in ("history.png", "parallel.png", "slice.png", "curves.png", "signals.png"):
        assert (folder / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", name
    html = (folder / "plots.html").read_text()
    assert html.count("<h2>") >= 3 and "plotly" in html.lower() and "src=\"http" not in html  # opens offline


def test_the_html_page_renders_every_plot_in_a_headless_browser(swept, browser):
    """plots.html opened offline in Chromium: each section's plotly figure is drawn (its embedded
    plotly.js ran), not just present as a script."""
    root, _ = swept
    assert run_sweep(root, "results", "tiny").returncode == 0
    page = root / "tiny" / "plots" / "tiny-w16-mup" / "plots.html"
    dom = subprocess.run([*browser, "--dump-dom", page.as_uri()], capture_output=True, text=True, timeout=120).stdout
    sections = page.read_text().count("<h2>")
    assert sections >= 3 and dom.count('class="plot-container') == sections, dom[-2000:]
    assert dom.count('class="main-svg"') >= sections


@pytest.mark.parametrize("args,message", [
    (("nope",), "study: no sweep named 'nope'"),
    (("tiny", "--width", "999"), "study: sweep 'tiny' has no study at width 999"),
    (("tiny", "--format", "xml"), "--format: 'xml' is not one of table, csv, json"),
])
def test_bad_results_input_is_one_line_exit_2(swept, args, message):
    root, _ = swept
    shown = run_sweep(root, "results", *args)
    assert shown.returncode == 2 and message in shown.stderr and shown.stderr.count("\n") == 1, shown.stderr


def optimizer_study(storage=None):
    """AdamW and Lion completed (one bad Lion trial), Muon drawn once and failed, SGD searched but never drawn."""
    import optuna
    from optuna.distributions import CategoricalDistribution, FloatDistribution

    study = optuna.create_study(storage=storage, study_name="tiny-w16-mup")
    study.set_user_attr("spec_name", "tiny")
    names = CategoricalDistribution(["adamw", "lion", "muon", "sgd"])
    for name, lr, value in [("adamw", 0.01, 3.1), ("lion", 0.001, 9.0), ("lion", 0.002, 2.9), ("adamw", 0.02, 3.0),
                            ("muon", 0.01, None)]:
        study.add_trial(optuna.trial.create_trial(
            params={"optimizer.name": name, f"optimizer.lr[{name}]": lr},
            distributions={"optimizer.name": names, f"optimizer.lr[{name}]": FloatDistribution(1e-4, 0.1, log=True)},
            value=value, state=optuna.trial.TrialState.COMPLETE if value else optuna.trial.TrialState.FAIL))
    return study


def test_optimizers_are_ranked_by_their_best_trial():
    # the classic bugs: optimizers ranked by their mean (one bad Lion trial burying the best one) or by trial count;
    # a choice with no completed trial (muon failed, sgd never drawn) left out, as if it had not been searched
    import optuna
    from optuna.distributions import FloatDistribution

    from sweep.results.table import optimizer_choices, optimizer_ranking, trials_frame

    study = optimizer_study()
    ranking = optimizer_ranking(trials_frame(study, Path("studies")), optimizer_choices(study))
    assert ranking[["optimizer", "best", "trial", "completed"]].values.tolist()[:2] == [
        ["lion", 2.9, 2, 2], ["adamw", 3.0, 3, 2]]
    assert list(ranking["rank"][:2]) == [1, 2] and list(ranking["optimizer"][2:]) == ["muon", "sgd"]
    assert ranking[["rank", "best", "trial"]][2:].isna().all().all() and list(ranking["completed"][2:]) == [0, 0]
    plain = optuna.create_study()
    plain.add_trial(optuna.trial.create_trial(params={"optimizer.lr": 0.01}, value=1.0,
                                              distributions={"optimizer.lr": FloatDistribution(1e-4, 0.1)}))
    assert optimizer_ranking(trials_frame(plain, Path("studies"))).empty  # no optimizer searched: no ranking


def test_the_table_keeps_branch_parameters_apart_and_lists_every_optimizer(tmp_path, run_cli, monkeypatch):
    # the classic bug: `[lion]` read as Rich markup, so optimizer.lr[adamw], optimizer.lr[lion], … all show as
    # optimizer.lr; and the ranking silent about a choice never drawn
    monkeypatch.setenv("SWEEP_ROOT", str(tmp_path))
    monkeypatch.setenv("COLUMNS", "250")
    (tmp_path / "tiny").mkdir()
    optimizer_study(f"sqlite:///{tmp_path / 'tiny' / 'optuna.db'}")
    code, out, err = run_cli("results", "tiny", "--no-plots")
    assert code == 0, err
    header = next(line for line in out.splitlines() if "trial" in line and "value" in line)
    assert all(f"optimizer.lr[{name}]" in header for name in ("adamw", "lion", "muon")), out
    ranking = out.split("optimizers by their best trial")[1]
    rows = [[cell for cell in line.split() if cell != "│"] for line in ranking.splitlines()]
    assert ["-", "sgd", "-", "-", "0"] in rows and ["1", "lion", "2.9", "2", "2"] in rows, ranking
