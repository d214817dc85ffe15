"""An outside tester's cases for `sweep recipe` and the torch recipe API: each was a traceback or a silent wrong
answer before it was a one-line refusal."""
from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest
import torch

from tests.frameworks_common import DATA
from trainer.build import build_net
from trainer.config import RunConfig
from trainer.recipe import Recipe, RecipeError, pattern_of


def llama(depth: int = 2) -> tuple[RunConfig, Recipe]:
    cfg = RunConfig.parse({"steps": 1, "model": {"name": "llama", "width": 64, "depth": depth},
                           "optimizer": {"lr": 0.01, "weight_decay": 0.1}})
    return cfg, Recipe.from_config(cfg, DATA)


@pytest.fixture(scope="module")
def recipe_dict() -> dict:
    return llama()[1].to_dict()


def one_line(err: pytest.ExceptionInfo, start: str) -> None:
    assert str(err.value).startswith(start) and "\n" not in str(err.value), str(err.value)


@pytest.mark.parametrize("change,start", [
    (lambda d: [d], "recipe: a JSON object is needed"),
    (lambda d: {"format_version": 1}, "recipe.groups: missing"),
    (lambda d: {**d, "format_version": True}, "format_version: True"),
    (lambda d: {**d, "extra": 1}, "recipe.extra: unknown key"),
    (lambda d: {**d, "params": 5}, "params: a list of JSON objects"),
    (lambda d: {**d, "params": [{"pattern": "x"}]}, "params[0].count: missing"),
    (lambda d: {**d, "groups": [{}]}, "groups[0].lr: None is not a finite number"),
    (lambda d: {**d, "multipliers": []}, "multipliers: a JSON object is needed"),
    (lambda d: {**d, "params": [{**d["params"][0], "lr": float("nan")}]}, "params[0].lr: nan is not a finite"),
    (lambda d: {**d, "params": [{**d["params"][0], "init_std": -1.0}]}, "params[0].init_std: -1.0 is negative"),
    (lambda d: {**d, "params": [{**d["params"][0], "group": 99}]}, "params[0].group: 99 is past"),
    (lambda d: {**d, "params": [{**d["params"][0], "shape": "64"}]}, "params[0].shape: '64' is not a list"),
])
def test_a_malformed_recipe_is_one_line_naming_the_field(recipe_dict, change, start):
    """Before: KeyError, TypeError or AttributeError tracebacks, or accepted (a bool version, an empty group)."""
    with pytest.raises(RecipeError) as err:
        Recipe.from_dict(change(json.loads(json.dumps(recipe_dict))))
    one_line(err, start)


@pytest.mark.parametrize("depth", [1, 4])
def test_a_model_of_another_depth_is_refused_where_the_recipe_depends_on_depth(depth):
    """Before: a depth-2 recipe with depth_alpha (branch multiplier 2^-α, depth-scaled LRs) gave a depth-1 or
    depth-4 llama its groups silently. Without depth_alpha the recipe is depth-free and the model's depth may differ
    (tests/test_recipe.py)."""
    cfg = RunConfig.parse({"steps": 1, "model": {"name": "llama", "width": 64, "depth": 2,
                                                  "options": {"depth_alpha": 1.0, "base_depth": 1}}})
    recipe = Recipe.from_config(cfg, DATA)
    assert recipe.multipliers["branch_mult"] != 1.0
    other = RunConfig.parse({"steps": 1, "model": {**cfg.model.model_dump(), "depth": depth}})
    with pytest.raises(RecipeError) as err:
        recipe.param_groups(build_net(other.model, DATA))
    one_line(err, "blocks.*.")
    assert f"the model has {depth} of these, the recipe 2; export the recipe at the model's depth" in str(err.value)


def test_two_parameters_mapped_onto_one_entry_are_refused():
    """Before: layer 0's key matrix mapped onto the value entry took the value's group silently."""
    cfg, recipe = llama()
    net = build_net(cfg.model, DATA)
    names = [(re.escape(n), "blocks.*.attn.value.weight" if n == "blocks.0.attn.key.weight" else pattern_of(n))
             for n, _ in net.named_parameters()]
    with pytest.raises(RecipeError) as err:
        recipe.param_groups(net, names=names)
    one_line(err, "blocks.*.attn.key.weight: the model has 1 of these, the recipe 2; each is placed once")


@pytest.mark.parametrize("names,start", [
    ([("(", "wte.weight")], "names: '(' is not a regular expression"),
    ([(".*", None)], "names: '.*' maps to None"),
])
def test_a_bad_names_map_is_one_line(names, start):
    cfg, recipe = llama()
    with pytest.raises(RecipeError) as err:
        recipe.param_groups(build_net(cfg.model, DATA), names=names)
    one_line(err, start)


def sweep_recipe(tmp_path, yaml: str, *args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    config = tmp_path / "run.yaml"
    config.write_text(yaml)
    return subprocess.run([sys.executable, "-m", "sweep", "recipe", str(config), *args], capture_output=True,
                          text=True, env=env, timeout=300)


def test_a_width_too_big_to_measure_is_one_line_not_a_crash(tmp_path):
    """Before: width 100000 built a one-block copy on CPU (40 GB) and died with a RuntimeError traceback."""
    out = tmp_path / "r.json"
    run = sweep_recipe(tmp_path, "steps: 10\nmodel: {name: llama, width: 100000, depth: 2}\n"
                       "data: {kind: synthetic-tokens}\n", "--to", "torch", "--out", str(out))
    assert run.returncode == 2 and not out.exists(), run.stderr
    assert run.stderr.startswith("error: model.width: the one-block copy") and run.stderr.count("\n") == 1


def test_a_password_in_the_provenance_never_reaches_the_export(tmp_path):
    """Before: a RunConfig whose provenance.storage held postgresql://alice:PASSWORD@… printed PASSWORD in every
    export (the recipe's provenance, the hf module's docstring)."""
    out = tmp_path / "r.json"
    run = sweep_recipe(tmp_path, "steps: 10\nmodel: {name: llama, width: 64, depth: 2}\n"
                       "data: {kind: synthetic-tokens}\nprovenance: {storage: 'postgresql://alice:hunter2pw@db.example/optuna'}\n",
                       "--to", "hf", "--out", str(out))
    assert run.returncode == 2 and not out.exists(), run.stderr
    assert "hunter2pw" not in run.stdout + run.stderr and run.stderr.count("\n") == 1
    assert run.stderr.startswith("error: provenance.storage: holds a password")


def test_adapting_a_model_twice_is_refused_not_a_squared_logit_multiplier():
    """Before: a second adapt_ (hf, megatron, torchtitan) or mup_adapt_ (nanogpt) added a second hook: logits
    × readout_mult² silently."""
    from torch import nn

    from trainer.frameworks import export, scale_logits
    head = nn.Linear(4, 3, bias=False)
    scale_logits(head, 0.5)
    x = torch.ones(1, 4)
    assert torch.allclose(head(x), 0.5 * (x @ head.weight.T))
    with pytest.raises(RecipeError, match="^readout_mult: this model's Linear already scales its logits by 0.5"):
        scale_logits(head, 0.5)
    cfg = RunConfig.parse({"steps": 1, "model": {"name": "gpt", "width": 128, "depth": 2,
                                                  "options": {"tie_embeddings": True}}})
    config: dict = {}
    exec(export(Recipe.from_config(cfg, DATA), "nanogpt"), config)
    model = nn.Module()
    model.lm_head = nn.Linear(128, 256, bias=False)
    config["mup_adapt_"](model)
    with pytest.raises(ValueError, match="^readout_mult: lm_head already scales its logits"):
        config["mup_adapt_"](model)
