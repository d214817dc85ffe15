"""A role's width exponent: `optimizer.roles.<role>.lr_width_exp` = e, that role's LR × m^e (m = width / base width).

Each test names the bug it catches: an exponent of 0 that moves a group or a run id, an exponent applied to the wrong
role or at the base width (where m = 1 and nothing may move), one that SP silently ignores (its base shapes are its
own, so mup's m is 1 there), a decay timescale that moves with it, a readiness check that refuses the optimizer it
built, and a coordinate check that cannot tell a rule that keeps updates bounded (u-μP's embedding rule) from one that
breaks μP."""
import math

import pytest
import torch
import yaml

from proxies import parametrization
from proxies.data import open_data
from proxies.optimizers import OPTIMIZERS
from proxies.registry import build_model
from sweep.coords import check as cc
from sweep.coords.ready import refuse_unless_mup_ready
from trainer import config as run_config
from trainer.build import build_net
from trainer.config import ConfigError, RunConfig
from trainer.optim import build_optimizer, param_groups


def lrs(model, name="adamw", wd_mode="coupled", **kwargs) -> dict[str, tuple[float, float]]:
    """{parameter: (lr, weight decay)} of the groups `param_groups` makes."""
    return {n: (g["lr"], g["weight_decay"])
            for g in param_groups(model, 0.01, 0.1, optimizer=name, wd_mode=wd_mode, **kwargs) for n in g["names"]}


def roles_of(model) -> dict[str, str]:
    return {r.name: r.role for r in parametrization.param_rules(model)}


def test_an_exponent_of_zero_is_absent_from_the_config_and_moves_no_group():
    """`lr_width_exp: 0` is μP's table: the same run id and dump as a config without it, the same groups."""
    plain = RunConfig.parse({"steps": 1})
    zero = RunConfig.parse({"steps": 1, "optimizer": {"roles": {"embedding": {"lr_width_exp": 0.0}}}})
    assert zero.run_id() == plain.run_id() and "lr_width_exp" not in zero.to_yaml()
    assert zero.optimizer.roles.width_exps() == {}
    model = build_model("gpt", 256, 1, "mup", vocab_size=64)
    assert lrs(model, width_exps={"embedding": 0.0}) == lrs(model)


@pytest.mark.parametrize("name", OPTIMIZERS)
def test_an_exponent_scales_exactly_that_roles_lr_by_m_to_the_e(name):
    """Width 256 on base 64 (m = 4): the embedding at e = −0.5 gets half its LR (u-μP's 1/√fan-out), every other
    parameter keeps its own; at the base width (m = 1) nothing moves."""
    wide = build_model("gpt", 256, 1, "mup", vocab_size=64)
    before, after = lrs(wide, name), lrs(wide, name, width_exps={"embedding": -0.5})
    assert "embedding" in roles_of(wide).values()
    for param, role in roles_of(wide).items():
        factor = 0.5 if role == "embedding" else 1.0
        assert math.isclose(after[param][0], factor * before[param][0]), param
    base = build_model("gpt", 64, 1, "mup", vocab_size=64)
    assert lrs(base, name, width_exps={"embedding": -0.5, "hidden": 1.0}) == lrs(base, name)


def test_the_exponent_composes_with_the_roles_lr_mult_and_keeps_the_decay_timescale():
    """lr_mult 3 and e = 1 on the hidden matrices at m = 2: LR × 6; under independent decay lr · wd stays
    lr · wd (the exponent moves the step, not the decay's timescale, as lr_mult does)."""
    model = build_model("gpt", 128, 1, "mup", vocab_size=64)
    hidden = [p for p, role in roles_of(model).items() if role == "hidden"]
    before = lrs(model, wd_mode="independent")
    after = lrs(model, wd_mode="independent", roles={"hidden": (3.0, 1.0)}, width_exps={"hidden": 1.0})
    for param in hidden:
        assert math.isclose(after[param][0], 6 * before[param][0])
        assert math.isclose(after[param][0] * after[param][1], 0.01 * 0.1), param


def test_sp_gets_the_exponent_too():
    """Under SP mup's base shapes are the parameter's own (its m would be 1): m comes from the builder's widths, so
    one spec's exponent means the same under both parametrizations."""
    model = build_model("gpt", 256, 1, "sp", vocab_size=64)
    before, after = lrs(model), lrs(model, width_exps={"embedding": -0.5})
    for param, role in roles_of(model).items():
        assert math.isclose(after[param][0], (0.5 if role == "embedding" else 1.0) * before[param][0]), param


def test_the_trainer_builds_the_configs_exponent_and_the_readiness_check_accepts_it():
    """A RunConfig's exponent reaches the trainer's optimizer (`build_net` + the config's roles); the coordinate
    check's readiness test, given the same exponent, takes that optimizer, and refuses it without."""
    cfg = RunConfig.parse({"model": {"name": "gpt", "width": 256, "depth": 1}, "steps": 1,
                           "optimizer": {"roles": {"embedding": {"lr_width_exp": -0.5}}}})
    model = build_net(cfg.model, {"vocab_size": 64})
    o = cfg.optimizer
    optimizer = build_optimizer(model, lr=0.01, roles=o.roles.given(), width_exps=o.roles.width_exps())
    embedding = next(g for g in optimizer.param_groups if "wte.weight" in g["names"])
    assert math.isclose(embedding["lr"], 0.01 * 0.5)
    refuse_unless_mup_ready(model, optimizer, "adamw", width_exps={"embedding": -0.5})
    with pytest.raises(Exception, match="wte.weight"):
        refuse_unless_mup_ready(model, optimizer, "adamw")


@pytest.mark.parametrize("value,message", [
    (-1.5, "optimizer.roles.embedding.lr_width_exp: Input should be greater than or equal to -1"),
    (2, "optimizer.roles.embedding.lr_width_exp: Input should be less than or equal to 1"),
    (float("nan"), "optimizer.roles.embedding.lr_width_exp"),
    (float("inf"), "optimizer.roles.embedding.lr_width_exp"),
    ("half", "optimizer.roles.embedding.lr_width_exp"),
    (True, "optimizer.roles.embedding.lr_width_exp"),
])
def test_a_bad_exponent_is_one_line_naming_the_field(value, message):
    with pytest.raises(ConfigError) as err:
        RunConfig.parse({"steps": 1, "optimizer": {"roles": {"embedding": {"lr_width_exp": value}}}})
    assert message in str(err.value) and "\n" not in str(err.value)


def test_train_refuses_an_exponent_on_a_role_the_model_lacks_exit_2_nothing_written(run_cli, tmp_path):
    raw = {"model": {"name": "gpt", "width": 64, "depth": 1}, "steps": 2, "output": {"root": str(tmp_path / "out")},
           "optimizer": {"roles": {"tied": {"lr_width_exp": -0.5}}}}
    path = tmp_path / "run.yaml"
    path.write_text(yaml.safe_dump(raw))
    code, _, err = run_cli("train", path)
    assert code == 2 and "optimizer.roles.tied: the model has no tied parameter" in err, err
    assert len(err.strip().splitlines()) == 1 and not (tmp_path / "out").exists()


def test_inspect_shows_the_exponent_and_the_effective_lr(run_cli):
    code, out, err = run_cli("inspect", "gpt", "--width", "256", "--set", "optimizer.roles.embedding.lr_width_exp=-0.5")
    assert code == 0, err
    header = next(line for line in out.splitlines() if "parameter" in line)
    assert "width exp" in header
    wte = [cell.strip() for cell in next(line for line in out.splitlines() if "wte.weight" in line).split("│")]
    assert wte[7] == "0.5" and wte[-2] == "-0.5"  # LR × = 1 (μP) × 4^-0.5; the exponent


def coord_verdict(width_exps: dict[str, float]):
    data = open_data("stdlib", seq_len=32, seed=0)

    def make_model(width):
        return build_net(run_config.ModelConfig(name="gpt", width=width, depth=2), data.model_options())

    return cc.coord_check(make_model, lambda seed: data.batch("train", 4, torch.Generator().manual_seed(seed)),
                          [64, 128, 256], seeds=2, steps=4, optimizer="adamw",
                          make_optimizer=lambda model, lr: build_optimizer(model, lr=lr, width_exps=width_exps))[2]


def test_the_coordinate_check_passes_u_mups_embedding_rule_and_fails_an_exponent_that_breaks_mup():
    """e = −0.5 on the embedding shrinks its updates like m^−0.5, inside the check's vanishing bound: green. e = +1
    on the hidden matrices undoes μP's 1/m (SP's Adam LR there): their updates grow with width, and the check says
    so. A check that passes both could not tell a width rule from a broken one."""
    assert coord_verdict({"embedding": -0.5}).passed
    broken = coord_verdict({"hidden": 1.0})
    assert not broken.passed


def test_transfer_carries_the_exponent_as_it_is_and_names_it(tmp_path):
    """The exponent is a rule, not a width-free constant: the full run's config holds it unchanged (so its embedding
    LR is the proxy's × (64/16)^−0.5 relative to the base width's), provenance records it, and transfer's output
    names it (it said nothing of it: outside tester)."""
    from tests.sweep_helpers import run_sweep, write_spec

    spec = write_spec(tmp_path, trials=2, run={"optimizer": {"roles": {"embedding": {"lr_width_exp": -0.5}}}})
    assert run_sweep(tmp_path, "proxy", spec, "--width", "16").returncode == 0
    out = tmp_path / "full.yaml"
    done = run_sweep(tmp_path, "transfer", spec, "--width", "64", "--out", out)
    assert done.returncode == 0, done.stdout + done.stderr
    cfg = RunConfig.load(out)
    assert cfg.optimizer.roles.width_exps() == {"embedding": -0.5}
    path = "optimizer.roles.embedding.lr_width_exp"
    assert cfg.provenance.verify["roles"][path] == {"value": -0.5, "rule": "width"}
    assert f"carried {path} = -0.5: a width rule" in " ".join(done.stdout.split())
