"""Per-role settings: `optimizer.roles.<role>.lr_mult` / `.weight_decay_mult` and `model.init.<role>`.

Each test names the bug it catches: multipliers of 1 that move the groups or the curve, a multiplier that leaks
into another role or misses an optimizer (Muon's hidden part), an init multiplier applied to the wrong parameters,
a role the model does not have silently ignored, and multipliers that break μP's width scaling."""
import json
import math

import pandas as pd
import pytest
import torch
import torch.nn.functional as F
import yaml

from proxies import parametrization
from proxies.data import open_data
from proxies.optimizers import OPTIMIZERS
from proxies.registry import build_model
from sweep.coords import check as cc
from sweep.errors import InputError
from trainer import config as run_config
from trainer.build import build_net
from trainer.checkpoint import list_checkpoints
from trainer.config import ROLES, ConfigError, RunConfig
from trainer.loop import train
from trainer.optim import build_optimizer, param_groups
from trainer.schedule import Schedule, make_scheduler

ALL_ONES = {role: {"lr_mult": 1.0, "weight_decay_mult": 1.0} for role in ROLES}


def config(tmp_path, **overrides) -> RunConfig:
    base = {"model": {"name": "gpt", "width": 128, "depth": 1},
            "data": {"kind": "synthetic-tokens", "seq_len": 32, "options": {"n_tokens": 20000}},
            "optimizer": {"lr": 0.01, "weight_decay": 0.1, "wd_mode": "independent"},
            "schedule": {"kind": "cosine", "warmup_steps": 2},
            "batch_size": 8, "steps": 5, "log_every": 1, "eval": {"every": 5, "batches": 2, "noise_scale_batches": 0},
            "output": {"root": str(tmp_path), "study": "t"}}
    for key, value in overrides.items():
        base[key] = {**base[key], **value} if isinstance(value, dict) and key in base else value
    return RunConfig.parse(base)


def groups_of(model, name: str, roles=None, wd_mode: str = "coupled") -> list[dict]:
    return [{k: v for k, v in g.items() if k != "params"}
            for g in param_groups(model, 0.01, 0.1, optimizer=name, wd_mode=wd_mode, roles=roles)]


def test_the_role_names_are_the_tables():
    """trainer.config keeps its own copy of the roles (it imports no torch): a role added to the μP table but not
    to the config would be refused as unknown."""
    assert run_config.ROLES == parametrization.ROLES


@pytest.mark.parametrize("name", OPTIMIZERS)
@pytest.mark.parametrize("wd_mode", ["coupled", "independent"])
def test_multipliers_of_one_give_the_same_groups_in_the_same_order(name, wd_mode):
    """Every role at 1 (lr and decay): the groups, their order, LRs, decays and ε are today's, for every optimizer.
    Catches a role key that splits groups or reorders them (a checkpoint's optimizer state would no longer load)."""
    model = build_model("gpt", 128, 1, "mup", vocab_size=64, tie_embeddings=name == "sgd")
    roles = {role: (1.0, 1.0) for role in {r.role for r in parametrization.param_rules(model)}}
    assert groups_of(model, name, roles, wd_mode) == groups_of(model, name, None, wd_mode)


def test_multipliers_of_one_reproduce_the_curve_bit_for_bit(tmp_path):
    """A config with every role set to 1 explicitly trains like a textbook loop on today's μP groups (no roles),
    bit for bit on CPU, and keeps the run id of the config without them."""
    plain = config(tmp_path)
    ones = config(tmp_path, optimizer={"roles": ALL_ONES}, model={"init": {role: 1.0 for role in ROLES}})
    assert ones.run_id() == plain.run_id() and "roles" not in ones.to_yaml() and "init" not in ones.to_yaml()
    train(ones)

    data = open_data("synthetic-tokens", seq_len=32, n_tokens=20000, seed=0)
    torch.manual_seed(0)
    model = build_model("gpt", 128, 1, "mup", **data.model_options())
    opt = build_optimizer(model, lr=0.01, weight_decay=0.1, betas=(0.9, 0.95), wd_mode="independent")
    sched = make_scheduler(opt, Schedule("cosine", 5, 2))
    gen = torch.Generator().manual_seed(0)
    for _ in range(5):
        x, y = data.batch("train", 8, gen)
        opt.zero_grad(set_to_none=True)
        F.cross_entropy(model(x).flatten(0, 1), y.flatten()).backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
    weights = torch.load(list_checkpoints(ones.run_dir() / "checkpoints")[-1], weights_only=True)["model"]
    for name, value in model.state_dict().items():
        assert torch.equal(value, weights[name]), name


def lr_and_wd(groups: list[dict]) -> dict[str, tuple[float, float]]:
    return {n: (g["lr"], g["weight_decay"]) for g in groups for n in g["names"]}


@pytest.mark.parametrize("name", OPTIMIZERS)
@pytest.mark.parametrize("role", ["embedding", "hidden", "readout", "norm"])
def test_a_role_multiplier_changes_exactly_that_roles_lr_and_decay(name, role):
    """lr_mult 4 and weight_decay_mult 3 on one role: that role's LR × 4 (Muon's hidden matrices too) and its
    decay × 3 (coupled); every other parameter as before. Catches a multiplier applied by group instead of by role,
    or one that misses an optimizer."""
    model = build_model("gpt", 128, 1, "mup", vocab_size=64)
    roles_of = {r.name: r.role for r in parametrization.param_rules(model)}
    wd_mult = 3.0 if role in {r.role for r in parametrization.param_rules(model) if r.decays} else 1.0  # else refused
    before = lr_and_wd(groups_of(model, name))
    after = lr_and_wd(groups_of(model, name, {role: (4.0, wd_mult)}))
    assert any(r == role for r in roles_of.values())
    for param, (lr, wd) in after.items():
        if roles_of[param] == role:
            assert math.isclose(lr, 4 * before[param][0]) and math.isclose(wd, wd_mult * before[param][1]), param
        else:
            assert (lr, wd) == before[param], param


@pytest.mark.parametrize("role", ["norm", "embedding"])
def test_a_decay_multiplier_on_a_role_that_is_never_decayed_is_refused_by_name(role):
    """Norm gains never decay, embeddings only with decay_embeddings: a weight_decay_mult there changed nothing and
    was taken silently (outside tester); it is a ValueError naming the path. With decay_embeddings the embedding's
    is taken."""
    model = build_model("gpt", 64, 1, "mup", vocab_size=64)
    with pytest.raises(ValueError, match=rf"^optimizer\.roles\.{role}\.weight_decay_mult: no {role} parameter"):
        groups_of(model, "adamw", {role: (1.0, 2.0)})
    groups_of(model, "adamw", {role: (2.0, 1.0)})  # its LR multiplier is fine
    if role == "embedding":
        param_groups(model, 0.01, 0.1, roles={role: (1.0, 2.0)}, decay_embeddings=True)


def test_independent_decay_keeps_the_roles_decay_timescale_when_its_lr_moves():
    """Independent decay: lr_group · wd_group is lr · wd · weight_decay_mult whatever the role's lr_mult (only
    weight_decay_mult moves the decay's timescale), at 2× the base width too."""
    model = build_model("gpt", 128, 1, "mup", vocab_size=64)
    hidden = {r.name for r in parametrization.param_rules(model) if r.role == "hidden"}
    for lr_mult, wd_mult in [(4.0, 1.0), (0.25, 2.0)]:
        groups = groups_of(model, "adamw", {"hidden": (lr_mult, wd_mult)}, wd_mode="independent")
        for name, (lr, wd) in lr_and_wd(groups).items():
            if name in hidden:
                assert math.isclose(lr * wd, 0.01 * 0.1 * wd_mult), name


def test_init_multipliers_scale_exactly_that_roles_weights():
    """model.init.readout 0.5 and .embedding 3: those weights are exactly the default draw × the multiplier (same
    seed), the others untouched; 1 leaves the draw as it is."""
    def net(init):
        torch.manual_seed(0)
        return build_net(run_config.ModelConfig(name="gpt", width=128, depth=1, init=init), {"vocab_size": 64})

    plain, scaled = net({}), net({"readout": 0.5, "embedding": 3.0})
    roles_of = {r.name: r.role for r in parametrization.param_rules(plain)}
    plain_weights, scaled_weights = dict(plain.named_parameters()), dict(scaled.named_parameters())
    for name, role in roles_of.items():
        factor = {"readout": 0.5, "embedding": 3.0}.get(role, 1.0)
        assert torch.equal(scaled_weights[name], plain_weights[name] * factor), name
    assert all(torch.equal(p, q) for p, q in zip(net({"hidden": 1.0}).parameters(), plain.parameters(), strict=True))


@pytest.mark.parametrize("settings,message", [
    ({"optimizer": {"roles": {"embeding": {"lr_mult": 2}}}}, "optimizer.roles.embeding: unknown key"),
    ({"optimizer": {"roles": {"hidden": {"lr_mult": 0}}}}, "optimizer.roles.hidden.lr_mult: Input should be greater"),
    ({"optimizer": {"roles": {"hidden": {"weight_decay_mult": -1}}}}, "optimizer.roles.hidden.weight_decay_mult"),
    ({"optimizer": {"roles": {"hidden": {"lr_mult": float("inf")}}}}, "optimizer.roles.hidden.lr_mult: Input should"
                                                                       " be a finite number"),
    ({"optimizer": {"roles": {"hidden": {"lr_mult": float("nan")}}}}, "optimizer.roles.hidden.lr_mult"),
    ({"model": {"init": {"readout": 0}}}, "model.init.readout: Input should be greater than or equal to 0.0001"),
    ({"model": {"init": {"readout": 1e-320}}}, "model.init.readout: Input should be greater than or equal to 0.0001"),
    ({"model": {"init": {"head": 2}}}, "model.init.head: unknown key (allowed: hidden, input, embedding"),
])
def test_unknown_roles_and_non_positive_multipliers_are_one_line(settings, message):
    with pytest.raises(ConfigError) as err:
        RunConfig.parse({"steps": 1, **settings})
    assert message in str(err.value) and "\n" not in str(err.value)


@pytest.mark.parametrize("settings,message", [
    ({"optimizer": {"roles": {"tied": {"lr_mult": 2}}}}, "optimizer.roles.tied: the model has no tied parameter"),
    ({"model": {"init": {"input": 2}}}, "model.init.input: the model has no input parameter"),
    ({"model": {"init": {"readout": 2}, "options": {"zero_readout": True}}}, "model.init.readout: every readout"),
    ({"model": {"init": {"head": 2}}}, "model.init.head: unknown key"),
    ({"optimizer": {"roles": {"hidden": {"lr_mult": -2}}}}, "optimizer.roles.hidden.lr_mult"),
])
def test_train_refuses_a_role_the_model_lacks_in_one_line_exit_2(run_cli, tmp_path, settings, message):
    """A role the model does not have (tied on an untied GPT, input on a GPT) would change nothing: refused
    before anything is written, like a bad key."""
    raw = {"model": {"name": "gpt", "width": 64, "depth": 1}, "steps": 2, "output": {"root": str(tmp_path / "out")}}
    for key, value in settings.items():
        raw[key] = {**raw.get(key, {}), **value}
    path = tmp_path / "run.yaml"
    path.write_text(yaml.safe_dump(raw))
    code, _, err = run_cli("train", path)
    assert code == 2 and message in err and len(err.strip().splitlines()) == 1, err
    assert not (tmp_path / "out").exists()


def test_inspect_shows_the_effective_multipliers(run_cli):
    code, out, _ = run_cli("inspect", "gpt", "--width", "256", "--set", "optimizer.roles.hidden.lr_mult=3",
                           "--set", "model.init.readout=0.5")
    assert code == 0
    fc = next(line for line in out.splitlines() if "mlp.fc.weight" in line)
    assert "0.75" in fc.split("│")[7]  # LR × = 1/m (m = 4) × 3
    code, _, err = run_cli("inspect", "gpt", "--width", "64", "--set", "optimizer.roles.tied.lr_mult=2")
    assert code == 2 and "optimizer.roles.tied: the model has no tied parameter" in err


# found by an outside tester: a decay multiplier on a role that never decays was shown by inspect (exit 0) and a
# traceback in coord-check, where training refuses it; a --set value that is not YAML was a traceback
@pytest.mark.parametrize("setting, message", [
    ("optimizer.roles.norm.weight_decay_mult=2", "norm.weight_decay_mult: no norm parameter is decayed"),
    ("optimizer.roles.hidden.lr_mult=[", "--set optimizer.roles.hidden.lr_mult: '[' is not a YAML value"),
    ("optimizer.roles.hidden.lr_mult=*a", "--set optimizer.roles.hidden.lr_mult: '*a' is not a YAML value"),
    ("optimizer.roles.hidden.lr_mult=!!python/object:os.system 2", "is not a YAML value (could not determine"),
    ("optimizer.roles.hidden.lr_mult=1:30", "hidden.lr_mult: a number, not text (got '1:30')"),  # was 90 (YAML 1.1)
    ("optimizer.roles.yes.lr_mult=2", "optimizer.roles.yes: unknown key"),  # was `roles.1`: `yes` read as true
])
@pytest.mark.parametrize("command", ["inspect", "coord-check"])
def test_role_settings_refused_by_training_are_one_line_everywhere(tmp_path, run_cli, command, setting, message):
    args = (["inspect", "gpt", "--width", "64"] if command == "inspect" else
            ["coord-check", "--widths", "16,32", "--steps", "2", "--seeds", "1", "--depth", "1", "--opt", "head_dim=16",
             "--out", tmp_path / "cc"])
    code, _, err = run_cli(*args, "--set", setting)
    assert code == 2 and message in err and err.count("\n") == 1, err
    assert not (tmp_path / "cc").exists()


def test_roles_are_the_architectures_under_sp_too():
    """A matrix that grows along both dims is "hidden" under SP as under μP, so one spec's roles name the same
    parameters under both (SP's multipliers stay 1)."""
    for name in ("gpt", "mlp", "resnet", "llama"):
        mup_roles = {r.name: r.role for r in parametrization.param_rules(build_model(name, 128, 2, "mup"))}
        sp_rules = parametrization.param_rules(build_model(name, 128, 2, "sp"))
        assert {r.name: r.role for r in sp_rules} == mup_roles, name
        assert all(r.adam_lr_mult == 1 for r in sp_rules)


@pytest.mark.parametrize("optimizer", ["adamw", "muon"])
def test_coordinate_check_stays_green_for_any_multipliers(optimizer):
    """Width-free multipliers keep μP's scaling: per-role LR × (8 on embeddings, ¼ on hidden matrices, 4 on the
    readout) and init × (2 hidden, 3 readout) pass the coordinate check at widths 64→256."""
    roles = {"embedding": (8.0, 1.0), "hidden": (0.25, 2.0), "readout": (4.0, 1.0)}
    data = open_data("stdlib", seq_len=32, seed=0)

    def make_model(width):
        return build_net(run_config.ModelConfig(name="gpt", width=width, depth=2, init={"hidden": 2.0,
                                                                                        "readout": 3.0}),
                         data.model_options())

    _, _, verdict = cc.coord_check(make_model, lambda seed: data.batch("train", 4, torch.Generator().manual_seed(seed)),
                                   [64, 128, 256], seeds=2, steps=4, optimizer=optimizer,
                                   make_optimizer=lambda model, lr: build_optimizer(model, name=optimizer, lr=lr,
                                                                                    weight_decay=0.1, roles=roles))
    assert verdict.passed, verdict.table[~verdict.table["passed"]]


def test_transfer_names_a_role_setting_whose_verify_optimum_was_a_poor_fit(tmp_path):
    """An outside tester: both widths' optima at the grid's edge (poor fits) gave "drift 0.00", carried as held."""
    from sweep.rules.roles import role_lines, role_records
    from sweep.rules.summary import write_summary

    cfg = RunConfig.parse({"steps": 1, "optimizer": {"roles": {"embedding": {"lr_mult": 4.545}}}})
    optima = [{"parametrization": "mup", "width": w, "optimum": 1.0, "fitted": False, "poor_fit": True}
              for w in (32, 64)]
    write_summary(tmp_path / "v-verify-embedding-lr_mult", {
        "param": "optimizer.roles.embedding.lr_mult", "axis": "width", "widths": [32, 64],
        "parametrizations": {"mup": {"drift": 0.0, "noise": 0.0, "passed": True}}, "optima": optima})
    records = role_records(tmp_path, "v", cfg)
    assert records["optimizer.roles.embedding.lr_mult"]["poor_at"] == [32, 64]  # kept in provenance too
    (line,) = role_lines(records)
    assert line.startswith("[yellow]carried, poorly measured[/]: optimizer.roles.embedding.lr_mult = 4.545")
    assert "width 32, 64 is a poor fit" in line


def test_multipliers_that_shrink_the_init_against_the_update_pass_at_widths_past_the_update_rank(run_cli, tmp_path):
    """An outside tester's red check: LR × 4 and init × ¼ on the hidden matrices, init × 4 on the readout. The update
    of k tokens has rank ≤ k; with 8 × 8 tokens the widths 256–1024 are past it, and μP's sizes are width-free."""
    code, out, err = run_cli("coord-check", "--widths", "256,512,1024", "--opt", "head_dim=16", "--batch-size", "1",
                             "--seq-len", "8", "--set", "optimizer.roles.hidden.lr_mult=4", "--set",
                             "model.init.hidden=0.25", "--set", "model.init.readout=4", "--out", tmp_path / "cc")
    assert code == 0 and "PASS" in out, out + err


@pytest.mark.parametrize("search,message", [
    ({"optimizer.roles.embeding.lr_mult": {"low": 0.5, "high": 2}}, "search.optimizer.roles.embeding.lr_mult: not a "
                                                                    "RunConfig field (at optimizer.roles: hidden"),
    ({"optimizer.roles.embedding.lr_mult": {"low": 0.0, "high": 2}}, "search.optimizer.roles.embedding.lr_mult: 0.0 "
                                                                     "is rejected by the RunConfig"),
    ({"optimizer.roles.tied.lr_mult": {"low": 0.5, "high": 2}}, "optimizer.roles.tied: the model has no tied"),
    ({"model.init.readout": {"low": 0.5, "high": 2}}, "model.init.readout: every readout parameter is zero"),
    ({"optimizer.decay_embeddings": {"choices": [True, False]},  # passed, then the false trials failed (tester)
      "optimizer.roles.embedding.weight_decay_mult": {"low": 0.5, "high": 2}},
     "embedding.weight_decay_mult: no embedding parameter is decayed")
])
def test_a_spec_searching_a_bad_role_is_one_line_exit_2_nothing_written(run_cli, tmp_path, monkeypatch, search,
                                                                        message):
    from tests.sweep_helpers import file_tree, spec_dict, write_spec

    spec = write_spec(tmp_path, search={**spec_dict()["search"], **search},
                      run={"model": {"options": {"block_size": 16, "zero_readout": True}}})
    monkeypatch.setenv("SWEEP_ROOT", str(tmp_path))
    code, _, err = run_cli("proxy", spec, "--width", "16")
    assert code == 2 and message in err and len(err.strip().splitlines()) == 1, err
    assert file_tree(tmp_path) == {"spec.yaml"}


def test_a_decay_multiplier_in_the_branch_that_decays_embeddings_is_accepted(tmp_path):
    """Only the choice that decays the embeddings draws their decay multiplier: a valid spec, checked per choice."""
    from sweep.study.preflight import prepare
    from sweep.study.spec import load_spec
    from tests.sweep_helpers import spec_dict, write_spec

    when = {"True": {"optimizer.roles.embedding.weight_decay_mult": {"low": 0.5, "high": 2}}}
    spec = write_spec(tmp_path, search={**spec_dict()["search"],
                                        "optimizer.decay_embeddings": {"choices": [True, False], "when": when}},
                      run={"model": {"options": {"block_size": 16}}})
    prepare(load_spec(spec), width=16, parametrization=None, trials=None, storage=None, password_env=None,
            root=str(tmp_path))


def test_verify_scans_a_role_setting_and_transfer_carries_it_with_provenance(tmp_path, run_cli, monkeypatch):
    """`sweep verify --param optimizer.roles.embedding.lr_mult` runs its grid (centred on 1, the default) in its own
    study; `sweep transfer` carries the trial's role settings, records each one's verify drift in provenance and
    names a setting that drifted past the bound or was never verified. Each command runs in this process."""
    from tests.sweep_helpers import spec_dict, write_spec

    monkeypatch.setenv("SWEEP_ROOT", str(tmp_path))
    monkeypatch.chdir(tmp_path)

    search = {**spec_dict()["search"], "optimizer.roles.embedding.lr_mult": {"low": 0.5, "high": 4.0, "log": True},
              "model.init.embedding": {"low": 0.5, "high": 2.0, "log": True}}
    spec = write_spec(tmp_path, trials=2, search=search)
    code, said, err = run_cli("proxy", spec, "--width", "16")
    assert code == 0, said + err
    param = "optimizer.roles.embedding.lr_mult"
    code, said, err = run_cli("verify", spec, "--param", param, "--widths", "16,32", "--values", "0.25,1,4",
                              "--parametrizations", "mup", "--seeds", "1", "--trials-from", "spec", "--max-drift",
                              "0.001", "--refine", "0")
    assert code in (0, 1), said + err
    summary = json.loads((tmp_path / "tiny-verify-embedding-lr_mult" / "summary.json").read_text())
    assert summary["param"] == param and summary["grid"] == [0.25, 1.0, 4.0]
    drift = summary["parametrizations"]["mup"]["drift"]

    out = tmp_path / "full.yaml"
    code, said, err = run_cli("transfer", spec, "--width", "64", "--out", out)
    assert code == 0, said + err
    cfg = RunConfig.load(out)
    proxy = RunConfig.from_yaml(next(t for t in load_trials(tmp_path) if t.number == cfg.provenance.trial)
                                .user_attrs["config"])
    assert cfg.optimizer.roles == proxy.optimizer.roles and cfg.model.init == proxy.model.init  # carried as tuned
    roles = cfg.provenance.verify["roles"]
    assert roles[param]["value"] == proxy.optimizer.roles.embedding.lr_mult and roles[param]["drift"] == drift
    assert roles["model.init.embedding"] == {"value": proxy.model.init.embedding}
    text = " ".join(said.split())
    assert "not verified: model.init.embedding" in text
    assert (f"drifts: {param}" in text) == (drift > 0.001) and (f"carried {param}" in text) == (drift <= 0.001)
    code, said, err = run_cli("transfer", spec, "--width", "64", "--role-rule", "fitted", "--out", out)
    assert code == 0, said + err  # one seed on 3 values: a law without an interval
    assert "--role-rule fitted: no per-role setting of the trial has a width law" in " ".join(said.split())
    assert RunConfig.load(out).optimizer.roles == proxy.optimizer.roles


def test_a_drifting_role_is_carried_by_its_measured_width_law_under_the_role_rule(tmp_path):
    """Issue 21's drift (the embedding's LR optimum falls ~0.4 octave per doubling of width on the built-in corpus,
    where μP's table keeps it): `--role-rule fitted` carries the multiplier by the law verify measured,
    mult' = mult·(W'/W)^s, records it beside the value kept, refuses a width far past the measured ones, and by
    default keeps it as tuned."""
    from rich.console import Console

    from sweep.rules import Target
    from sweep.rules.fitted import Law
    from sweep.rules.plan import transfer_run
    from sweep.rules.roles import role_laws, role_lines
    from sweep.rules.summary import write_summary
    from sweep.transfer.command import explain
    from trainer.config import Provenance

    proxy = RunConfig.parse({"model": {"name": "gpt", "width": 32, "depth": 1, "options": {"block_size": 16}},
                             "data": {"kind": "synthetic-tokens", "seq_len": 16},
                             "optimizer": {"lr": 0.01, "roles": {"embedding": {"lr_mult": 8.0}}}, "steps": 10})
    law = {"slope": -0.4, "low": -0.6, "high": -0.2, "at": [32, 64, 128]}
    write_summary(tmp_path / "v-verify-embedding-lr_mult", {"laws": {"mup": law}})
    write_summary(tmp_path / "v-verify-init-readout", {"laws": {"mup": law}})  # a setting the trial leaves at 1
    (over_prior,) = role_laws(tmp_path, "v", proxy)  # the posterior over μP's prior for a role, 0 ± 0.25
    posterior = transfer_run(proxy, Target(width=128, role_rule="fitted"), 1, laws=(over_prior,))
    assert 8.0 * 4 ** -0.4 < posterior.config.optimizer.roles.embedding.lr_mult < 8.0  # pulled toward μP's 0
    (found,) = role_laws(tmp_path, "v", proxy, prior="none")  # the measurement alone
    assert (found.param, found.axis, found.measured) == ("optimizer.roles.embedding.lr_mult", "width", (32, 128))
    assert transfer_run(proxy, Target(width=128), 1, laws=(found,)).config.optimizer.roles.embedding.lr_mult == 8.0
    fitted = transfer_run(proxy, Target(width=128, role_rule="fitted", prior="none"), 1, laws=(found,))
    assert fitted.config.optimizer.roles.embedding.lr_mult == pytest.approx(8.0 * 4 ** -0.4)
    (record,) = fitted.laws
    assert record["interval"] == pytest.approx([8.0 * 4 ** -0.6, 8.0 * 4 ** -0.2]) and record["textbook"] == {
        "kept": 8.0}
    assert fitted.config.optimizer.lr == 0.01  # the base LR and every other role as they were
    with pytest.raises(InputError, match=r"--role-rule fitted: width 32 → 1024 reaches 8× past the range 32–128 the "
                                         r"law of optimizer.roles.embedding.lr_mult was measured over"):
        transfer_run(proxy, Target(width=1024, role_rule="fitted"), 1, laws=(found,))
    wide = Law(found.param, "width", -0.4, -0.6, -0.2, (128.0, 256.0), found.source)  # the proxy's 32 is 4× below
    with pytest.raises(InputError, match=r"width 32 → 256 reaches 4× past the range 128–256"):
        transfer_run(proxy, Target(width=256, role_rule="fitted"), 1, laws=(wide,))
    far = transfer_run(proxy, Target(width=1024, role_rule="fitted", extrapolate=True), 1, laws=(found,))
    assert far.laws[0]["extrapolated"]
    line = role_lines({found.param: {"value": 8.0, "fitted": 8.0 * 4 ** -0.4, "drift": 0.8, "widths": [32, 128],
                                     "passed": False}})
    assert line == [f"fitted {found.param}: 8 → {8.0 * 4 ** -0.4:.4g} by its width law (verify: drift 0.80 octaves "
                    "over widths 32–128)"]
    console = Console(width=300, record=True)
    explain(Provenance(laws=fitted.laws, tuning={"proxy_flops": 1, "verify_flops": 1, "full_flops": 4, "share": 0.5}),
            None, [], tmp_path / "spec.yaml", console)
    assert f"fitted {found.param} across width: 8 → {8.0 * 4 ** -0.4:.4g}" in console.export_text()


def load_trials(root):
    from tests.sweep_helpers import load

    return load(root).get_trials(deepcopy=False)


def test_groups_split_by_role_multipliers_have_distinct_signal_names():
    """Two roles at the same LR whose decays a role multiplier sets apart are two groups, and the signals name
    them apart (one column each)."""
    from trainer.signals import group_name

    model = build_model("gpt", 64, 1, "mup", vocab_size=64)  # at the base width hidden and readout share lr × 1
    groups = param_groups(model, 0.01, 0.1, roles={"readout": (1.0, 3.0)})
    names = [group_name(g) for g in groups]
    assert len(names) == len(set(names)) == len(groups_of(model, "adamw")) + 1
    assert "lr1-decay-wd3" in names


def test_coord_check_takes_role_settings_passes_in_mup_fails_in_sp_and_refuses_a_missing_role(run_cli, tmp_path,
                                                                                               monkeypatch):
    """`sweep coord-check --set` (as `sweep inspect` takes it): the classic bug is a readiness check that expects
    the table's LR and refuses every model once a role multiplier moves it."""
    monkeypatch.setenv("SWEEP_ROOT", str(tmp_path))
    settings = ["--set", "optimizer.roles.readout.lr_mult=8", "--set", "model.init.hidden=2"]
    code, out, err = run_cli("coord-check", "--model", "mlp", *settings)
    assert code == 0, out + err
    verdict = pd.read_parquet(tmp_path / "coord-check" / "mlp-mup" / "verdict.parquet")
    assert set(verdict["settings"]) == {"optimizer.roles.readout.lr_mult=8 model.init.hidden=2"}
    assert run_cli("coord-check", "--model", "mlp", "--parametrization", "sp", *settings)[0] == 1
    code, _, err = run_cli("coord-check", "--model", "mlp", "--set", "optimizer.roles.embedding.lr_mult=2",
                           "--out", tmp_path / "never")
    assert code == 2 and len(err.strip().splitlines()) == 1 and "the model has no embedding parameter" in err, err
    assert not (tmp_path / "never").exists()


def test_progress_lines_tell_the_role_settings_apart():
    """Each searched path by its shortest suffix no other path holds: the shipped per-module sweep printed
    `lr_mult=5.7, lr_mult=1.4, …, embedding=0.26` (outside tester), four LR multipliers nobody could tell apart."""
    from sweep.backends.live import short

    params = {"optimizer.lr": 0.01, "optimizer.roles.embedding.lr_mult": 8.0, "optimizer.roles.hidden.lr_mult": 0.5,
              "model.init.embedding": 2.0, "optimizer.beta2": 0.95}
    assert short(params) == "lr=0.01, embedding.lr_mult=8, hidden.lr_mult=0.5, init.embedding=2, beta2=0.95"
