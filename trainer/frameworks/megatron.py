"""Megatron Core: `TransformerConfig` and `OptimizerConfig` keywords and the `config_overrides` for its GPTModel.

Megatron Core (0.16) groups parameters by `config_overrides: {ParamKey: ParamGroupOverride}` passed to
`get_megatron_optimizer` (`_get_param_groups`); its `OptimizerParamScheduler` gives each group the LR schedule
between the group's `max_lr` and `min_lr` and the weight decay × its `wd_mult`. The export writes one `ParamKey`
(globs of Megatron's names) per recipe group with max_lr = the group's LR, min_lr = max_lr × schedule.min_lr_ratio,
wd_mult = the group's decay / the base decay. The attention scale is Megatron's own `softmax_scale`; μP's Adam ε
stays the base ε (the recipe's ε multipliers are 1 without depth transfer).

Megatron fuses query, key and value into `linear_qkv` (per query group) and the SwiGLU gate and up into
`linear_fc1`; a fused matrix takes one LR group and one init, so the recipe's parts must agree: the zoo's zero-init
query (`model.options.zero_query`) is refused. The adapter (`adapt_`): Megatron's GPTModel has no logit multiplier;
a forward hook on `output_layer` scales the logits by output_mult / m, and `init_` redraws each parameter from the
recipe (Megatron's `init_method` takes one std for all hidden matrices). Refused: optimizers other than AdamW
(`optimizer: adam` with decoupled decay) and SGD, depth transfer.
"""
from __future__ import annotations

import json
import math

from torch import nn

from trainer.frameworks import hf, scale_logits
from trainer.recipe import Recipe

LAYER = r"decoder\.layers\.\d+\."
NAMES = [
    (r"embedding\.word_embeddings\.weight", "wte.weight"),
    (LAYER + r"self_attention\.linear_qkv\.weight",
     ("blocks.*.attn.query.weight", "blocks.*.attn.key.weight", "blocks.*.attn.value.weight")),
    (LAYER + r"self_attention\.linear_proj\.weight", "blocks.*.attn.proj.weight"),
    (LAYER + r"mlp\.linear_fc1\.weight", ("blocks.*.mlp.gate.weight", "blocks.*.mlp.up.weight")),
    (LAYER + r"mlp\.linear_fc2\.weight", "blocks.*.mlp.down.weight"),
    (LAYER + r"input_layernorm\.weight", "blocks.*.attn_norm.weight"),
    (LAYER + r"pre_mlp_layernorm\.weight", "blocks.*.mlp_norm.weight"),
    (r"decoder\.final_layernorm\.weight", "norm.weight"),
    (r"output_layer\.weight", "lm_head.weight"),
]
OPTIMIZERS = {"adamw": "adam", "sgd": "sgd"}


def refusals(recipe: Recipe) -> list[str]:
    out = hf.refusals(recipe, "megatron")
    if recipe.optimizer["name"] not in OPTIMIZERS:
        out.append(f"optimizer.name: {recipe.optimizer['name']!r} — the megatron export writes adam (decoupled "
                   "decay) or sgd groups only")
    for _, parts in NAMES:
        entries = [recipe.entry(p) for p in ((parts,) if isinstance(parts, str) else parts) if p in recipe.patterns()]
        stds = [e.init_std for e in entries]
        if len({e.init_mean for e in entries}) > 1 or (stds and min(stds) < max(stds) / 1.05):
            out.append(f"model.options.zero_query: megatron fuses {' + '.join(e.pattern for e in entries)} into one "
                       "matrix with one init; set zero_query: false on the proxy and the run")
    return out


def overrides(recipe: Recipe) -> list[tuple[list[str], dict]]:
    """[(globs of Megatron's names, ParamGroupOverride)], one per recipe group."""
    base_wd, ratio, out = recipe.optimizer["weight_decay"], recipe.schedule["min_lr_ratio"], []
    for index, group in enumerate(recipe.groups):
        firsts = [(regex, parts if isinstance(parts, str) else parts[0]) for regex, parts in NAMES]
        globs = [regex.replace(r"\d+", "*").replace("\\", "") for regex, first in firsts
                 if first in recipe.patterns() and recipe.entry(first).group == index]
        if globs:
            wd_mult = group["weight_decay"] / base_wd if base_wd else 1.0
            out.append((globs, {"max_lr": group["lr"], "min_lr": group["lr"] * ratio, "wd_mult": wd_mult}))
    return out


def transformer_config(recipe: Recipe) -> dict:
    o, width = hf.llama_options(recipe), recipe.model["width"]
    return {"num_layers": recipe.model["depth"], "hidden_size": width, "num_attention_heads": o["n_head"],
            "num_query_groups": o["n_kv_head"], "kv_channels": width // o["n_head"],
            "ffn_hidden_size": int(o["mlp_ratio"] * width), "normalization": "RMSNorm", "gated_linear_unit": True,
            "add_bias_linear": False, "softmax_scale": recipe.multipliers["attn_scale"],
            "layernorm_epsilon": 1.1920928955078125e-07}


def optimizer_config(recipe: Recipe) -> dict:
    o = recipe.optimizer
    return {"optimizer": OPTIMIZERS.get(o["name"], o["name"]), "lr": o["lr"],
            "min_lr": o["lr"] * recipe.schedule["min_lr_ratio"], "weight_decay": o["weight_decay"],
            "adam_beta1": o["betas"][0], "adam_beta2": o["betas"][1], "adam_eps": o["eps"],
            "sgd_momentum": o["momentum"], "clip_grad": o["grad_clip"] or 0.0}


def adapt_(model: nn.Module, recipe: Recipe) -> nn.Module:
    """The recipe's init, and the logit multiplier as a forward hook on `output_layer`, in place."""
    recipe.init_(model, NAMES)
    mult = recipe.multipliers["readout_mult"]
    if not math.isclose(mult, 1.0) and hasattr(model, "output_layer"):
        scale_logits(model.output_layer, mult, tuple_output=True)
    return model


def render(recipe: Recipe) -> str:
    o = hf.llama_options(recipe)
    return TEMPLATE.format(provenance=json.dumps(recipe.provenance), recipe=json.dumps(recipe.to_dict(), indent=1),
                           transformer=repr(transformer_config(recipe)), optimizer=repr(optimizer_config(recipe)),
                           overrides=repr(overrides(recipe)), vocab=o["vocab_size"], block=o["block_size"],
                           tied=bool(o["tie_embeddings"]), theta=float(o["rope_theta"]))


TEMPLATE = '''"""μP recipe for Megatron Core's GPTModel (llama layout), written by `sweep recipe --to megatron`.

    model = build_model()             # after parallel_state.initialize_model_parallel()
    optimizer = get_megatron_optimizer(OptimizerConfig(**OPTIMIZER), [model], config_overrides=config_overrides())

Provenance: {provenance}
"""
import json

import torch
from megatron.core.models.gpt import GPTModel
from megatron.core.models.gpt.gpt_layer_specs import get_gpt_layer_local_spec
from megatron.core.optimizer import OptimizerConfig, ParamKey
from megatron.core.transformer import TransformerConfig

from trainer.frameworks.megatron import adapt_
from trainer.recipe import Recipe

RECIPE = Recipe.from_dict(json.loads(r"""{recipe}"""))
TRANSFORMER = {transformer}
OPTIMIZER = {optimizer}
OVERRIDES = {overrides}


def config_overrides():
    return {{ParamKey(name=tuple(globs)): dict(override) for globs, override in OVERRIDES}}


def build_model(**transformer):
    config = TransformerConfig(**TRANSFORMER, activation_func=torch.nn.functional.silu, **transformer)
    model = GPTModel(config, get_gpt_layer_local_spec(normalization="RMSNorm"), vocab_size={vocab},
                     max_sequence_length={block}, position_embedding_type="rope", rotary_base={theta},
                     share_embeddings_and_output_weights={tied})
    return adapt_(model, RECIPE)
'''
