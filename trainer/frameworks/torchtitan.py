"""torchtitan: a config-registry module (`--module <file's module> --config mup_llama3`) for its llama3.

torchtitan 0.3 configures a run in Python (`Trainer.Config` returned by a config-registry function; no TOML). The
export writes one such module:
- `mup_model()`: `Llama3Model.Config` at the run's width and depth with the zoo llama's shape (unfused q/k/v so the
  query's zero init is its own), and each module's `param_init` the recipe's init (normal of the recipe's std, ones
  for norm gains, zeros where the zoo zero-initialises);
- `mup_optimizer()`: `OptimizersContainer.Config(param_groups=[…])`, one `ParamGroupConfig` per recipe group (a regex
  of torchtitan's names, AdamW with that group's lr, weight_decay, betas, eps); torchtitan assigns every parameter
  to the first pattern that matches and refuses a parameter no pattern covers;
- `mup_llama3()`: torchtitan's llama3 debug trainer config with the model, optimizer, steps and warmup above; its
  `parallelize_fn` first places every parameter of the model in the recipe (a `RecipeError` naming one it cannot).

The adapter (`adapt`, run by torchtitan as the model spec's `post_optimizer_build_fn`): torchtitan's attention
computes its own scale (1/√d_head) and its llama has no logit multiplier; it sets each attention's `scaling` to the
recipe's attn_scale and scales the logits by the readout multiplier (output_mult / m) with a forward hook on
`lm_head`. Refused: optimizers other than AdamW (torchtitan's factories are Adam, AdamW, DistMuon; DistMuon's LR
scaling is not the recipe's), and depth transfer (no residual-branch multiplier).
"""
from __future__ import annotations

import json
import math
import re

from torch import nn

from trainer.frameworks import hf, scale_logits
from trainer.recipe import Recipe

LAYER = r"layers\.\d+\."
NAMES = [
    (r"tok_embeddings\.weight", "wte.weight"),
    (LAYER + r"attention\.qkv_linear\.wq\.weight", "blocks.*.attn.query.weight"),
    (LAYER + r"attention\.qkv_linear\.wk\.weight", "blocks.*.attn.key.weight"),
    (LAYER + r"attention\.qkv_linear\.wv\.weight", "blocks.*.attn.value.weight"),
    (LAYER + r"attention\.wo\.weight", "blocks.*.attn.proj.weight"),
    (LAYER + r"feed_forward\.w1\.weight", "blocks.*.mlp.gate.weight"),
    (LAYER + r"feed_forward\.w3\.weight", "blocks.*.mlp.up.weight"),
    (LAYER + r"feed_forward\.w2\.weight", "blocks.*.mlp.down.weight"),
    (LAYER + r"attention_norm\.weight", "blocks.*.attn_norm.weight"),
    (LAYER + r"ffn_norm\.weight", "blocks.*.mlp_norm.weight"),
    (r"norm\.weight", "norm.weight"),
    (r"lm_head\.weight", "lm_head.weight"),
]


def refusals(recipe: Recipe) -> list[str]:
    out = hf.refusals(recipe, "torchtitan")
    if recipe.optimizer["name"] != "adamw":
        out.append(f"optimizer.name: {recipe.optimizer['name']!r} — the torchtitan export writes AdamW groups only "
                   "(its DistMuon scales the LR its own way)")
    return out


def param_groups(recipe: Recipe) -> list[dict]:
    """`ParamGroupConfig` keywords, one per recipe group: a regex of torchtitan's names and AdamW's kwargs."""
    o, out = recipe.optimizer, []
    for index, group in enumerate(recipe.groups):
        regexes = [regex for regex, target in NAMES
                   if target in recipe.patterns() and recipe.entry(target).group == index]
        if regexes:
            kwargs = {"lr": group["lr"], "betas": list(o["betas"]), "eps": group.get("eps", o["eps"]),
                      "weight_decay": group["weight_decay"]}
            out.append({"pattern": "^(" + "|".join(regexes) + ")$", "optimizer_name": "AdamW",
                        "optimizer_kwargs": kwargs})
    return out


def inits(recipe: Recipe) -> dict[str, tuple[float, float]]:
    """{torchtitan name regex: (mean, std)} of each parameter's init."""
    return {regex: (recipe.entry(t).init_mean, recipe.entry(t).init_std) for regex, t in NAMES
            if t in recipe.patterns()}


def adapt(recipe: Recipe, model_parts: list[nn.Module]) -> None:
    """Set torchtitan's attention scale and logit multiplier to the recipe's, in place."""
    for model in model_parts:
        for module in model.modules():
            if hasattr(module, "scaling") and hasattr(module, "qkv_linear"):
                module.scaling = recipe.multipliers["attn_scale"]
        mult = recipe.multipliers["readout_mult"]
        if not math.isclose(mult, 1.0) and hasattr(model, "lm_head"):
            scale_logits(model.lm_head, mult)


def render(recipe: Recipe) -> str:
    o, width = hf.llama_options(recipe), recipe.model["width"]
    init = {re.sub(r"^layers\\\.\\d\+\\\.", "", regex): v for regex, v in inits(recipe).items()}
    return TEMPLATE.format(provenance=json.dumps(recipe.provenance), recipe=json.dumps(recipe.to_dict(), indent=1),
                           width=width, depth=recipe.model["depth"], vocab=o["vocab_size"], n_head=o["n_head"],
                           n_kv_head=o["n_kv_head"], hidden=int(o["mlp_ratio"] * width), theta=float(o["rope_theta"]),
                           block=o["block_size"], tied=bool(o["tie_embeddings"]), init=repr(init),
                           groups=repr(param_groups(recipe)), steps=recipe.budget["steps"] or 1000,
                           warmup=recipe.schedule["warmup_steps"] or 0)


TEMPLATE = '''"""μP recipe for torchtitan's llama3, written by `sweep recipe --to torchtitan`.

    torchrun ... -m torchtitan.train --module THIS_MODULE --config mup_llama3

Provenance: {provenance}
"""
import dataclasses
import json
from functools import partial

import torch.nn as nn
from torchtitan.components.optimizer import OptimizersContainer, ParamGroupConfig
from torchtitan.models.common import ComplexRoPE, Embedding, Linear, RMSNorm
from torchtitan.models.common.config_utils import get_attention_config, make_ffn_config, make_gqa_config
from torchtitan.models.llama3 import Llama3Model, Llama3TransformerBlock, model_registry
from torchtitan.models.llama3.config_registry import llama3_debugmodel

from trainer.frameworks.torchtitan import NAMES, adapt
from trainer.recipe import Recipe

RECIPE = Recipe.from_dict(json.loads(r"""{recipe}"""))
INIT = {init}  # torchtitan name (within a layer) → (mean, std) of its init
PARAM_GROUPS = {groups}
EPS = 1.1920928955078125e-07  # the zoo's nn.RMSNorm(eps=None): float32's machine ε (torchtitan's default is 1e-5)


def _init(name):
    mean, std = INIT[name]
    if std == 0:
        return {{"weight": partial(nn.init.constant_, val=mean)}}
    return {{"weight": partial(nn.init.normal_, mean=0.0, std=std)}}


def mup_model(attn_backend="flex"):
    layers = [Llama3TransformerBlock.Config(
        attention_norm=RMSNorm.Config(normalized_shape={width}, eps=EPS, param_init=_init(r"attention_norm\\.weight")),
        ffn_norm=RMSNorm.Config(normalized_shape={width}, eps=EPS, param_init=_init(r"ffn_norm\\.weight")),
        attention=make_gqa_config(
            dim={width}, n_heads={n_head}, n_kv_heads={n_kv_head}, fuse_qkv=False,
            wqkv_param_init=_init(r"attention\\.qkv_linear\\.wk\\.weight"),
            wo_param_init=_init(r"attention\\.wo\\.weight"),
            inner_attention=get_attention_config(attn_backend),
            rope=ComplexRoPE.Config(dim={width} // {n_head}, max_seq_len={block}, theta={theta})),
        feed_forward=make_ffn_config(dim={width}, hidden_dim={hidden},
                                     w1_param_init=_init(r"feed_forward\\.w1\\.weight"),
                                     w2w3_param_init=_init(r"feed_forward\\.w2\\.weight")),
    ) for _ in range({depth})]
    for layer in layers:  # the parts whose init differs from their siblings': the query, the up projection
        layer.attention.qkv_linear.wq.param_init = _init(r"attention\\.qkv_linear\\.wq\\.weight")
        layer.feed_forward.w3.param_init = _init(r"feed_forward\\.w3\\.weight")
    return Llama3Model.Config(
        dim={width}, vocab_size={vocab}, enable_weight_tying={tied},
        tok_embeddings=Embedding.Config(num_embeddings={vocab}, embedding_dim={width},
                                        param_init=_init(r"tok_embeddings\\.weight")),
        norm=RMSNorm.Config(normalized_shape={width}, eps=EPS, param_init=_init(r"norm\\.weight")),
        lm_head=Linear.Config(in_features={width}, out_features={vocab},
                              param_init=_init(r"lm_head\\.weight" if {tied} is False else r"tok_embeddings\\.weight")),
        layers=layers)


def mup_optimizer():
    return OptimizersContainer.Config(param_groups=[ParamGroupConfig(**g) for g in PARAM_GROUPS],
                                      implementation="foreach")


def _placed_first(parallelize):
    """torchtitan's parallelize_fn, after the recipe has placed every parameter (a RecipeError naming the first it
    cannot: torchtitan's own check, after, counts them without names)."""
    def parallelize_placed(model, **kwargs):
        RECIPE.placed(model, NAMES)
        return parallelize(model, **kwargs)
    return parallelize_placed


def mup_llama3():
    config = llama3_debugmodel()
    base = model_registry("debugmodel")
    spec = dataclasses.replace(base, flavor="mup", model=mup_model(), parallelize_fn=_placed_first(base.parallelize_fn),
                               post_optimizer_build_fn=lambda _opt, parts, _dims: adapt(RECIPE, parts))
    config.model_spec = spec
    config.optimizer = mup_optimizer()
    config.training.steps = {steps}
    config.lr_scheduler.warmup_steps = {warmup}
    return config
'''
