"""The optimizer and schedule sections: each optimizer's own settings and the flat fields it does not read."""
from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field, ValidationInfo, field_validator, model_validator

from trainer.config._base import Strict
from trainer.config._roles import LR_MAX, RoleMults


class MuonSettings(Strict):
    """`torch.optim.Muon` on the hidden matrices; AdamW (optimizer.beta1, beta2, eps) on the rest.

    `adjust_lr_fn` is torch's update scale: "original" (Keller Jordan: lr · √max(1, A/B)) or
    "match_rms_adamw" (Moonlight, Liu et al. 2025: lr · 0.2 · √max(A, B), an update RMS like AdamW's), the
    default here because one `optimizer.lr` drives both the Muon and the AdamW parts."""

    momentum: float = Field(0.95, ge=0, lt=1)
    nesterov: bool = True
    ns_steps: int = Field(5, ge=1, lt=100)  # Newton–Schulz iterations (torch refuses 100 or more)
    adjust_lr_fn: Literal["original", "match_rms_adamw"] = "match_rms_adamw"


class LionSettings(Strict):
    """Lion (Chen et al. 2023, "Symbolic Discovery of Optimization Algorithms"): its own β's, not AdamW's."""

    beta1: float = Field(0.9, ge=0, lt=1)  # interpolation of momentum and gradient inside the sign
    beta2: float = Field(0.99, ge=0, lt=1)  # the momentum's decay


class ScheduleFreeSettings(Strict):
    """Schedule-Free AdamW (Defazio et al. 2024, "The Road Less Scheduled"); β's and ε are optimizer.beta1/2, eps."""

    warmup_steps: int = Field(0, ge=0)  # its own linear warmup, on top of schedule.warmup_*
    # polynomial weighting of the average: c_t ∝ t^r · lr_max^weight_lr_power, summed in Python floats (float64):
    # at most 10 each keeps t^r · lr^power below 1e160 for any step and LR this config allows
    r: float = Field(0.0, ge=0, le=10)
    weight_lr_power: float = Field(2.0, ge=0, le=10)


SETTINGS = {"muon": MuonSettings, "lion": LionSettings, "schedulefree_adamw": ScheduleFreeSettings}
# flat fields an optimizer does not read, and where its own value lives instead
UNUSED = {"muon": {"momentum": "optimizer.muon.momentum"},
          "lion": {"beta1": "optimizer.lion.beta1", "beta2": "optimizer.lion.beta2", "eps": "none: Lion has no ε",
                   "momentum": "optimizer.lion.beta2"},
          "adam_atan2": {"eps": "none: atan2 replaces the ε division", "momentum": "optimizer.beta1"},
          "schedulefree_adamw": {"momentum": "optimizer.beta1"},
          "sgd": {"beta1": "optimizer.momentum", "beta2": "none: SGD has no second moment",
                  "eps": "none: SGD divides by nothing"},
          "adamw": {"momentum": "optimizer.beta1"}}


class OptimizerConfig(Strict):
    """The optimizer; the section named after it (`muon`, `lion`, `schedulefree_adamw`) holds its own settings,
    filled with their defaults when absent, and is refused under another optimizer."""

    name: Literal["adamw", "sgd", "muon", "lion", "schedulefree_adamw", "adam_atan2"] = "adamw"
    lr: float = Field(2 ** -6, gt=0, le=LR_MAX)  # base LR: the LR at the base width, before μP multipliers
    weight_decay: float = Field(0.0, ge=0)
    wd_mode: Literal["coupled", "independent"] = "coupled"
    decay_embeddings: bool = False
    beta1: float = Field(0.9, ge=0, lt=1)
    beta2: float = Field(0.95, ge=0, lt=1)
    eps: float = Field(1e-8, gt=0)
    momentum: float = Field(0.9, ge=0, lt=1)  # SGD only
    grad_clip: float | None = Field(1.0, gt=0)  # max global grad norm; null: no clipping
    roles: RoleMults = Field(RoleMults(), exclude_if=lambda v: not v.given())  # per-role LR and decay multipliers
    # absent from dumps when unset: configs and run ids written before these sections existed stay as they were
    muon: MuonSettings | None = Field(None, exclude_if=lambda v: v is None)
    lion: LionSettings | None = Field(None, exclude_if=lambda v: v is None)
    schedulefree_adamw: ScheduleFreeSettings | None = Field(None, exclude_if=lambda v: v is None)

    @model_validator(mode="before")
    @classmethod
    def _own_section(cls, data: Any) -> Any:
        """The chosen optimizer's section, with its defaults, so the written config states every setting."""
        if isinstance(data, dict) and isinstance(data.get("name"), str) and data["name"] in SETTINGS \
                and data.get(data["name"]) is None:
            data = {**data, data["name"]: {}}
        return data

    @field_validator("beta1", "beta2", "eps", "momentum")
    @classmethod
    def _read_by_optimizer(cls, value: float, info: ValidationInfo) -> float:
        instead = UNUSED.get(info.data.get("name"), {}).get(info.field_name)
        if instead and value != cls.model_fields[info.field_name].default:
            raise ValueError(f"{info.data['name']} does not read it (instead: {instead}); leave it at its default")
        return value

    @field_validator("muon", "lion", "schedulefree_adamw")
    @classmethod
    def _section_of_name(cls, value: Any, info: ValidationInfo) -> Any:
        if value is not None and info.data.get("name") != info.field_name:
            raise ValueError(f"settings of {info.field_name}, but optimizer.name is {info.data.get('name')} "
                             f"(give this section only with name {info.field_name})")
        return value

    def settings(self) -> BaseModel | None:
        """The chosen optimizer's own settings (None for adamw, sgd and adam_atan2, which have none)."""
        return getattr(self, self.name, None) if self.name in SETTINGS else None


class ScheduleConfig(Strict):
    kind: Literal["cosine", "wsd", "linear", "constant"] = "cosine"
    warmup_steps: int | None = Field(None, ge=0)
    warmup_fraction: float | None = Field(None, ge=0, lt=1)
    min_lr_ratio: float = Field(0.1, ge=0, le=1)
    decay_fraction: float = Field(0.2, gt=0, le=1)  # wsd
    decay_shape: Literal["linear", "cosine", "sqrt"] = "linear"  # wsd

    @model_validator(mode="after")
    def _one_warmup(self) -> ScheduleConfig:
        if self.warmup_steps is not None and self.warmup_fraction is not None:
            raise ValueError("warmup_steps and warmup_fraction: give one, not both")
        return self

    def warmup_for(self, total_steps: int) -> int:
        if self.warmup_steps is not None:
            return self.warmup_steps
        return round((self.warmup_fraction or 0.0) * total_steps)
