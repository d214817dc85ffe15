"""Hugging Face transformers: a `LlamaForCausalLM` holding the zoo llama's μP recipe.

The export is a Python module: the `LlamaConfig` of the zoo llama at the run's width (same heads, GQA, SwiGLU size,
RoPE θ, RMSNorm ε, tied or not), the `TrainingArguments` of the run (LR, betas, ε, clipping, warmup, steps), and
`build()`, which makes the model, redraws its init from the recipe and returns it with the recipe's optimizer over
its parameter groups, for `Trainer(model, args, optimizers=(optimizer, None))` (Trainer's own scheduler then scales
each group's LR, so the μP ratios hold at every step). `TrainingArguments` holds one LR and one weight decay:
the per-parameter ones live in the groups.

The adapter (`adapt_`): transformers' llama hard-codes two forward multipliers μP sets. It sets each attention's
`scaling` (1/√d_head in transformers; μP's attn_mult / d_head) and scales the logits by the readout multiplier
(output_mult / m; transformers has no logit multiplier on llama) with a forward hook on `lm_head`. Refused: depth
transfer (transformers' llama has no residual-branch multiplier).
"""
from __future__ import annotations

import json
import math

import torch
from torch import nn

from trainer.frameworks import scale_logits
from trainer.recipe import Recipe

LAYER = r"model\.layers\.\d+\."
NAMES = [
    (r"model\.embed_tokens\.weight", "wte.weight"),
    (LAYER + r"self_attn\.q_proj\.weight", "blocks.*.attn.query.weight"),
    (LAYER + r"self_attn\.k_proj\.weight", "blocks.*.attn.key.weight"),
    (LAYER + r"self_attn\.v_proj\.weight", "blocks.*.attn.value.weight"),
    (LAYER + r"self_attn\.o_proj\.weight", "blocks.*.attn.proj.weight"),
    (LAYER + r"mlp\.gate_proj\.weight", "blocks.*.mlp.gate.weight"),
    (LAYER + r"mlp\.up_proj\.weight", "blocks.*.mlp.up.weight"),
    (LAYER + r"mlp\.down_proj\.weight", "blocks.*.mlp.down.weight"),
    (LAYER + r"input_layernorm\.weight", "blocks.*.attn_norm.weight"),
    (LAYER + r"post_attention_layernorm\.weight", "blocks.*.mlp_norm.weight"),
    (r"model\.norm\.weight", "norm.weight"),
    (r"lm_head\.weight", "lm_head.weight"),
]
SCHEDULES = {"cosine": "cosine_with_min_lr", "linear": "linear", "constant": "constant_with_warmup",
             "wsd": "warmup_stable_decay"}


def llama_options(recipe: Recipe) -> dict:
    """The zoo llama's options with its defaults filled in, and its head counts at the recipe's width."""
    from proxies.llama import head_counts
    o = {"vocab_size": 256, "block_size": 128, "head_dim": 16, "n_head": None, "n_kv_head": None, "q_per_kv": None,
         "mlp_ratio": 3.5, "rope_theta": 10000.0, "tie_embeddings": False, **recipe.model["options"]}
    o["n_head"], o["n_kv_head"], _ = head_counts(recipe.model["width"], o["head_dim"], o["n_head"], o["n_kv_head"],
                                                 o["q_per_kv"])
    return o


def refusals(recipe: Recipe, framework: str = "hf") -> list[str]:
    """The settings of `recipe` a transformers llama cannot hold, one line each."""
    out = []
    if recipe.model["name"] != "llama":
        out.append(f"model.name: {recipe.model['name']!r} — the {framework} export maps the zoo's llama only")
    if recipe.multipliers["branch_mult"] != 1:
        out.append(f"model.options.depth_alpha: {framework}'s llama has no residual-branch multiplier "
                   f"(m_L^-α = {recipe.multipliers['branch_mult']:.4g}); train at the proxy's depth or drop "
                   "depth_alpha")
    return out


def config(recipe: Recipe) -> dict:
    """`LlamaConfig` keyword arguments for the zoo llama at the recipe's width and depth."""
    o, width = llama_options(recipe), recipe.model["width"]
    return {"vocab_size": o["vocab_size"], "hidden_size": width, "intermediate_size": int(o["mlp_ratio"] * width),
            "num_hidden_layers": recipe.model["depth"], "num_attention_heads": o["n_head"],
            "num_key_value_heads": o["n_kv_head"], "head_dim": width // o["n_head"],
            "max_position_embeddings": o["block_size"], "rms_norm_eps": torch.finfo(torch.float32).eps,
            "rope_parameters": {"rope_type": "default", "rope_theta": float(o["rope_theta"])},
            "tie_word_embeddings": bool(o["tie_embeddings"]), "attention_bias": False, "mlp_bias": False}


def training_arguments(recipe: Recipe) -> dict:
    """`TrainingArguments` keywords for what it can hold (one LR, one decay: the base ones; the groups hold μP's)."""
    o, s = recipe.optimizer, recipe.schedule
    args = {"learning_rate": o["lr"], "weight_decay": o["weight_decay"], "adam_beta1": o["betas"][0],
            "adam_beta2": o["betas"][1], "adam_epsilon": o["eps"], "max_grad_norm": o["grad_clip"] or 0.0,
            "lr_scheduler_type": SCHEDULES[s["kind"]], "per_device_train_batch_size": recipe.budget["batch_size"]}
    steps = recipe.budget["steps"]
    if steps:
        args["max_steps"] = steps
    if s["warmup_steps"] is not None or s["warmup_fraction"] is not None:
        args["warmup_steps"] = s["warmup_steps"] if s["warmup_steps"] is not None else s["warmup_fraction"]
    if s["kind"] == "cosine":
        args["lr_scheduler_kwargs"] = {"min_lr_rate": s["min_lr_ratio"]}
    elif s["kind"] == "wsd" and steps:
        args["lr_scheduler_kwargs"] = {"num_decay_steps": round(s["decay_fraction"] * steps),
                                       "min_lr_ratio": s["min_lr_ratio"], "decay_type": s["decay_shape"]}
    return args


def adapt_(model: nn.Module, recipe: Recipe) -> nn.Module:
    """Set the attention scale and the logit multiplier of a transformers llama to the recipe's, in place."""
    for module in model.modules():
        if hasattr(module, "scaling") and hasattr(module, "q_proj"):
            module.scaling = recipe.multipliers["attn_scale"]
    mult = recipe.multipliers["readout_mult"]
    if not math.isclose(mult, 1.0):
        scale_logits(model.lm_head, mult)
    return model


def render(recipe: Recipe) -> str:
    return TEMPLATE.format(provenance=json.dumps(recipe.provenance), recipe=json.dumps(recipe.to_dict(), indent=1),
                           config=repr(config(recipe)), args=repr(training_arguments(recipe)))


TEMPLATE = '''"""μP recipe for transformers' LlamaForCausalLM, written by `sweep recipe --to hf`.

Provenance: {provenance}

    model, optimizer = build()
    trainer = Trainer(model=model, args=TrainingArguments(output_dir=..., **TRAINING_ARGUMENTS),
                      optimizers=(optimizer, None), train_dataset=...)
"""
import json

from transformers import LlamaConfig, LlamaForCausalLM

from trainer.frameworks.hf import NAMES, adapt_
from trainer.recipe import Recipe

RECIPE = Recipe.from_dict(json.loads(r"""{recipe}"""))
CONFIG = {config}
TRAINING_ARGUMENTS = {args}


def build():
    """The llama with the recipe's init and forward multipliers, and the recipe's optimizer over its groups."""
    model = LlamaForCausalLM(LlamaConfig(**CONFIG))
    RECIPE.init_(model, NAMES)
    adapt_(model, RECIPE)
    return model, RECIPE.make_optimizer(model, NAMES)
'''
