"""A run's config resolved against its model builder, before anything is built: what pre-flight checks, the
doctor and launches read without importing the training loop."""
from __future__ import annotations

from proxies.registry import ModelError, base_width_of
from trainer.config import ConfigError, RunConfig


def resolve(cfg: RunConfig) -> RunConfig:
    """The config with what the builder declares filled in (base width); a mismatch is a ConfigError."""
    try:
        declared = base_width_of(cfg.model.name)
    except ModelError as err:
        raise ConfigError(str(err)) from None
    if cfg.model.base_width not in (None, declared):
        raise ConfigError(f"model.base_width: {cfg.model.name} declares base width {declared}, "
                          f"config says {cfg.model.base_width}")
    return cfg.model_copy(update={"model": cfg.model.model_copy(update={"base_width": declared})})
