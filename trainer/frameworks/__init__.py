"""A `trainer.recipe.Recipe` written for another framework, and the check that the framework's own model and
optimizer then hold the recipe, parameter by parameter.

Each framework module (`hf`, `torchtitan`, `megatron`, `nanogpt`) has `NAMES` (its parameter names → the zoo
model's patterns), `refusals(recipe)` (the settings it cannot express, each one line naming the setting and the
framework; the export refuses the first) and `render(recipe)` (the exported text). `torch` is the recipe itself
(`Recipe.param_groups`, `Recipe.init_`), written as JSON.
"""
from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from importlib import import_module

import torch
from torch import nn

from trainer.recipe import Recipe, RecipeError, pattern_of

FORMATS = ("torch", "torchtitan", "megatron", "hf", "nanogpt")
LAYER_INDEX = re.compile(r"\.(\d+)\.")


def export(recipe: Recipe, fmt: str) -> str:
    """The recipe in format `fmt`, or a `RecipeError` naming the first setting that framework cannot hold."""
    if fmt not in FORMATS:
        raise RecipeError(f"--to: {fmt!r} is not one of {', '.join(FORMATS)}")
    if fmt == "torch":
        return json.dumps(recipe.to_dict(), indent=2) + "\n"
    module = import_module(f"trainer.frameworks.{fmt}")
    refused = module.refusals(recipe)
    if refused:
        raise RecipeError(refused[0])
    return module.render(recipe)


@dataclass
class Check:
    matched: int = 0
    total: int = 0
    mismatches: list[str] = field(default_factory=list)

    @property
    def ratio(self) -> float:
        return self.matched / self.total if self.total else 0.0


def scale_logits(head: nn.Module, mult: float, tuple_output: bool = False) -> None:
    """The readout multiplier as a forward hook on `head`, once: a model adapted twice would have its logits scaled
    by mult² silently, so a second hook is a RecipeError. `tuple_output`: the head returns (logits, bias)."""
    if getattr(head, "_mup_logit_mult", None) is not None:
        raise RecipeError(f"readout_mult: this model's {type(head).__name__} already scales its logits by "
                          f"{head._mup_logit_mult:.4g}; adapt a model once")
    head._mup_logit_mult = mult
    if tuple_output:
        head.register_forward_hook(lambda _m, _i, out: (out[0] * mult, *out[1:]))
    else:
        head.register_forward_hook(lambda _m, _i, out: out * mult)


def layer_of(name: str) -> str | None:
    """The layer index in a parameter's name (`blocks.3.ln_1.weight` → "3"), None outside the layers."""
    found = LAYER_INDEX.search(name)
    return found.group(1) if found else None


def group_of(optimizer_groups: list[dict]) -> dict[int, dict]:
    return {id(p): g for g in optimizer_groups for p in g["params"]}


def check(model: nn.Module, groups: list[dict], reference: nn.Module, reference_groups: list[dict],
          names: list[tuple[str, str | tuple[str, ...]]], lr_key: str = "lr", wd_key: str = "weight_decay",
          init_rtol: float = 0.05) -> Check:
    """Compare each trainable parameter of a framework's `model`, in its optimizer's `groups`, with the parameter
    of this project's `reference` model (in `reference_groups`) at the same place (recipe pattern and layer
    index): its LR, its weight decay, and its init std (within `init_rtol`; a constant init exactly). A fused
    matrix is compared part by part (stacked along dim 0)."""
    theirs, ours = group_of(groups), group_of(reference_groups)
    reference_params = {(pattern_of(n), layer_of(n)): p for n, p in reference.named_parameters()}
    result = Check()
    for name, p in model.named_parameters():
        if not p.requires_grad:
            continue
        result.total += 1
        target = next((t for regex, t in names if re.fullmatch(regex, name)), None)
        if target is None:
            result.mismatches.append(f"{name}: not placed")
            continue
        parts = (target,) if isinstance(target, str) else target
        layer = layer_of(name) if "*" in parts[0] else None
        wrong, start = [], 0
        for part in parts:
            ref = reference_params[(part, layer)]
            mine, other = ours[id(ref)], theirs.get(id(p))
            if other is None:
                wrong.append("in no optimizer group")
                break
            for key, ref_key in ((lr_key, "lr"), (wd_key, "weight_decay")):
                if not math.isclose(other[key], mine[ref_key], rel_tol=1e-6, abs_tol=1e-12):
                    wrong.append(f"{key} {other[key]:.6g} ≠ ours {mine[ref_key]:.6g} ({part})")
            rows = p.detach()[start:start + ref.shape[0]].double()
            start += ref.shape[0]
            a, b = float(rows.std()), float(ref.detach().double().std())
            if not (math.isclose(a, b, rel_tol=init_rtol, abs_tol=1e-9)
                    and (b > 0 or torch.equal(rows, ref.detach().double()))):
                wrong.append(f"init std {a:.4g} ≠ ours {b:.4g} ({part})")
        if wrong:
            result.mismatches.append(f"{name}: {'; '.join(wrong)}")
        else:
            result.matched += 1
    return result
