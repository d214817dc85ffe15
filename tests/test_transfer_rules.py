"""Transfer rules against their sources' numbers, and the order they compose in."""
import math

import pytest

from sweep.errors import InputError
from sweep.rules import Target, batch, horizon
from sweep.rules.plan import transfer_run
from trainer.config import RunConfig

SEQ = 64  # tokens per example in the proxy configs below


def proxy(**changes) -> RunConfig:
    run = {"model": {"name": "gpt", "width": 64, "depth": 2}, "data": {"kind": "synthetic-tokens", "seq_len": SEQ},
           "optimizer": {"lr": 1e-3, "weight_decay": 0.1, "beta1": 0.9, "beta2": 0.95, "eps": 1e-8},
           "schedule": {"warmup_steps": 100}, "batch_size": 16, "steps": 1000}
    for key, value in changes.items():
        run[key] = {**run[key], **value} if isinstance(value, dict) else value
    return RunConfig.parse(run)


def changed(result) -> dict:
    return {c.field: c.after for c in result.changes}


def test_linear_rule_reproduces_goyal_et_al_resnet_recipe():
    """lr = 0.1·B/256: 3.2 at B = 8192 (Goyal et al. 2017, §2.1)."""
    assert batch.linear(0.1, 8192 / 256) == pytest.approx(3.2)


def test_sqrt_rule_scales_lr_by_root_kappa_and_one_minus_beta_by_kappa():
    """Malladi et al. 2022's square-root rule at κ = 4 from Adam's defaults (1e-3, 0.9, 0.999, 1e-8)."""
    lr, b1, b2, eps = batch.sqrt_adam(1e-3, 0.9, 0.999, 1e-8, 4)
    assert (lr, b1, b2, eps) == pytest.approx((2e-3, 0.6, 0.996, 5e-9))
    assert batch.sqrt_adam(2e-3, 0.6, 0.996, 5e-9, 0.25) == pytest.approx((1e-3, 0.9, 0.999, 1e-8))  # and back


def test_sqrt_rule_refuses_a_ratio_that_pushes_beta_out_of_range():
    with pytest.raises(ValueError, match=r"beta1 .* κ < 10"):
        batch.sqrt_adam(1e-3, 0.9, 0.999, 1e-8, 12)


def test_noise_rule_follows_mccandlish_optimal_step():
    """ε_opt(B) = ε_max/(1 + B_noise/B): with B_noise = 48, a tuned 1e-3 at B = 16 means ε_max = 4e-3,
    so B' = 48 gets 2e-3 and a huge batch approaches 4e-3."""
    assert batch.noise(1e-3, 16, 16, 48) == pytest.approx(1e-3)
    assert batch.noise(1e-3, 16, 48, 48) == pytest.approx(2e-3)
    assert batch.noise(1e-3, 16, 1e9, 48) == pytest.approx(4e-3, rel=1e-6)


def test_beta2_keeps_its_half_life_in_tokens():
    after = horizon.beta_constant_halflife(0.95, 1024, 4096)
    assert after == pytest.approx(0.95 ** 4)
    assert horizon.halflife_tokens(after, 4096) == pytest.approx(horizon.halflife_tokens(0.95, 1024))


def test_adamw_timescale_is_one_over_lr_times_decay():
    """Wang & Aitchison 2024: τ_iter = 1/(η·λ); 1e-3 and 0.1 give 10⁴ steps."""
    assert horizon.adamw_timescale(1e-3, 0.1) == pytest.approx(1e4)
    # in tokens: twice the LR and twice the batch keep B/(η·λ) with λ unchanged
    assert horizon.weight_decay_constant_timescale(0.1, 1e-3, 2e-3, 1024, 2048) == pytest.approx(0.1)
    # as a fraction of the run: a run 10× longer gets a 10× longer timescale, so λ/10
    assert horizon.weight_decay_constant_timescale(0.1, 1e-3, 1e-3, 1024, 1024, 1e6, 1e7) == pytest.approx(0.01)


def test_warmup_as_fraction_or_tokens():
    assert horizon.warmup_fraction_steps(0.1, 5000) == 500
    assert horizon.warmup_tokens_steps(100, 16 * 64, 64 * 64) == 25


def test_width_alone_changes_only_the_width_under_mup():
    result = transfer_run(proxy(), Target(width=1024), SEQ)
    assert changed(result) == {"model.width": 1024}
    assert result.config.optimizer == proxy().optimizer and result.config.schedule == proxy().schedule


def test_width_change_of_an_sp_proxy_is_refused():
    with pytest.raises(InputError, match=r"^--width: the proxy is in sp"):
        transfer_run(proxy(model={"parametrization": "sp"}), Target(width=1024), SEQ)


def test_depth_change_without_a_depth_rule_is_refused():
    with pytest.raises(InputError, match=r"^--depth: μP transfers across width, not depth"):
        transfer_run(proxy(), Target(width=1024, depth=24), SEQ)


def test_weight_decay_rule_reads_the_lr_the_batch_rule_set():
    """Order: batch before horizon. Linear at κ = 4 raises η 4× and B 4×, so τ = B/(η·λ) holds with λ as is;
    the bug of applying the timescale rule with the proxy's η would quadruple λ."""
    result = transfer_run(proxy(), Target(width=64, batch_size=64, batch_rule="linear"), SEQ)
    assert result.config.optimizer.lr == pytest.approx(4e-3)
    assert result.config.optimizer.weight_decay == pytest.approx(0.1)
    sqrt = transfer_run(proxy(), Target(width=64, batch_size=64, batch_rule="sqrt"), SEQ)
    assert sqrt.config.optimizer.weight_decay == pytest.approx(0.1 * 0.5 * 4)  # η' = 2η, B' = 4B


def test_sqrt_rule_owns_beta2_so_the_half_life_rule_does_not_apply_twice():
    result = transfer_run(proxy(), Target(width=64, batch_size=64, batch_rule="sqrt"), SEQ)
    assert result.config.optimizer.beta2 == pytest.approx(0.8)  # 1 − 4·0.05, not 0.8⁴
    plain = transfer_run(proxy(), Target(width=64, batch_size=64, batch_rule="none"), SEQ)
    assert plain.config.optimizer.beta2 == pytest.approx(0.95 ** 4)
    assert any("--batch-rule none" in w for w in plain.warnings)


def test_warmup_is_never_shortened_when_the_lr_grows():
    """Tokens mode at 4× the batch would give 25 warmup steps; the LR grew 4×, so the proxy's 100 stay."""
    grown = transfer_run(proxy(), Target(width=64, batch_size=64, batch_rule="linear", warmup="tokens"), SEQ)
    assert grown.config.schedule.warmup_steps == 100
    same_lr = transfer_run(proxy(), Target(width=64, batch_size=64, batch_rule="none", warmup="tokens"), SEQ)
    assert same_lr.config.schedule.warmup_steps == 25


def test_budget_defaults_to_the_proxy_tokens_and_warmup_fraction_follows_the_run():
    result = transfer_run(proxy(), Target(width=64, batch_size=32, tokens=10 * 1000 * 16 * SEQ), SEQ)
    assert result.config.tokens == 10 * 1000 * 16 * SEQ and result.config.steps is None
    assert result.config.total_steps(SEQ) == 5000
    assert result.config.schedule.warmup_steps == 500  # 10% of the run, as in the proxy
    kept = transfer_run(proxy(), Target(width=64, batch_size=32), SEQ)
    assert kept.config.tokens == 1000 * 16 * SEQ


def test_noise_rule_warns_beyond_the_critical_batch_and_needs_a_measurement():
    result = transfer_run(proxy(), Target(width=64, batch_size=256, batch_rule="noise"), SEQ, b_noise=48)
    assert result.config.optimizer.lr == pytest.approx(1e-3 * (1 + 3) / (1 + 48 / 256))
    assert any("critical batch" in w for w in result.warnings)
    with pytest.raises(InputError, match="^--batch-rule noise: "):
        transfer_run(proxy(), Target(width=64, batch_size=256, batch_rule="noise"), SEQ, b_noise=None)


@pytest.mark.parametrize("target, message", [
    (Target(width=0), r"^--width: must be a positive integer"),
    (Target(width=64, batch_rule="cubic"), r"^--batch-rule: 'cubic' is not one of none, linear, sqrt, noise"),
    (Target(width=64, steps=10, tokens=10), r"^--steps, --tokens: give one"),
    (Target(width=64, steps=49), r"^--steps: at least 50 \(a full run"),  # as `sweep plan` holds a full run
    (Target(width=64, tokens=50 * 16 * SEQ - 1), r"^--tokens: at least 50 steps of the full run's batch 16 "
                                                r"\(51200 tokens\), got 51199"),
    (Target(width=64, batch_size=512, batch_rule="sqrt"), r"^--batch-rule sqrt: κ = 32"),
])
def test_bad_targets_are_one_line_input_errors(target, message):
    with pytest.raises(InputError, match=message):
        transfer_run(proxy(), target, SEQ)


def test_every_change_is_recorded_with_before_after_and_formula():
    result = transfer_run(proxy(), Target(width=256, batch_size=32, batch_rule="linear"), SEQ)
    records = [c.record() for c in result.changes]
    assert all(set(r) == {"rule", "field", "before", "after", "formula"} for r in records)
    lr = next(r for r in records if r["field"] == "optimizer.lr")
    assert (lr["before"], lr["after"]) == (1e-3, pytest.approx(2e-3)) and "Goyal" in lr["formula"]
    assert not math.isnan(result.config.optimizer.weight_decay)


def test_depth_changes_under_the_proxys_completep_rule_and_the_model_applies_it():
    from proxies.registry import build_model

    deep = proxy(model={"options": {"depth_alpha": 1.0, "base_depth": 2}})
    result = transfer_run(deep, Target(width=128, depth=8), SEQ)
    assert changed(result) == {"model.width": 128, "model.depth": 8}
    model = build_model("gpt", 128, 8, "mup", **result.config.model.options)
    assert all(block.branch_mult == pytest.approx(2 / 8) for block in model.blocks)


@pytest.mark.parametrize("name", ["lion", "muon", "adam_atan2", "schedulefree_adamw"])
def test_the_chosen_optimizer_and_its_section_travel_and_beta2_follows_only_where_it_is_adams(name):
    # the classic bugs: the full run falling back to AdamW (the section dropped), or Lion's β's rewritten by
    # the Adam half-life rule (Lion refuses optimizer.beta2 altogether)
    section = {"lion": {"beta1": 0.95, "beta2": 0.98}, "muon": {"momentum": 0.9, "ns_steps": 4},
               "schedulefree_adamw": {"warmup_steps": 10, "r": 0.0, "weight_lr_power": 2.0}}.get(name)
    flat = {"lr": 1e-3, "weight_decay": 0.1} if name == "lion" else {"lr": 1e-3, "weight_decay": 0.1, "beta2": 0.95}
    optimizer = {"name": name, **flat, **({name: section} if section else {})}
    run = {"model": {"name": "gpt", "width": 64, "depth": 2}, "data": {"kind": "synthetic-tokens", "seq_len": SEQ},
           "optimizer": optimizer, "schedule": {"kind": "constant"}, "batch_size": 16, "steps": 1000}
    result = transfer_run(RunConfig.parse(run), Target(width=1024, batch_size=64), SEQ)
    opt = result.config.optimizer
    assert opt.name == name and result.config.model.width == 1024
    if section:
        assert getattr(opt, name).model_dump() == {**getattr(opt, name).model_dump(), **section}
    assert ("optimizer.beta2" in changed(result)) == (name != "lion")
    assert changed(result)["optimizer.weight_decay"] != 0.1  # the decay timescale rule applies to every optimizer
