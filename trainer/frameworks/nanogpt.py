"""nanoGPT (karpathy/nanoGPT, a script repository, not a package): a config file for `python train.py CONFIG`.

nanoGPT reads a config file by executing it over `train.py`'s globals. The export sets its settings (n_layer, n_head,
n_embd, block_size, bias, dropout, learning_rate = the base LR, weight_decay, betas, grad_clip, warmup, decay and
min_lr, batch_size, max_iters) and defines, with only `re` and `torch`, the recipe as data (`MUP_GROUPS`: per group
its LR multiplier, weight decay and nanoGPT's names; `MUP_INIT`: each name's init, part by part for the fused
`c_attn`) and three functions. nanoGPT has no μP: the adapter is three edits to `train.py`:

    model = GPT(gptconf); mup_init_(model); mup_adapt_(model)                # after the model is built
    optimizer = torch.optim.AdamW(mup_param_groups(model), lr=learning_rate, betas=(beta1, beta2))
    param_group['lr'] = lr * param_group['lr_mult']                          # in the loop: keep μP's ratios

`mup_param_groups` refuses a parameter it cannot place (ValueError naming it); `mup_adapt_` scales the logits by
output_mult / m (a forward hook on `lm_head`). nanoGPT ties `lm_head` to `wte` and computes attention with SDPA's
default 1/√d_head: a recipe with an untied readout, a different attention scale, RMSNorm, qk_norm or depth transfer is
refused, as are optimizers other than AdamW.
"""
from __future__ import annotations

import json
import math

from trainer.recipe import Recipe

LAYER = r"transformer\.h\.\d+\."
NAMES = [
    (r"transformer\.wte\.weight", "wte.weight"),
    (r"transformer\.wpe\.weight", "wpe.weight"),
    (LAYER + r"ln_1\.weight", "blocks.*.ln_1.weight"),
    (LAYER + r"ln_1\.bias", "blocks.*.ln_1.bias"),
    (LAYER + r"attn\.c_attn\.weight",
     ("blocks.*.attn.query.weight", "blocks.*.attn.key.weight", "blocks.*.attn.value.weight")),
    (LAYER + r"attn\.c_attn\.bias", ("blocks.*.attn.query.bias", "blocks.*.attn.key.bias", "blocks.*.attn.value.bias")),
    (LAYER + r"attn\.c_proj\.weight", "blocks.*.attn.proj.weight"),
    (LAYER + r"attn\.c_proj\.bias", "blocks.*.attn.proj.bias"),
    (LAYER + r"ln_2\.weight", "blocks.*.ln_2.weight"),
    (LAYER + r"ln_2\.bias", "blocks.*.ln_2.bias"),
    (LAYER + r"mlp\.c_fc\.weight", "blocks.*.mlp.fc.weight"),
    (LAYER + r"mlp\.c_fc\.bias", "blocks.*.mlp.fc.bias"),
    (LAYER + r"mlp\.c_proj\.weight", "blocks.*.mlp.proj.weight"),
    (LAYER + r"mlp\.c_proj\.bias", "blocks.*.mlp.proj.bias"),
    (r"transformer\.ln_f\.weight", "ln_f.weight"),
    (r"transformer\.ln_f\.bias", "ln_f.bias"),
]


def options(recipe: Recipe) -> dict:
    o = {"vocab_size": 256, "block_size": 128, "head_dim": 16, "n_head": None, "norm": "layernorm", "bias": True,
         "tie_embeddings": False, "qk_norm": False, **recipe.model["options"]}
    o["n_head"] = o["n_head"] or recipe.model["width"] // o["head_dim"]
    return o


def refusals(recipe: Recipe) -> list[str]:
    o, out = options(recipe), []
    if recipe.model["name"] != "gpt":
        out.append(f"model.name: {recipe.model['name']!r} — the nanogpt export maps the zoo's gpt only")
        return out
    if not o["tie_embeddings"]:
        out.append("model.options.tie_embeddings: nanoGPT ties lm_head to wte; tune the proxy with "
                   "tie_embeddings: true")
    d_head = recipe.model["width"] // o["n_head"]
    if not math.isclose(recipe.multipliers["attn_scale"], d_head ** -0.5):
        out.append(f"model.options.n_head: nanoGPT's attention scale is 1/√d_head = {d_head ** -0.5:.4g}, μP's here "
                   f"is {recipe.multipliers['attn_scale']:.4g}; keep the head dim fixed (head_dim, no n_head) and "
                   "attn_mult unset")
    if o["norm"] != "layernorm" or o["qk_norm"]:
        out.append("model.options.norm: nanoGPT has LayerNorm and no qk_norm")
    if recipe.multipliers["branch_mult"] != 1:
        out.append("model.options.depth_alpha: nanoGPT's blocks have no residual-branch multiplier")
    if recipe.optimizer["name"] != "adamw":
        out.append(f"optimizer.name: {recipe.optimizer['name']!r} — the nanogpt export writes AdamW groups only")
    return out


def tables(recipe: Recipe) -> tuple[list[dict], dict[str, list[list[float]]]]:
    """(MUP_GROUPS, MUP_INIT): per group its lr_mult, weight_decay, eps and nanoGPT name regexes; per name regex,
    [rows, mean, std] for each stacked part."""
    eps = recipe.optimizer["eps"]
    groups = [{"lr_mult": g["lr_mult"], "weight_decay": g["weight_decay"], "eps": g.get("eps", eps), "names": []}
              for g in recipe.groups]
    init = {}
    for regex, target in NAMES:
        parts = [recipe.entry(p) for p in ((target,) if isinstance(target, str) else target) if p in recipe.patterns()]
        if parts:
            groups[parts[0].group]["names"].append(regex)
            init[regex] = [[e.shape[0], e.init_mean, e.init_std] for e in parts]
    return [g for g in groups if g["names"]], init


def render(recipe: Recipe) -> str:
    o, (groups, init), opt, s = options(recipe), tables(recipe), recipe.optimizer, recipe.schedule
    steps = recipe.budget["steps"] or 600000
    warmup = s["warmup_steps"] if s["warmup_steps"] is not None else round((s["warmup_fraction"] or 0) * steps)
    return TEMPLATE.format(provenance=json.dumps(recipe.provenance), n_layer=recipe.model["depth"], n_head=o["n_head"],
                           n_embd=recipe.model["width"], block=o["block_size"], bias=o["bias"], lr=opt["lr"],
                           wd=opt["weight_decay"], beta1=opt["betas"][0], beta2=opt["betas"][1],
                           clip=opt["grad_clip"] or 0.0, warmup=warmup, steps=steps,
                           min_lr=opt["lr"] * s["min_lr_ratio"],
                           decay=s["kind"] != "constant", batch=recipe.budget["batch_size"], vocab=o["vocab_size"],
                           groups=repr(groups), init=repr(init), mult=recipe.multipliers["readout_mult"])


TEMPLATE = '''# μP recipe for nanoGPT (python train.py THIS_FILE), written by `sweep recipe --to nanogpt`.
# Provenance: {provenance}
# nanoGPT has no μP; three edits to train.py apply it (see the functions below):
#   model = GPT(gptconf); mup_init_(model); mup_adapt_(model)
#   optimizer = torch.optim.AdamW(mup_param_groups(model), lr=learning_rate, betas=(beta1, beta2))
#   param_group['lr'] = lr * param_group['lr_mult']
import re as _re

import torch as _torch

n_layer = {n_layer}
n_head = {n_head}
n_embd = {n_embd}
block_size = {block}
bias = {bias}
dropout = 0.0
learning_rate = {lr!r}  # the base LR; each group's is learning_rate × its lr_mult
weight_decay = {wd!r}  # the base decay; each group carries its own
beta1 = {beta1!r}
beta2 = {beta2!r}
grad_clip = {clip!r}
decay_lr = {decay}
warmup_iters = {warmup}
max_iters = {steps}
lr_decay_iters = {steps}
min_lr = {min_lr!r}
batch_size = {batch}
MUP_VOCAB_SIZE = {vocab}  # the dataset's meta.pkl vocab_size must be this
MUP_GROUPS = {groups}
MUP_INIT = {init}
MUP_OUTPUT_MULT = {mult!r}


def _placed(model):
    for name, p in model.named_parameters():
        for index, group in enumerate(MUP_GROUPS):
            regex = next((r for r in group["names"] if _re.fullmatch(r, name)), None)
            if regex is not None:
                yield name, p, index, regex
                break
        else:
            raise ValueError(f"{{name}}: no rule of the μP recipe covers this parameter (shape {{tuple(p.shape)}})")


def mup_param_groups(model):
    """AdamW groups with the recipe's LR multipliers and decays (set lr = lr(t) × lr_mult each step)."""
    members = [[] for _ in MUP_GROUPS]
    for _, p, index, _ in _placed(model):
        members[index].append(p)
    return [{{"params": ps, "lr_mult": g["lr_mult"], "lr": learning_rate * g["lr_mult"],
             "weight_decay": g["weight_decay"], "eps": g["eps"]}} for g, ps in zip(MUP_GROUPS, members) if ps]


@_torch.no_grad()
def mup_init_(model):
    """Each parameter redrawn from the recipe's init, part by part along dim 0 (c_attn: query, key, value)."""
    for name, p, _, regex in _placed(model):
        start = 0
        for rows, mean, std in MUP_INIT[regex]:
            p[start:start + rows].normal_(0.0, 1.0).mul_(std).add_(mean)
            start += rows
        if start != p.shape[0]:
            raise ValueError(f"{{name}}: {{p.shape[0]}} rows, the recipe has {{start}} (a different width?)")


def mup_adapt_(model):
    """The readout multiplier output_mult / m on the logits (nanoGPT's lm_head has none)."""
    if getattr(model.lm_head, "_mup_logit_mult", None) is not None:
        raise ValueError("readout_mult: lm_head already scales its logits; adapt a model once")
    model.lm_head._mup_logit_mult = MUP_OUTPUT_MULT
    model.lm_head.register_forward_hook(lambda _m, _i, out: out * MUP_OUTPUT_MULT)
'''
