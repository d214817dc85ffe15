"""The width ladder as a fidelity (sweep/study/fidelity.py): its bookkeeping on a synthetic objective whose
optimum holds across width (μP's promise) under width-dependent noise. Catches a rung that promotes the wrong
trials, trains them with other settings, or charges the wrong width's cost; a narrowed box that loses the best
trials or leaves the spec's box."""
import math

import optuna
import pytest

from sweep.study import fidelity
from sweep.study.space import Space, parse_param

SPACE = Space({"optimizer.lr": parse_param({"low": 1e-4, "high": 0.25, "log": True}),
               "schedule.warmup_fraction": parse_param({"low": 0.0, "high": 0.3}),
               "model.options.zero_readout": parse_param({"choices": [True, False]}),
               "optimizer.eps": parse_param(1e-8)})
COSTS = {32: 1.0, 64: 3.5, 128: 13.0}  # FLOPs per trial relative to width 32


def objective(width: int, params: dict) -> float:
    """Loss with its optimum at lr 2^-6, warmup 0.1 at every width; a width-dependent wiggle (a narrow width
    ranks close settings a little differently) and a floor that falls with width."""
    x = math.log2(params["optimizer.lr"]) + 6
    wiggle = 0.05 * math.sin(7 * x + width) / math.sqrt(width / 32)
    return x ** 2 / 4 + (params["schedule.warmup_fraction"] - 0.1) ** 2 + 0.1 * params["model.options.zero_readout"] \
        + 2.0 / math.log2(width) + wiggle


def tpe(space: Space) -> optuna.samplers.BaseSampler:
    return optuna.samplers.TPESampler(seed=0, multivariate=True)


@pytest.fixture(autouse=True)
def quiet():
    optuna.logging.set_verbosity(optuna.logging.WARNING)


def test_halving_promotes_the_best_third_unchanged_and_charges_each_width():
    calls = []
    ladder = fidelity.halving([32, 64, 128], COSTS, n0=9, eta=3, space=SPACE, make_sampler=tpe,
                              evaluate=lambda w, p: calls.append((w, p)) or objective(w, p))
    assert [len(r.trials) for r in ladder.rungs] == [9, 3, 1]
    assert [w for w, _ in calls] == [32] * 9 + [64] * 3 + [128]
    for below, rung in zip(ladder.rungs, ladder.rungs[1:], strict=False):
        best = sorted(below.trials, key=lambda t: (t.value, t.number))[:len(rung.trials)]
        assert rung.promoted == [t.number for t in best]
        assert [t.params for t in rung.trials] == [t.params for t in best]  # trained as they were
        assert all(math.isclose(t.value, objective(rung.width, t.params)) for t in rung.trials)
    assert ladder.charged() == 9 * 1.0 + 3 * 3.5 + 1 * 13.0
    assert ladder.best() is ladder.rungs[-1].trials[0]


def test_seeded_rungs_search_the_region_of_the_best_below_and_enqueue_them_first():
    ladder = fidelity.seeded([32, 64], COSTS, trials=[12, 6], top=3, space=SPACE, make_sampler=tpe,
                             evaluate=objective, margin=0.5)
    narrow, wide = ladder.rungs
    assert [len(r.trials) for r in ladder.rungs] == [12, 6]
    best = narrow.ranked()[:3]
    assert wide.promoted == [t.number for t in best]
    assert [t.params for t in wide.trials[:3]] == [t.params for t in best]
    lrs = [t.params["optimizer.lr"] for t in best]
    for t in wide.trials:  # inside the best's span widened by half an octave, inside the spec's box
        assert max(min(lrs) * 2 ** -0.5, 1e-4) <= t.params["optimizer.lr"] <= min(max(lrs) * 2 ** 0.5, 0.25)
        assert t.params["model.options.zero_readout"] in {b.params["model.options.zero_readout"] for b in best}
    assert ladder.charged() == 12 * 1.0 + 6 * 3.5
    assert ladder.best().value <= min(t.value for t in wide.trials[:3])


def test_warm_start_is_seeded_without_narrowing():
    ladder = fidelity.seeded([32, 64], COSTS, trials=[8, 8], top=3, space=SPACE, make_sampler=tpe,
                             evaluate=objective, narrow=False)
    assert [t.params for t in ladder.rungs[1].trials[:3]] == [t.params for t in ladder.rungs[0].ranked()[:3]]
    assert any(t.params["optimizer.lr"] > 2 * max(b.params["optimizer.lr"] for b in ladder.rungs[0].ranked()[:3])
               or t.params["optimizer.lr"] < min(b.params["optimizer.lr"] for b in ladder.rungs[0].ranked()[:3]) / 2
               for t in ladder.rungs[1].trials[3:])  # the whole box is still searched


def test_a_bad_halving_rate_is_refused():
    with pytest.raises(ValueError, match="eta"):
        fidelity.halving([32, 64], COSTS, n0=4, eta=1, space=SPACE, make_sampler=tpe, evaluate=objective)


def test_a_halving_rung_on_the_command_line_runs_the_best_of_the_narrower_width_as_they_are(tmp_path, run_cli,
                                                                                              monkeypatch):
    """`sweep proxy --width 32 --warm-start 16 --warm-start-top 5 --trials 2`: the width-32 study trains exactly the
    width-16 study's best 2, with their settings, each naming where it came from. Each command runs in this process
    (the sweeps' workers spawn from it)."""
    from tests.sweep_helpers import load, write_spec

    monkeypatch.setenv("SWEEP_ROOT", str(tmp_path))
    monkeypatch.chdir(tmp_path)

    spec = write_spec(tmp_path, trials=3)
    code, said, err = run_cli("proxy", spec, "--width", "16")
    assert code == 0, said + err
    code, said, err = run_cli("proxy", spec, "--width", "32", "--warm-start", "16", "--warm-start-top", "5",
                              "--trials", "2")  # a top past the trials asked enqueues only what runs (tester)
    assert code == 0, said + err
    narrow = sorted(load(tmp_path, width=16).trials, key=lambda t: (t.value, t.number))[:2]
    wide = load(tmp_path, width=32).trials
    assert [t.params for t in wide] == [t.params for t in narrow]
    assert [t.user_attrs["warm_start_from"] for t in wide] == [f"tiny-w16-mup#{t.number}" for t in narrow]
    # refused warm starts write nothing: no study at the width asked (a refused --warm-start made an empty one,
    # which then stood in `transfer`'s list of widths and cold-started the next warm start from it)
    names = sorted(s.study_name for s in optuna.get_all_study_summaries(f"sqlite:///{tmp_path}/tiny/optuna.db"))
    (tmp_path / "other").mkdir()
    other = write_spec(tmp_path / "other", trials=3, run={"steps": 30})  # the same name, another spec
    for flags, line in ((["--width", "48", "--warm-start", "24"], "--warm-start: no study tiny-w24-mup"),
                        (["--width", "16", "--warm-start", "32"], "--warm-start: 32 is not narrower"),
                        (["--width", "48", "--warm-start-top", "2"], "--warm-start-top: only with --warm-start"),
                        (["--width", "48", "--warm-start", "0"], "--warm-start")):
        code, _, err = run_cli("proxy", spec, *flags)
        assert code == 2 and line in err and len(err.splitlines()) == 1, err
    code, _, err = run_cli("proxy", other, "--width", "48", "--warm-start", "16")
    assert code == 2 and "made from a different spec" in err, err
    assert sorted(s.study_name for s in optuna.get_all_study_summaries(f"sqlite:///{tmp_path}/tiny/optuna.db")) \
        == names
