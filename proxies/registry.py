"""Model registry: a name, or `package.module:function`, to a builder.

A builder is `(width, depth, parametrization="mup"|"sp", **options) -> nn.Module` returning a
model whose parameters carry μP base shapes (see `proxies.base_shapes.mup_builder`). Users bring
their own models by naming their builder as `package.module:function`.
"""
from __future__ import annotations

import importlib
from collections.abc import Callable

from torch import nn

from proxies.base_shapes import has_base_shapes
from proxies.gpt import gpt
from proxies.llama import llama
from proxies.meta import shapes_only
from proxies.mlp import mlp
from proxies.resnet import resnet
from proxies.resources import BYTES_PER_PARAMETER, check_fits

ZOO: dict[str, Callable[..., nn.Module]] = {"gpt": gpt, "llama": llama, "mlp": mlp, "resnet": resnet}


class ModelError(ValueError):
    """A model name or builder that cannot be used; the message is one line naming the field."""


def resolve_builder(name: str) -> Callable[..., nn.Module]:
    if name in ZOO:
        return ZOO[name]
    if ":" not in name:
        raise ModelError(f"model.name: {name!r} is not a zoo model ({', '.join(ZOO)}) "
                         "nor a package.module:function builder")
    module_name, _, attr = name.partition(":")
    try:
        builder = getattr(importlib.import_module(module_name), attr)
    except (ImportError, AttributeError) as err:
        raise ModelError(f"model.name: cannot import builder {name!r} ({type(err).__name__}: {err})") from None
    if not callable(builder):
        raise ModelError(f"model.name: {name!r} is not callable")
    if not hasattr(builder, "base_width"):  # never called: `os:system` was (found by an outside tester)
        raise ModelError(f"model.name: {name!r} is not a μP builder (it declares no base_width); decorate it with "
                         "@proxies.mup_builder(base_width=...)")
    return builder


def base_width_of(name: str) -> int:
    builder = resolve_builder(name)
    if not hasattr(builder, "base_width"):
        raise ModelError(f"model.name: builder {name!r} declares no base_width; "
                         "decorate it with @proxies.mup_builder(base_width=...)")
    return builder.base_width


def build_model(name: str, width: int, depth: int, parametrization: str = "mup", **options) -> nn.Module:
    """Build a zoo or user model with its μP base shapes set, once `check_model` has passed."""
    check_model(name, width, depth, parametrization, **options)
    model = call_builder(resolve_builder(name), name, width, depth, parametrization, options)
    if not has_base_shapes(model):
        raise ModelError(f"model.name: builder {name!r} returned parameters without base shapes; "
                         "decorate it with @proxies.mup_builder(base_width=...)")
    return model


def check_model(name: str, width: int, depth: int, parametrization: str = "mup", **options) -> int:
    """The parameter count, once the builder takes these options and the training state fits in memory
    (proxies/resources.py), both found on a meta-device copy: no memory, no init cost. A ModelError or
    ResourceError names the field."""
    params = count_parameters(name, width, depth, parametrization, **options)
    vocab = f", vocabulary {options['vocab_size']}" if "vocab_size" in options else ""
    check_fits(params * BYTES_PER_PARAMETER, f"{name} at width {width}, depth {depth}{vocab} ({params:,} parameters, "
               f"{BYTES_PER_PARAMETER} bytes each for weights, gradients and optimizer state)", "model.width")
    return params


def count_parameters(name: str, width: int, depth: int, parametrization: str = "mup", **options) -> int:
    """The parameters of the model these arguments build, counted on a copy built on the meta device (no memory,
    no init cost); a ModelError as `build_model` for options the builder refuses."""
    builder = resolve_builder(name)
    with shapes_only():
        return sum(p.numel() for p in call_builder(builder, name, width, depth, parametrization, options).parameters())


def call_builder(builder: Callable[..., nn.Module], name: str, width: int, depth: int, parametrization: str,
                 options: dict) -> nn.Module:
    try:
        return builder(width, depth, parametrization=parametrization, **options)
    except TypeError as err:  # an option the builder does not take
        raise ModelError(f"model.options: {name} rejected its options ({err})") from None
    except ValueError as err:  # builders name the field in their own messages
        message = " ".join(str(err).split())
        raise ModelError(message if message.startswith("model.") else f"model.options: {message}") from None
    except Exception as err:  # noqa: BLE001 — a user's builder may raise anything: said in one line, not a traceback
        message = " ".join(str(err).split())[:300]
        raise ModelError(f"model.name: builder {name!r} raised {type(err).__name__} at width {width}, depth "
                         f"{depth}: {message}") from None
