"""The μP table, parameter by parameter, for every zoo model (TP5 Tables 3 and 8)."""
import mup
import pytest
import torch

from proxies.parametrization import param_rules
from proxies.registry import ZOO, build_model
from trainer.optim import param_groups

OPTIONS = {"gpt": [{}, {"tie_embeddings": True}, {"n_head": 4}], "mlp": [{}], "resnet": [{}]}
CASES = [(name, opts) for name, variants in OPTIONS.items() for opts in variants]


def build(name, width, parametrization, opts, seed=0):
    torch.manual_seed(seed)
    return build_model(name, width, 2, parametrization, **opts)


@pytest.mark.parametrize("name,opts", CASES)
def test_mup_equals_sp_at_base_width(name, opts):
    """Catches a μP model that is a different network from SP at the base width (e.g. 1/d attention without
    attn_mult)."""
    base = ZOO[name].base_width
    mu, sp = build(name, base, "mup", opts), build(name, base, "sp", opts)
    for a, b in zip(param_rules(mu), param_rules(sp), strict=True):
        assert (a.name, a.shape, a.adam_lr_mult, a.sgd_lr_mult, a.forward_mult, a.decays) == \
               (b.name, b.shape, b.adam_lr_mult, b.sgd_lr_mult, b.forward_mult, b.decays)
    for (n, p), (_, q) in zip(mu.named_parameters(), sp.named_parameters(), strict=True):
        assert torch.equal(p, q), f"{n} initialised differently"
    x = (torch.randint(0, 256, (2, 16)) if name == "gpt" else torch.randn(4, 32) if name == "mlp"
         else torch.randn(4, 3, 8, 8))
    torch.testing.assert_close(mu(x), sp(x))


@pytest.mark.parametrize("name,opts", CASES)
def test_table8_at_four_times_base_width(name, opts):
    """Hidden init std ×1/2 and Adam LR ×1/4, readout forward ×1/4, embedding/bias/norm LR unchanged."""
    base_width = ZOO[name].base_width
    base = {r.name: r for r in param_rules(build(name, base_width, "mup", opts))}
    wide = {r.name: r for r in param_rules(build(name, 4 * base_width, "mup", opts))}
    assert base.keys() == wide.keys()
    roles = set()
    for key, w in wide.items():
        b = base[key]
        roles.add(w.role)
        if w.role == "hidden":
            assert w.adam_lr_mult == pytest.approx(b.adam_lr_mult / 4), key
            if b.init_std > 0:  # a zero-initialised query stays zero
                assert w.init_std / b.init_std == pytest.approx(0.5, rel=0.1), key
            assert w.forward_mult == 1.0
        elif w.role in ("readout", "tied"):
            assert w.forward_mult == pytest.approx(b.forward_mult / 4), key
            assert w.adam_lr_mult == b.adam_lr_mult == 1.0, key
        else:  # embedding, input, bias, norm
            assert w.adam_lr_mult == b.adam_lr_mult == 1.0, key
            assert w.forward_mult == 1.0, key
        if w.role in ("embedding", "input", "tied"):
            assert w.init_std == pytest.approx(b.init_std, rel=0.1), f"{key}: input init must not scale with width"
    assert "hidden" in roles and roles & {"readout", "tied"}


@pytest.mark.parametrize("name", ["gpt", "mlp", "resnet"])
def test_sp_has_no_width_multipliers(name):
    """SP at 4× width: every LR and forward multiplier is 1 (plain torch)."""
    for r in param_rules(build(name, 4 * ZOO[name].base_width, "sp", {})):
        assert r.adam_lr_mult == r.sgd_lr_mult == r.forward_mult == 1.0, r.name


@pytest.mark.parametrize("name,opts", CASES)
def test_optimizer_groups_match_mup_reference(name, opts):
    """Our visible groups give every parameter the lr and weight decay of microsoft/mup's MuAdamW and MuSGD."""
    model = build(name, 4 * ZOO[name].base_width, "mup", opts)
    for optimizer, reference in (("adamw", mup.MuAdamW), ("sgd", mup.MuSGD)):
        ours = {id(p): (g["lr"], g["weight_decay"])
                for g in param_groups(model, 0.01, 0.1, optimizer=optimizer, wd_mode="independent")
                for p in g["params"]}
        ref = {id(p): (g["lr"], g["weight_decay"])
               for g in reference(model.parameters(), lr=0.01, weight_decay=0.1).param_groups
               for p in g["params"]}
        for p in model.parameters():
            assert ours[id(p)][0] == pytest.approx(ref[id(p)][0])
            if ours[id(p)][1]:  # we never decay biases, norm gains or embeddings; mup decays everything
                assert ours[id(p)][1] == pytest.approx(ref[id(p)][1])


@pytest.mark.parametrize("name,opts", CASES)
def test_optimizer_groups_decay_matrices_only(name, opts):
    """The optimizer's groups: decay on weight matrices (hidden, input, readout) only, never on norm gains,
    biases or (by default) embeddings; each group's LR is lr × its μP multiplier."""
    model = build(name, 2 * ZOO[name].base_width, "mup", opts)
    rules = {r.name: r for r in param_rules(model)}
    for decay_embeddings in (False, True):
        groups = param_groups(model, 0.01, 0.1, decay_embeddings=decay_embeddings)
        assert sum(len(g["names"]) for g in groups) == len(rules)
        for group in groups:
            for pname in group["names"]:
                rule = rules[pname]
                decays = (rule.role in ("hidden", "input", "readout")
                          or (decay_embeddings and rule.role in ("embedding", "tied")))
                assert (group["weight_decay"] > 0) == decays, pname
                assert group["lr"] == pytest.approx(0.01 * rule.adam_lr_mult), pname


def test_coupled_and_independent_weight_decay():
    model = build("gpt", 256, "mup", {})
    coupled = param_groups(model, 0.01, 0.1, wd_mode="coupled")
    independent = param_groups(model, 0.01, 0.1, wd_mode="independent")
    for c, i in zip(coupled, independent, strict=True):
        if c["weight_decay"]:
            assert c["weight_decay"] == 0.1  # torch's lr×wd: hidden groups decay m× less
            assert i["lr"] * i["weight_decay"] == pytest.approx(0.01 * 0.1)  # lr×wd kept per group
