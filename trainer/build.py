"""What a RunConfig builds before the first step: data, model, optimizer, LR schedule, grad scaler, spike guard.

The order is part of the run: the data source is opened, then torch's RNG is seeded and the model built
(its initial weights draw from that RNG), so the same config gives the same first weights every time. The
model is laid out (activation checkpointing, then FSDP2 sharding: trainer/parallel.py) before the optimizer is
built, so the optimizer holds the sharded parameters, in the μP groups the unsharded model has.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

from proxies.data import DataSource
from proxies.parametrization import scale_init
from proxies.registry import build_model
from trainer.config import ConfigError, ModelConfig, RunConfig
from trainer.guard import SpikeGuard, events_path
from trainer.optim import build_optimizer
from trainer.parallel import checkpoint_activations, shard
from trainer.runtime import Runtime
from trainer.schedule import Schedule, make_scheduler


@dataclass
class Built:
    data: DataSource
    model: torch.nn.Module
    optimizer: torch.optim.Optimizer
    scheduler: torch.optim.lr_scheduler.LambdaLR
    scaler: torch.amp.GradScaler
    guard: SpikeGuard | None
    total_steps: int


def build(cfg: RunConfig, run: Runtime) -> Built:
    data = cfg.data.open(cfg.seed)
    torch.manual_seed(cfg.seed)
    model = build_net(cfg.model, data.model_options()).to(run.device)
    if cfg.activation_checkpointing:
        checkpoint_activations(model)
    if cfg.sharded():
        shard(model, cfg.parallel, run)
    opt = cfg.optimizer
    try:
        optimizer = build_optimizer(model, name=opt.name, lr=opt.lr, weight_decay=opt.weight_decay,
                                    betas=(opt.beta1, opt.beta2), eps=opt.eps, momentum=opt.momentum,
                                    wd_mode=opt.wd_mode, decay_embeddings=opt.decay_embeddings,
                                    settings=opt.settings(), roles=opt.roles.given(),
                                    width_exps=opt.roles.width_exps())
    except ValueError as err:  # a role the model does not have; the message names the field
        raise ConfigError(str(err)) from None
    total_steps = cfg.total_steps(data.tokens_per_example)
    scheduler = make_scheduler(optimizer, build_schedule(cfg, total_steps))
    scaler = torch.amp.GradScaler(run.device.type, enabled=run.dtype == torch.float16)
    guard = None
    if cfg.guard_on():
        guard = SpikeGuard(cfg.guard, cfg.run_dir(), events_path(cfg) if run.main else None)
    return Built(data, model, optimizer, scheduler, scaler, guard, total_steps)


def build_net(m: ModelConfig, data_options: dict) -> torch.nn.Module:
    """The config's model (on the CPU, drawing from torch's RNG), its init × `model.init.<role>`."""
    model = build_model(m.name, m.width, m.depth, m.parametrization, **{**data_options, **m.options})
    try:
        scale_init(model, m.init.given())
    except ValueError as err:  # a role the model does not have; the message names the field
        raise ConfigError(str(err)) from None
    return model


def build_schedule(cfg: RunConfig, total_steps: int) -> Schedule:
    s = cfg.schedule
    try:
        return Schedule(s.kind, total_steps, s.warmup_for(total_steps), s.min_lr_ratio, s.decay_fraction,
                        s.decay_shape)
    except ValueError as err:  # e.g. warmup as long as the run; the message names the field
        raise ConfigError(str(err)) from None
