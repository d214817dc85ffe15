"""Shared by the framework export tests: this project's llama and its recipe at a small width, on the CPU."""
from __future__ import annotations

import importlib
import os
import sys

import pytest
import torch

from trainer.build import build_net
from trainer.config import RunConfig
from trainer.optim import param_groups
from trainer.recipe import Recipe

DATA = {"vocab_size": 256, "block_size": 32}


def need(package: str):
    """The framework's package; missing, a skip outside CI and a failure in it."""
    if package == "transformers":
        hide_broken_torchvision()
    try:
        return importlib.import_module(package)
    except ImportError as err:
        if os.environ.get("CI"):
            raise
        pytest.skip(f"{package} is not installed ({err})")


def hide_broken_torchvision() -> None:
    """A torchvision whose C extension does not load (a CUDA wheel beside a CPU torch: mup declares torchvision)
    breaks transformers' llama import, which never needs it: hide it."""
    try:
        import torchvision  # noqa: F401
    except Exception:  # noqa: BLE001 — any failure of the broken wheel
        for name in [n for n in sys.modules if n == "torchvision" or n.startswith("torchvision.")]:
            del sys.modules[name]
        sys.modules["torchvision"] = None


def run_config(width: int = 128, depth: int = 2, optimizer: str = "adamw", **options) -> RunConfig:
    return RunConfig.parse({"steps": 3, "batch_size": 4, "seed": 0,
                            "model": {"name": "llama", "width": width, "depth": depth, "options": options},
                            "optimizer": {"name": optimizer, "lr": 0.01, "weight_decay": 0.1},
                            "schedule": {"kind": "constant"}})


def ours(cfg: RunConfig, optimizer: str | None = None) -> tuple[torch.nn.Module, list[dict], Recipe]:
    """This project's llama as the trainer builds it, its parameter groups, and its recipe (`optimizer`: another
    optimizer than the config's)."""
    if optimizer is not None:
        cfg = RunConfig.parse({**cfg.model_dump(mode="json", exclude={"provenance"}),
                               "optimizer": {**cfg.optimizer.model_dump(mode="json", exclude={"muon"}),
                                             "name": optimizer}})
    torch.manual_seed(cfg.seed)
    net = build_net(cfg.model, DATA)
    o = cfg.optimizer
    adjust = o.muon.adjust_lr_fn if o.name == "muon" else "match_rms_adamw"
    groups = param_groups(net, o.lr, o.weight_decay, optimizer=o.name, wd_mode=o.wd_mode, eps=o.eps,
                          adjust_lr_fn=adjust)
    return net, groups, Recipe.from_config(cfg, DATA)


def batches(steps: int = 3, batch: int = 4, seq: int = 32) -> list[torch.Tensor]:
    g = torch.Generator().manual_seed(1)
    return [torch.randint(0, DATA["vocab_size"], (batch, seq + 1), generator=g) for _ in range(steps)]


def losses(forward, optimizer, data: list[torch.Tensor]) -> list[float]:
    """Next-token cross-entropy of `forward(idx) -> logits` over `data`, one AdamW step per batch."""
    out = []
    for x in data:
        logits = forward(x[:, :-1])
        loss = torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]).float(), x[:, 1:].reshape(-1))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        out.append(loss.item())
    return out
