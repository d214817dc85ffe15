"""trainer.recipe: the μP recipe as data, and its torch API for any loop (param_groups, init_)."""
from __future__ import annotations

import pytest
import torch
from torch import nn

from tests.frameworks_common import DATA, ours, run_config
from trainer.build import build_net
from trainer.config import RunConfig
from trainer.frameworks import export
from trainer.optim import param_groups
from trainer.recipe import Recipe, RecipeError


def same_groups(a: list[dict], b: list[dict]) -> bool:
    return len(a) == len(b) and all(
        x.keys() == y.keys() and all(all(p is q for p, q in zip(x[k], y[k], strict=True)) if k == "params"
                                     else x[k] == y[k] for k in x) for x, y in zip(a, b, strict=True))


@pytest.mark.parametrize("model,options,optimizer", [
    ("gpt", {}, {"lr": 0.01, "weight_decay": 0.1}),
    ("llama", {}, {"lr": 0.01, "weight_decay": 0.1, "wd_mode": "independent"}),
    ("llama", {"tie_embeddings": True}, {"lr": 0.01, "weight_decay": 0.1}),  # mup #55: the tied matrix once
    ("llama", {}, {"name": "muon", "lr": 0.01, "weight_decay": 0.1}),
])
def test_torch_api_reproduces_the_trainers_groups(model, options, optimizer):
    cfg = RunConfig.parse({"steps": 1, "model": {"name": model, "width": 128, "depth": 2, "options": options},
                           "optimizer": optimizer})
    torch.manual_seed(0)
    net = build_net(cfg.model, DATA)
    o = cfg.optimizer
    adjust = o.muon.adjust_lr_fn if o.name == "muon" else "match_rms_adamw"
    expected = param_groups(net, o.lr, o.weight_decay, optimizer=o.name, wd_mode=o.wd_mode, eps=o.eps,
                            adjust_lr_fn=adjust)
    recipe = Recipe.from_config(cfg, DATA)
    assert same_groups(recipe.param_groups(net), expected)
    assert same_groups(Recipe.from_dict(recipe.to_dict()).param_groups(net), expected)  # through its JSON


def test_muon_groups_carry_no_adam_mup():
    """Muon's matrices take Muon's own width rule, not Adam's lr/m a second time (Megatron PR 3715's bug)."""
    cfg = run_config().model_copy(update={"optimizer": RunConfig.parse(
        {"steps": 1, "optimizer": {"name": "muon", "lr": 0.01}}).optimizer})
    recipe = Recipe.from_config(cfg, DATA)
    hidden = [e for e in recipe.params if e.role == "hidden"]
    assert hidden and {e.owner for e in hidden} == {"muon"}
    assert all(e.lr_mult == pytest.approx(2 ** -0.5) for e in hidden)  # match_rms_adamw: 1/√m, m = 2; Adam: 1/m
    assert {e.owner for e in recipe.params if e.role in ("embedding", "norm", "readout")} == {"adamw"}
    with pytest.raises(RecipeError, match="^optimizer.name: 'muon' — the torchtitan export"):
        export(recipe, "torchtitan")


def test_tied_recipe_has_one_matrix_read_out():
    recipe = Recipe.from_config(run_config(tie_embeddings=True), DATA)
    tied = [e for e in recipe.params if e.role == "tied"]
    assert [e.pattern for e in tied] == ["wte.weight"] and not any(e.pattern == "lm_head.weight" for e in recipe.params)
    assert recipe.multipliers["readout_mult"] == pytest.approx(0.5)  # output_mult / m, m = 128 / 64


def test_a_parameter_no_rule_covers_is_refused_in_one_line():
    net, _, recipe = ours(run_config())
    net.extra = nn.Linear(4, 4, bias=False)
    with pytest.raises(RecipeError) as err:
        recipe.param_groups(net)
    assert str(err.value).startswith("extra.weight: no rule of the recipe covers this parameter")
    assert "\n" not in str(err.value)


def test_a_wrong_shape_and_a_missing_parameter_are_refused():
    _, _, recipe = ours(run_config())
    wide, _, _ = ours(run_config(width=256))
    with pytest.raises(RecipeError, match="^wte.weight: shape \\(256, 256\\) is not the recipe's"):
        recipe.param_groups(wide)
    shallow, _, _ = ours(run_config(depth=1))
    deep_recipe = Recipe.from_config(run_config(depth=2), DATA)
    assert len(deep_recipe.param_groups(shallow)) == 3  # layers may differ in count, not in kind
    del shallow.lm_head
    with pytest.raises(RecipeError, match="^lm_head.weight: the recipe's parameter is not in the model"):
        deep_recipe.param_groups(shallow)


def test_init_draws_the_recipes_std():
    net, _, recipe = ours(run_config(width=256))
    fresh, _, _ = ours(run_config(width=256))
    with torch.no_grad():
        for p in fresh.parameters():
            p.fill_(3.0)
    recipe.init_(fresh, generator=torch.Generator().manual_seed(5))
    for (name, a), b in zip(net.named_parameters(), fresh.parameters(), strict=True):
        ref = float(a.double().std())
        assert float(b.double().std()) == pytest.approx(ref, rel=0.05, abs=1e-9), name
        if ref == 0:
            assert torch.equal(a, b), name  # ones and zeros exactly


def test_sweep_recipe_writes_the_export_or_refuses_in_one_line(tmp_path):
    import json
    import subprocess
    import sys
    config = tmp_path / "run.yaml"
    config.write_text("steps: 10\nmodel: {name: llama, width: 128, depth: 2}\ndata: {kind: stdlib, seq_len: 32}\n")
    out = tmp_path / "recipe.json"
    run = subprocess.run([sys.executable, "-m", "sweep", "recipe", str(config), "--to", "torch", "--out", str(out)],
                         capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    assert Recipe.from_dict(json.loads(out.read_text())).model["width"] == 128
    refused = tmp_path / "megatron.py"
    run = subprocess.run([sys.executable, "-m", "sweep", "recipe", str(config), "--to", "megatron", "--out",
                          str(refused)], capture_output=True, text=True)
    assert run.returncode == 2 and not refused.exists()
    assert run.stderr.strip().splitlines() == [run.stderr.strip()] and "model.options.zero_query" in run.stderr


def gpt_recipe(**options) -> Recipe:
    cfg = RunConfig.parse({"steps": 1, "model": {"name": "gpt", "width": 128, "depth": 2, "options": options},
                           "optimizer": {"lr": 0.01, "weight_decay": 0.1}})
    return Recipe.from_config(cfg, DATA)


def test_nanogpt_config_file_holds_the_recipe_and_refuses_a_parameter_it_cannot_place():
    """nanoGPT is no package: its own model is checked by benchmarks/recipe_nanogpt.py; here the exported file runs
    standalone (as nanoGPT's configurator executes it) and holds every recipe group."""
    recipe = gpt_recipe(tie_embeddings=True)
    config: dict = {}
    exec(export(recipe, "nanogpt"), config)
    assert (config["n_embd"], config["n_layer"], config["learning_rate"]) == (128, 2, 0.01)
    assert sorted(g["lr_mult"] for g in config["MUP_GROUPS"]) == sorted(g["lr_mult"] for g in recipe.groups)
    assert config["MUP_OUTPUT_MULT"] == pytest.approx(0.5)
    with pytest.raises(ValueError, match=r"^weight: no rule of the μP recipe covers this parameter \(shape \(2, 2\)\)"):
        config["mup_param_groups"](nn.Linear(2, 2, bias=False))


@pytest.mark.parametrize("options,line", [
    ({}, "model.options.tie_embeddings: nanoGPT ties lm_head to wte"),
    ({"tie_embeddings": True, "n_head": 2}, "model.options.n_head: nanoGPT's attention scale is 1/√d_head"),
])
def test_nanogpt_refuses_what_it_cannot_hold(options, line):
    with pytest.raises(RecipeError) as err:
        export(gpt_recipe(**options), "nanogpt")
    assert str(err.value).startswith(line) and "\n" not in str(err.value)
