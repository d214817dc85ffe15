"""Each export checked on the framework's real package (CPU): its own model at the recipe's width, its own
optimizer (or param-group code), every parameter's LR, weight decay and init std equal to this project's llama's."""
from __future__ import annotations

import re
import socket
import tempfile
import types

import pytest
import torch

from tests.frameworks_common import batches, losses, need, ours, run_config
from trainer.frameworks import check, export
from trainer.optim import optimizer_of
from trainer.recipe import RecipeError


def load(text: str, name: str) -> types.ModuleType:
    module = types.ModuleType(name)
    exec(compile(text, name, "exec"), module.__dict__)
    return module


def hidden_group(groups: list[dict]) -> int:
    return next(i for i, g in enumerate(groups) if g["lr_mult"] < 1)


# --- transformers ---------------------------------------------------------------------------------------------

def hf_trainer_optimizer(module: types.ModuleType):
    transformers = need("transformers")
    torch.manual_seed(0)
    model, optimizer = module.build()
    args = transformers.TrainingArguments(output_dir=tempfile.mkdtemp(), report_to=[], use_cpu=True,
                                          **module.TRAINING_ARGUMENTS)
    trainer = transformers.Trainer(model=model, args=args, optimizers=(optimizer, None))
    trainer.create_optimizer_and_scheduler(num_training_steps=3)
    return model, trainer.optimizer


@pytest.mark.parametrize("options,opt_name,tolerance", [({}, "adamw", 1e-5), ({"tie_embeddings": True}, "adamw", 1e-5),
                                                    ({}, "muon", 1e-3)])
def test_hf_llama_matches_ours_and_trains_the_same(options, opt_name, tolerance):
    """Tied embeddings (mup #55): one matrix, the readout's multiplier. Muon: Muon's own width rule on the hidden
    matrices, Adam's on the rest, never both (Megatron PR 3715). Muon orthogonalises in bfloat16, so the 1e-7 gaps
    between two attention implementations' gradients come out at bfloat16's 4e-3 after a step: a looser tolerance."""
    from trainer.frameworks import hf
    net, groups, recipe = ours(run_config(**options), opt_name)
    need("transformers")
    model, optimizer = hf_trainer_optimizer(load(export(recipe, "hf"), "hf_recipe"))
    result = check(model, optimizer.param_groups, net, groups, hf.NAMES)
    assert (result.matched, result.mismatches) == (result.total, []) and result.total > 0
    ours_params = dict(net.named_parameters())
    with torch.no_grad():  # identical weights: ours copied into transformers'
        for name, p in model.named_parameters():
            target = next(t for regex, t in hf.NAMES if re.fullmatch(regex, name))
            p.copy_(ours_params[target.replace("*", re.findall(r"\d+", name)[0]) if "*" in target else target])
    data = batches()
    a = losses(net, optimizer_of(opt_name, groups, lr=recipe.optimizer["lr"]), data)  # the trainer's own
    b = losses(lambda x: model(x).logits, optimizer, data)
    assert max(abs(x - y) for x, y in zip(a, b, strict=True)) < tolerance, (a, b)


def test_hf_wrong_multiplier_fails_the_check():
    from trainer.frameworks import hf
    net, groups, recipe = ours(run_config())
    need("transformers")
    module = load(export(recipe, "hf"), "hf_recipe")
    module.RECIPE.groups[hidden_group(module.RECIPE.groups)]["lr"] *= 2
    model, optimizer = hf_trainer_optimizer(module)
    result = check(model, optimizer.param_groups, net, groups, hf.NAMES)
    assert result.matched < result.total and "self_attn.q_proj.weight: lr" in " ".join(result.mismatches)


def test_depth_transfer_is_refused_by_the_frameworks():
    _, _, recipe = ours(run_config(depth=4, depth_alpha=1.0, base_depth=2))
    for fmt in ("hf", "torchtitan", "megatron"):
        with pytest.raises(RecipeError, match=f"^model.options.depth_alpha: {fmt}'s llama has no residual-branch"):
            export(recipe, fmt)


# --- torchtitan -----------------------------------------------------------------------------------------------

def torchtitan_built(module: types.ModuleType):
    need("torchtitan")
    from trainer.frameworks import torchtitan
    model = module.mup_model().build()
    torch.manual_seed(0)
    model.init_states()
    optimizers = module.mup_optimizer().build(model_parts=[model])
    torchtitan.adapt(module.RECIPE, [model])
    return model, [g for o in optimizers.optimizers for g in o.param_groups]


@pytest.mark.parametrize("options,total", [({}, 21), ({"tie_embeddings": True, "q_per_kv": 2}, 20)])
def test_torchtitan_llama_matches_ours(options, total):
    from trainer.frameworks import torchtitan
    net, groups, recipe = ours(run_config(**options))
    need("torchtitan")
    module = load(export(recipe, "torchtitan"), "tt_recipe")
    model, tt_groups = torchtitan_built(module)
    result = check(model, tt_groups, net, groups, torchtitan.NAMES)
    assert (result.matched, result.mismatches) == (total, []) and result.total == total
    assert type(module.mup_llama3()).__name__ == "Config"  # the trainer config torchtitan's --config loads
    # identical weights give the same loss: the adapter's attention scale and logit multiplier, the norms' ε
    # (forward only: torchtitan's flex attention has no backward on CPU). torchtitan's RoPE turns adjacent pairs,
    # ours halves: the query and key rows of each head are permuted to match
    d = net.blocks[0].attn.head_dim
    perm = torch.stack([torch.arange(d // 2), torch.arange(d // 2) + d // 2], dim=1).flatten()
    ours_params = dict(net.named_parameters())
    with torch.no_grad():
        net.blocks[0].attn.query.weight.normal_(0, 0.1)  # a non-zero query, so the attention scale matters
        for name, p in model.named_parameters():
            target = next(t for regex, t in torchtitan.NAMES if re.fullmatch(regex, name))
            src = ours_params[target.replace("*", re.findall(r"\d+", name)[0]) if "*" in target else target]
            if target.endswith(("query.weight", "key.weight")):
                src = src.view(-1, d, src.shape[1])[:, perm].reshape(src.shape)
            p.copy_(src)
        x = batches(1)[0]
        positions = torch.arange(x.shape[1] - 1).expand(x.shape[0], -1).contiguous()
        a = torch.nn.functional.cross_entropy(net(x[:, :-1]).flatten(0, 1), x[:, 1:].flatten())
        logits = model(x[:, :-1], positions, model.get_attention_masks(positions))
        b = torch.nn.functional.cross_entropy(logits.flatten(0, 1), x[:, 1:].flatten())
    assert abs(a.item() - b.item()) < 1e-5, (a.item(), b.item())


def test_torchtitan_wrong_multiplier_fails_the_check():
    from trainer.frameworks import torchtitan
    net, groups, recipe = ours(run_config())
    need("torchtitan")
    module = load(export(recipe, "torchtitan"), "tt_recipe")
    module.PARAM_GROUPS[-1]["optimizer_kwargs"]["lr"] *= 2
    model, tt_groups = torchtitan_built(module)
    assert check(model, tt_groups, net, groups, torchtitan.NAMES).matched < 21


# --- Megatron Core --------------------------------------------------------------------------------------------

@pytest.fixture
def megatron_state():
    need("megatron.core")
    from megatron.core import parallel_state
    with socket.socket() as s:  # a free port: tests may run in parallel workers
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    torch.distributed.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=0, world_size=1)
    parallel_state.initialize_model_parallel()
    yield
    parallel_state.destroy_model_parallel()
    torch.distributed.destroy_process_group()


def megatron_groups(module: types.ModuleType):
    """Megatron's own `_get_param_groups` with the export's overrides, its scheduler's LR and decay applied."""
    from megatron.core.optimizer import OptimizerConfig, _get_param_groups
    from megatron.core.optimizer_param_scheduler import OptimizerParamScheduler
    torch.manual_seed(0)
    model = module.build_model(use_cpu_initialization=True, params_dtype=torch.float32)
    o = module.OPTIMIZER
    optimizer = torch.optim.AdamW(_get_param_groups([model], OptimizerConfig(**o), module.config_overrides()),
                                  lr=o["lr"])
    OptimizerParamScheduler(optimizer, init_lr=0.0, max_lr=o["lr"], min_lr=o["min_lr"], lr_warmup_steps=0,
                            lr_decay_steps=10, lr_decay_style="constant", start_wd=o["weight_decay"],
                            end_wd=o["weight_decay"], wd_incr_steps=10, wd_incr_style="constant").step(1)
    return model, optimizer.param_groups


@pytest.mark.parametrize("options,total", [({}, 15), ({"tie_embeddings": True, "q_per_kv": 2}, 14)])
def test_megatron_gpt_matches_ours(megatron_state, options, total):
    from trainer.frameworks import megatron
    with pytest.raises(RecipeError, match="^model.options.zero_query: megatron fuses"):
        export(ours(run_config(**options))[2], "megatron")
    net, groups, recipe = ours(run_config(zero_query=False, **options))
    module = load(export(recipe, "megatron"), "mg_recipe")
    model, mg_groups = megatron_groups(module)
    result = check(model, mg_groups, net, groups, megatron.NAMES)
    assert (result.matched, result.mismatches) == (total, []) and result.total == total
    assert model.decoder.layers[0].self_attention.core_attention.softmax_scale == recipe.multipliers["attn_scale"]
    module.OVERRIDES[-1][1]["max_lr"] *= 2  # a wrong multiplier in the export
    model, mg_groups = megatron_groups(module)
    assert check(model, mg_groups, net, groups, megatron.NAMES).matched < total


# --- a parameter no rule covers ------------------------------------------------------------------------------

def test_each_export_refuses_a_parameter_no_rule_covers_in_one_line(megatron_state):
    """The framework's model with one parameter more than the recipe's: refused before any optimizer holds it."""
    from trainer.frameworks import hf, megatron
    extra = "extra: no rule of the recipe covers this parameter (shape (3,))"
    refusals = []
    _, _, recipe = ours(run_config())
    need("transformers")
    module = load(export(recipe, "hf"), "hf_recipe")
    model, _ = module.build()
    model.extra = torch.nn.Parameter(torch.zeros(3))
    with pytest.raises(RecipeError) as err:
        module.RECIPE.make_optimizer(model, hf.NAMES)
    refusals.append(str(err.value))
    need("torchtitan")
    module = load(export(recipe, "torchtitan"), "tt_recipe")
    model = module.mup_model().build()
    model.extra = torch.nn.Parameter(torch.zeros(3))
    with pytest.raises(RecipeError) as err:
        module.mup_llama3().model_spec.parallelize_fn(model, parallel_dims=None)
    refusals.append(str(err.value))
    _, _, recipe = ours(run_config(zero_query=False))
    module = load(export(recipe, "megatron"), "mg_recipe")
    model = module.build_model(use_cpu_initialization=True, params_dtype=torch.float32)
    model.extra = torch.nn.Parameter(torch.zeros(3))
    with pytest.raises(RecipeError) as err:
        megatron.adapt_(model, module.RECIPE)
    refusals.append(str(err.value))
    assert all(line.startswith(extra) and "\n" not in line for line in refusals), refusals
