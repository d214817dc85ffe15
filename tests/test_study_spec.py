"""The study spec and its search space: RunConfig paths, ranges the RunConfig accepts, β half-lives,
the shipped specs, and one-line errors (exit 2, no study, no file) for bad specs and flags."""
import math

import optuna
import pytest
import yaml

from sweep.errors import InputError
from sweep.examples import example
from sweep.study.preflight import prepare
from sweep.study.space import HalflifeParam, Space, parse_param, set_path
from sweep.study.spec import load_spec, parse_spec
from sweep.study.storage import StorageURL, storage_url
from sweep.study.trial import trial_config
from tests.sweep_helpers import file_tree, spec_dict, write_spec


def test_halflife_maps_to_beta_two_to_the_minus_one_over_h():
    p = HalflifeParam(type="halflife", low=1, high=1000)
    assert p.beta(693.1, tokens_per_step=1) == pytest.approx(0.999, abs=1e-6)
    assert p.beta(13.51, 1) == pytest.approx(0.95, abs=1e-4)
    assert p.beta(1, 1) == 0.5  # a gradient one step old already weighs half
    tokens = HalflifeParam(type="halflife", unit="tokens", low=1, high=1e9)
    assert tokens.beta(693.1 * 4096, tokens_per_step=4096) == pytest.approx(0.999, abs=1e-6)
    # the same half-life in tokens keeps the averaging window when the batch doubles: one step at 2×
    # the batch decays the average as much as two steps did (β at 2B = β² at B)
    assert tokens.beta(1e5, 2048) == pytest.approx(tokens.beta(1e5, 1024) ** 2, rel=1e-12)


def test_param_kinds_are_inferred_and_sampled_within_range():
    space = Space({"optimizer.lr": parse_param({"low": 1e-4, "high": 1e-1, "log": True}),
                   "batch_size": parse_param({"type": "int", "low": 8, "high": 32, "step": 8}),
                   "model.options.zero_readout": parse_param({"choices": [True, False]}),
                   "optimizer.eps": parse_param(1e-8),
                   "optimizer.beta2": parse_param({"type": "halflife", "low": 6.5, "high": 700})})
    study = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=1))
    for _ in range(20):
        trial = study.ask()
        params = space.suggest(trial)
        values = space.values(params, tokens_per_step=64)
        assert 1e-4 <= values["optimizer.lr"] <= 1e-1
        assert values["batch_size"] in (8, 16, 24, 32)
        assert values["optimizer.eps"] == 1e-8 and "optimizer.eps" not in params  # fixed values are not searched
        assert 0.9 <= values["optimizer.beta2"] <= 0.999
        assert values["optimizer.beta2"] == 2 ** (-1 / params["optimizer.beta2.halflife_steps"])
        study.tell(trial, 0.0)


def test_trial_config_sets_sampled_values_width_seed_output_and_secret_free_provenance(tmp_path):
    spec = parse_spec(spec_dict())
    job = prepare(spec, width=16, parametrization=None, trials=None, storage=None, password_env=None,
                  root=str(tmp_path))
    cfg = trial_config(job, {"optimizer.lr": 0.0123, "schedule.warmup_fraction": 0.2}, seed_index=1,
                       run_name="r", trial=7)
    assert cfg.optimizer.lr == 0.0123 and cfg.schedule.warmup_fraction == 0.2
    assert cfg.model.width == 16 and cfg.model.parametrization == "mup" and cfg.seed == 1
    assert cfg.output.study == "tiny" and cfg.output.kind == "proxy"
    assert cfg.run_dir() == tmp_path.resolve() / "tiny" / "runs" / "r"
    assert cfg.provenance.study == "tiny-w16-mup" and cfg.provenance.trial == 7
    assert cfg.provenance.storage.startswith("sqlite:///")


def test_a_trials_later_seeds_are_judged_on_its_first_seeds_held_out_batches(tmp_path):
    # bug caught: each seed draws its own val batches, so seeds_per_trial averages over val draws as well as training
    spec = parse_spec(spec_dict(run={"seed": 3}))
    job = prepare(spec, width=16, parametrization=None, trials=None, storage=None, password_env=None,
                  root=str(tmp_path))
    first, second = (trial_config(job, {}, seed_index=i, run_name=f"r{i}", trial=0) for i in (0, 1))
    assert (first.seed, second.seed) == (3, 4) and first.eval.seed is None and second.eval.seed == 3
    own = parse_spec(spec_dict(run={"eval": {"seed": 9}}))  # a spec's own held-out seed is kept
    job = prepare(own, width=16, parametrization=None, trials=None, storage=None, password_env=None,
                  root=str(tmp_path))
    assert trial_config(job, {}, seed_index=1, run_name="r", trial=0).eval.seed == 9


def test_shipped_specs_validate(tmp_path):
    from sweep.examples import names
    from trainer.config import RunConfig

    assert set(names()) == {"demo", "mlp", "gpt-tokens", "gpt-proxy-run", "llama", "optimizers", "per-module"}
    assert RunConfig.load(example("gpt-proxy-run")).model.parametrization == "mup"
    for name in ("demo", "mlp", "llama", "optimizers", "per-module"):  # each one validated
        spec = load_spec(example(name))
        prepare(spec, width=32, parametrization=None, trials=None, storage=None, password_env=None, root=str(tmp_path))
    # the .bin study, pointed at a small token folder
    import numpy as np
    folder = tmp_path / "tokens"
    folder.mkdir()
    for split in ("train", "val"):
        np.random.default_rng(0).integers(0, 300, 50_000, dtype=np.uint16).tofile(folder / f"{split}.bin")
    raw = yaml.safe_load(example("gpt-tokens").read_text())
    raw["run"]["data"].update(path=str(folder), vocab_size=300)
    job = prepare(parse_spec(raw), width=32, parametrization=None, trials=None, storage=None, password_env=None,
                  root=str(tmp_path))
    assert job.tokens_per_example == 256 and job.total_steps == math.ceil(20_000_000 / (32 * 256))


BAD_SPECS = [
    ({"search": {"optimizer.lrr": {"low": 1e-3, "high": 1e-2}}}, "search.optimizer.lrr: not a RunConfig field"),
    ({"search": {"optimizer.lr": {"low": 0.1, "high": 0.01}}}, "search.optimizer.lr.low: 0.1 is above high 0.01"),
    ({"search": {"optimizer.lr": {"low": 0.0, "high": 0.1, "log": True}}},
     "search.optimizer.lr.low: a log range needs low > 0"),
    ({"sampler": {"name": "bayes"}}, "sampler.name:"),
    ({"pruner": {"name": "asha"}}, "pruner.name:"),
    ({"search": {"optimizer.beta1": {"low": 0.8, "high": 1.0}}},
     "search.optimizer.beta1: 1.0 is rejected by the RunConfig"),
    ({"search": {"optimizer.lr": {"low": -1.0, "high": 0.1}}}, "search.optimizer.lr: -1.0 is rejected"),
    ({"search": {"optimizer": {"low": 1, "high": 2}}}, "search.optimizer: a section, not a value"),
    ({"search": {"model.width": {"low": 32, "high": 64}}}, "search.model.width: set by the sweep"),
    ({"search": {"optimizer.lr": {"type": "halflife", "low": 1, "high": 10}}},
     "search.optimizer.lr: type halflife applies to"),
    ({"search": {"optimizer.lr": {"low": 1e-3, "high": 1e-2, "lgo": True}}}, "search.optimizer.lr.lgo: unknown key"),
    ({"search": {"model.options.no_such_option": {"low": 1.0, "high": 2.0}}}, "model.options"),
    ({"serach": {}}, "serach: unknown key"),
    ({"run": {"output": {"root": "x"}}}, "run.output: set by the sweep"),
    ({"run": {"optimizer": {"lr": -1}}}, "run.optimizer.lr:"),
    ({"run": {"data": {"kind": "text", "path": "/no/such/file", "options": {}}}}, "data.path:"),
    ({"objective": {"last": 0}}, "objective.last:"),
    ({"name": "has space"}, "name:"),
]


@pytest.mark.parametrize("change,message", BAD_SPECS, ids=[m.split(":")[0] for _, m in BAD_SPECS])
def test_bad_spec_is_one_line_exit_2_and_writes_nothing(tmp_path, run_cli, monkeypatch, change, message):
    monkeypatch.setenv("SWEEP_ROOT", str(tmp_path / "results"))
    monkeypatch.chdir(tmp_path)
    path = write_spec(tmp_path, **change)
    before = file_tree(tmp_path)
    code, out, err = run_cli("proxy", path, "--width", "16")
    assert code == 2, (out, err)
    assert message in err and err.startswith("error: ") and err.count("\n") == 1, err
    assert file_tree(tmp_path) == before  # no study, no folder, no file


BAD_FLAGS = [
    (("--width", "0"), "--width: must be a positive integer"),
    (("--width", "24"), "model.width: 24 is not a multiple of the head dim 16"),
    (("--width", "16", "--trials", "0"), "--trials: must be at least 1"),
    (("--width", "16", "--backend", "k8s"), "--backend: 'k8s' is not one of local"),
    (("--width", "16", "--workers", "0"), "--workers: must be at least 1"),
    (("--width", "16", "--parametrization", "ntk"), "--parametrization: 'ntk' is not one of mup, sp"),
    (("--width", "16", "--storage", "not a url"), "storage: the value given is not a storage URL"),
    (("--width", "16", "--storage", "postgresql://u:hunter2@localhost/db"),
     "storage: a password in the URL would be recorded"),
    (("--width", "16", "--storage", "postgresql://u@localhost/db", "--storage-password-env", "NO_SUCH_VAR_X"),
     "storage: the environment variable NO_SUCH_VAR_X"),
    (("--width", "16", "--enqueue", "optimizer.lr=5"), "--enqueue: optimizer.lr=5 is outside its search range"),
    (("--width", "16", "--enqueue", "optimizer.beta1=0.9"),
     "--enqueue: 'optimizer.beta1=0.9' is not NAME=VALUE with NAME one of"),
    (("--width", "16", "--timeout", "-1"), "--timeout: must be a positive number"),
]


@pytest.mark.parametrize("flags,message", BAD_FLAGS,
                         ids=[m.split(":")[0] + str(i) for i, (_, m) in enumerate(BAD_FLAGS)])
def test_bad_flag_is_one_line_exit_2_and_writes_nothing(tmp_path, run_cli, monkeypatch, flags, message):
    monkeypatch.setenv("SWEEP_ROOT", str(tmp_path / "results"))
    monkeypatch.chdir(tmp_path)
    path = write_spec(tmp_path)
    before = file_tree(tmp_path)
    code, out, err = run_cli("proxy", path, *flags)
    assert code == 2, (out, err)
    assert message in err and err.count("\n") == 1, err
    assert "hunter2" not in err
    assert file_tree(tmp_path) == before


def test_width_below_base_width_is_valid_under_mup(tmp_path):
    job = prepare(parse_spec(spec_dict()), width=16, parametrization="mup", trials=None, storage=None,
                  password_env=None, root=str(tmp_path))
    assert job.width == 16 < 64


def test_storage_urls_keep_passwords_out_of_what_is_recorded(monkeypatch, tmp_path):
    monkeypatch.setenv("PGPASS_T", "s3cr@t/pw")
    url = storage_url("postgresql://sweep@127.0.0.1:5432/optuna", "PGPASS_T", tmp_path / "x.db")
    assert "s3cr" not in url.redacted and "s3cr" not in repr(url)
    assert url.resolved() == "postgresql://sweep:s3cr%40t%2Fpw@127.0.0.1:5432/optuna"
    templated = storage_url("postgresql://sweep:${PGPASS_T}@db/optuna", None, tmp_path / "x.db")
    assert templated.redacted == "postgresql://sweep:***@db/optuna"
    assert templated.resolved() == "postgresql://sweep:s3cr%40t%2Fpw@db/optuna"  # quoted: it cannot change the host
    assert storage_url(None, None, tmp_path / "o.db") == StorageURL(f"sqlite:///{tmp_path / 'o.db'}")
    assert storage_url("journal:/x/j.log", None, tmp_path).is_journal
    assert storage_url("/x/j.jsonl", None, tmp_path).is_journal
    with pytest.raises(InputError, match="password in the URL"):
        storage_url("postgresql://sweep:plain@db/optuna", None, tmp_path)


def test_set_path_creates_levels_and_copies():
    tree = {"model": {"name": "gpt"}}
    out = set_path(tree, "model.options.output_mult", 2.0)
    assert out == {"model": {"name": "gpt", "options": {"output_mult": 2.0}}} and tree == {"model": {"name": "gpt"}}


@pytest.mark.parametrize("name", ["tpe", "gp", "cmaes", "random", "grid", "qmc"])
def test_every_sampler_samples_the_space_within_its_ranges(name):
    from sweep.study.samplers import make_sampler
    from sweep.study.spec import SamplerSpec

    space = parse_spec(spec_dict(search={"optimizer.lr": {"low": 1e-3, "high": 1e-1, "log": True},
                                         "optimizer.beta2": {"type": "halflife", "low": 6.5, "high": 700},
                                         "batch_size": {"type": "int", "low": 4, "high": 8, "step": 4}})).space()
    study = optuna.create_study(sampler=make_sampler(SamplerSpec(name=name, seed=0), space))
    for _ in range(6):
        trial = study.ask()
        values = space.values(space.suggest(trial), tokens_per_step=64)
        assert 1e-3 <= values["optimizer.lr"] <= 1e-1 and values["batch_size"] in (4, 8)
        assert 0.89 < values["optimizer.beta2"] < 0.9991
        study.tell(trial, values["optimizer.lr"])


def test_sampler_and_pruner_options_are_checked_in_one_line(tmp_path, run_cli, monkeypatch):
    monkeypatch.setenv("SWEEP_ROOT", str(tmp_path / "results"))
    path = write_spec(tmp_path, sampler={"name": "tpe", "options": {"n_startup": 3}})
    code, _, err = run_cli("proxy", path, "--width", "16")
    assert code == 2 and err.startswith("error: sampler.options: tpe rejected them") and err.count("\n") == 1
    path = write_spec(tmp_path, pruner={"name": "hyperband", "options": {"reduction": 3}})
    code, _, err = run_cli("proxy", path, "--width", "16")
    assert code == 2 and "pruner.options" in err
    assert not (tmp_path / "results").exists()


def optimizer_choice_spec(search: dict | None = None, **changes) -> dict:
    return spec_dict(**changes, search={"optimizer.name": {"choices": ["adamw", "lion", "muon"], "when": {
        "adamw": {"optimizer.lr": {"low": 1e-3, "high": 0.1, "log": True},
                  "optimizer.beta2": {"type": "halflife", "low": 6.5, "high": 700}},
        "lion": {"optimizer.lr": {"low": 1e-4, "high": 1e-2, "log": True},
                 "optimizer.lion.beta2": {"low": 0.95, "high": 0.995}},
        "muon": {"optimizer.lr": {"low": 1e-3, "high": 0.1, "log": True}, "optimizer.muon.ns_steps": 3}}},
        "optimizer.weight_decay": {"low": 0.0, "high": 0.3}, **(search or {})})


@pytest.mark.parametrize("sampler", ["tpe", "random", "gp"])
def test_a_conditional_space_samples_only_valid_combinations(sampler):
    # the classic bugs: Lion's box used for AdamW (one distribution for every choice), a setting of another
    # optimizer in the config (optimizer.lion under muon: the RunConfig refuses it), a branch never set
    from sweep.study.samplers import make_sampler
    from trainer.config import RunConfig

    spec = parse_spec(optimizer_choice_spec(sampler={"name": sampler, "seed": 0}))
    space = spec.space()
    prepare(spec, width=32, parametrization="mup", trials=None, storage=None, password_env=None)  # checks pass
    boxes = {"adamw": (1e-3, 0.1), "lion": (1e-4, 1e-2), "muon": (1e-3, 0.1)}
    study = optuna.create_study(sampler=make_sampler(spec.sampler, space))
    seen = set()
    for _ in range(24):
        trial = study.ask()
        params = space.suggest(trial)
        name = params["optimizer.name"]
        own = {"adamw": {"optimizer.lr[adamw]", "optimizer.beta2.halflife_steps[adamw]"},
               "lion": {"optimizer.lr[lion]", "optimizer.lion.beta2[lion]"}, "muon": {"optimizer.lr[muon]"}}[name]
        assert set(params) == {"optimizer.name", "optimizer.weight_decay", *own}
        values = space.values(params, tokens_per_step=64)
        cfg = RunConfig.parse(trial_values(spec, values))
        assert cfg.optimizer.name == name and boxes[name][0] <= cfg.optimizer.lr <= boxes[name][1]
        if name == "muon":
            assert cfg.optimizer.muon.ns_steps == 3
        study.tell(trial, cfg.optimizer.lr * (10 if name == "adamw" else 1))
        seen.add(name)
    assert seen == set(boxes)


def trial_values(spec, values: dict) -> dict:
    run = spec.run
    for path, value in values.items():
        run = set_path(run, path, value)
    return run


def test_a_grid_over_a_conditional_space_is_each_choice_with_its_own_branch_grid():
    # the classic bugs: the grid as the product of every choice with every other choice's branch (AdamW run at
    # Lion's LR box, 3 × 5 × 5 × … duplicates), or a branch parameter missing from its choice's points
    from sweep.study.samplers import grid_points, make_sampler
    from trainer.config import RunConfig

    spec = parse_spec(optimizer_choice_spec(sampler={"name": "grid", "seed": 0, "options": {"points": 3}},
                                            search={"optimizer.weight_decay": {"choices": [0.0, 0.1]}}))
    space = spec.space()
    job = prepare(spec, width=32, parametrization="mup", trials=100, storage=None, password_env=None)
    points = grid_points(spec.sampler, space)
    # adamw: 3 LRs × 3 half-lives, lion: 3 LRs × 3 β2's, muon: 3 LRs (ns_steps fixed); each × 2 weight decays
    assert job.n_trials == len(points) == (9 + 9 + 3) * 2
    assert len({tuple(sorted(p.items())) for p in points}) == len(points)
    study = optuna.create_study(sampler=make_sampler(spec.sampler, space))
    for params in points:
        study.enqueue_trial(params)
    boxes = {"adamw": (1e-3, 0.1), "lion": (1e-4, 1e-2), "muon": (1e-3, 0.1)}
    for point in points:
        trial = study.ask()
        params = space.suggest(trial)
        assert params == point
        name = params["optimizer.name"]
        assert {n for n in params if "[" in n} == {n for n in point if n.endswith(f"[{name}]")}
        cfg = RunConfig.parse(trial_values(spec, space.values(params, tokens_per_step=64)))
        assert cfg.optimizer.name == name and boxes[name][0] <= cfg.optimizer.lr <= boxes[name][1]
        study.tell(trial, 1.0)


@pytest.mark.parametrize("change, message", [
    ({"optimizer.beta1": {"low": 0.8, "high": 0.95}},  # searched for every choice, but Lion does not read it
     "search.optimizer.beta1: 0.8 is rejected by the RunConfig with optimizer.name lion (optimizer.beta1: lion "
     "does not"),
    ({"optimizer.name": {"choices": ["adamw", "lion"], "when": {"lion": {"optimizer.muon.momentum": 0.9}}}},
     "search.optimizer.name.when.lion.optimizer.muon.momentum: 0.9 is rejected by the RunConfig (optimizer.muon: "
     "settings of muon, but optimizer.name is lion"),
    ({"optimizer.name": {"choices": ["adamw"], "when": {"lion": {"optimizer.lr": 0.001}}}},
     "search.optimizer.name.when.lion: not one of the choices (adamw)"),
    ({"optimizer.name": {"choices": ["adamw", "schedulefree_adamw"]}},
     "search.optimizer.name: 'schedulefree_adamw' is rejected by the RunConfig (schedule.kind: cosine"),
    ({"optimizer.name": {"choices": ["adamw", "lion"], "when": {"lion": {"optimizer.weight_decay": 0.5}}}},
     "search.optimizer.name.when.lion.optimizer.weight_decay: also searched at the top level"),
    ({"optimizer.name": {"choices": ["adamw", "lion"], "when": {"lion": {"optimizer.nope": 0.5}}}},
     "search.optimizer.name.when.lion.optimizer.nope: not a RunConfig field"),
])
def test_a_conditional_space_that_could_sample_an_invalid_run_is_refused_in_one_line(change, message):
    with pytest.raises(InputError) as err:
        prepare(parse_spec(optimizer_choice_spec(change)), width=32, parametrization="mup", trials=None,
                storage=None, password_env=None)
    assert str(err.value).startswith(message) and "\n" not in str(err.value), str(err.value)


EPS = {"low": 1.0e-9, "high": 1.0e-6, "log": True}


@pytest.mark.parametrize("run, search, message", [
    ({}, {"optimizer.name": {"choices": ["adamw", "lion"]}, "optimizer.eps": EPS},
     ("search.optimizer.eps: 1e-09 is rejected by the RunConfig with optimizer.name lion", "lion does not read it",
      "move it under when: {adamw: …}")),
    ({"optimizer": {"name": "sgd"}},  # the base run reads momentum (AdamW, the default, does not)
     {"optimizer.name": {"choices": ["sgd", "muon"]}, "optimizer.momentum": {"low": 0.8, "high": 0.95}},
     ("search.optimizer.momentum: 0.8 is rejected by the RunConfig with optimizer.name muon",
      "move it under when: {sgd: …}")),
    ({"schedule": {"kind": "constant"}},
     {"optimizer.name": {"choices": ["adamw", "schedulefree_adamw"]},
      "schedule.kind": {"choices": ["constant", "cosine"]}},
     ("search.schedule.kind: 'cosine' is rejected by the RunConfig with optimizer.name schedulefree_adamw",
      "move it under when: {adamw: …}")),
    ({"schedule": {"kind": "constant"}}, {"optimizer.name": {"choices": ["adamw", "schedulefree_adamw"]},
                                          "schedule.kind": "cosine"},
     ("search.schedule.kind: 'cosine' is rejected by the RunConfig with optimizer.name schedulefree_adamw",)),
    ({}, {"optimizer.name": {"choices": ["lion", "lion"]}},
     ("search.optimizer.name.choices: 'lion' is given twice; give each choice once",)),
])
def test_a_choice_that_does_not_read_a_searched_setting_is_refused_before_anything_is_written(
        tmp_path, run_cli, monkeypatch, run, search, message):
    # the classic bug: each parameter checked alone on the base run (adamw reads ε, lion alone is valid), so the
    # sweep starts and every lion trial FAILS; or a choice given twice, drawn twice as often
    monkeypatch.setenv("SWEEP_ROOT", str(tmp_path / "results"))
    path = write_spec(tmp_path, run=run, search=search, sampler={"name": "random", "seed": 0})
    code, _, err = run_cli("proxy", path, "--width", "32", "--workers", "1")
    assert code == 2 and err.count("\n") == 1 and err.startswith("error: " + message[0]), err
    assert all(part in err for part in message[1:]), err
    assert not (tmp_path / "results").exists()


def test_a_setting_only_some_choices_read_is_accepted_under_their_when():
    spec = spec_dict(run={"schedule": {"kind": "constant"}}, search={"optimizer.name": {
        "choices": ["adamw", "lion", "schedulefree_adamw"],
        "when": {"adamw": {"optimizer.eps": EPS, "schedule.kind": {"choices": ["constant", "cosine"]}}}}})
    prepare(parse_spec(spec), width=32, parametrization="mup", trials=None, storage=None, password_env=None)


def test_a_boolean_is_in_no_numeric_range():
    """`--enqueue optimizer.roles.embedding.lr_mult=true` ran a trial at 1.0 (a bool is an int to Python; outside
    tester): no number range holds True or False."""
    for raw in ({"low": 0.5, "high": 2.0}, {"low": 0, "high": 3, "type": "int"}, {"type": "halflife", "low": 0.5,
                                                                                    "high": 700}):
        param = parse_param(raw)
        assert param.contains(1) and not param.contains(True) and not param.contains(False), raw
