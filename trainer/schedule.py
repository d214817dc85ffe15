"""Learning-rate schedules as one multiplicative factor on every param group's base LR.

`make_scheduler` wraps a `Schedule` in `LambdaLR`, so group g uses
    lr_g(t) = base_lr · lr_mult_g · factor(t)
and the μP ratios between groups hold at every step. The loop calls `optimizer.step()` then
`scheduler.step()`, so optimizer step t (0-based) runs at factor(t).

Warmup, for t < warmup_steps (starts tiny but non-zero, as nanoGPT):
    factor(t) = (t + 1) / (warmup_steps + 1)
After warmup, with progress p = clip((t - warmup_steps) / max(1, total_steps - warmup_steps), 0, 1)
and m = min_lr_ratio:
    cosine:   m + (1 - m) · ½(1 + cos πp)
    linear:   1 - (1 - m) · p
    constant: 1
    wsd:      warmup-stable-decay (Hägele et al. 2024, "Scaling Laws and Compute-Optimal Training
              Beyond Fixed Training Durations"): 1 until the decay starts at
              s = total_steps - round(decay_fraction · total_steps), then with
              q = clip((t - s) / max(1, total_steps - s), 0, 1):  m + (1 - m) · shape(q), where
              shape is linear 1 - q, cosine ½(1 + cos πq) or sqrt 1 - √q.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import torch

KINDS = ("cosine", "wsd", "linear", "constant")
DECAY_SHAPES = ("linear", "cosine", "sqrt")


@dataclass(frozen=True)
class Schedule:
    """factor(step) for the 0-based optimizer step; a picklable callable for `LambdaLR`."""

    kind: str
    total_steps: int
    warmup_steps: int  # the caller converts a warmup fraction: round(fraction · total_steps)
    min_lr_ratio: float = 0.1  # floor, as a fraction of the peak LR
    decay_fraction: float = 0.2  # wsd only: last fraction of the run spent decaying
    decay_shape: str = "linear"  # wsd only: linear | cosine | sqrt

    def __post_init__(self):
        if self.kind not in KINDS:
            raise ValueError(f"schedule.kind: {self.kind!r} is not one of {', '.join(KINDS)}")
        if self.decay_shape not in DECAY_SHAPES:
            raise ValueError(f"schedule.decay_shape: {self.decay_shape!r} is not one of {', '.join(DECAY_SHAPES)}")
        if self.total_steps < 1:
            raise ValueError(f"schedule.total_steps: {self.total_steps} must be ≥ 1")
        if not 0 <= self.warmup_steps < self.total_steps:
            raise ValueError(f"schedule.warmup_steps: {self.warmup_steps} must be in "
                             f"[0, total_steps={self.total_steps})")
        for name in ("min_lr_ratio", "decay_fraction"):
            if not 0.0 <= getattr(self, name) <= 1.0:
                raise ValueError(f"schedule.{name}: {getattr(self, name)} must be in [0, 1]")
        if self.kind == "wsd" and self.decay_start < self.warmup_steps:
            raise ValueError(f"schedule.decay_fraction: {self.decay_fraction} starts the decay at step "
                             f"{self.decay_start}, inside the {self.warmup_steps} warmup steps")

    @property
    def decay_start(self) -> int:
        """First step of the wsd decay phase."""
        return self.total_steps - round(self.decay_fraction * self.total_steps)

    def __call__(self, step: int) -> float:
        if step < self.warmup_steps:
            return (step + 1) / (self.warmup_steps + 1)
        m = self.min_lr_ratio
        if self.kind == "constant":
            return 1.0
        if self.kind == "wsd":
            s = self.decay_start
            q = min(max((step - s) / max(1, self.total_steps - s), 0.0), 1.0)
            shape = {"linear": 1 - q, "cosine": 0.5 * (1 + math.cos(math.pi * q)), "sqrt": 1 - math.sqrt(q)}
            return m + (1 - m) * shape[self.decay_shape]
        p = min((step - self.warmup_steps) / max(1, self.total_steps - self.warmup_steps), 1.0)
        if self.kind == "cosine":
            return m + (1 - m) * 0.5 * (1 + math.cos(math.pi * p))
        return 1 - (1 - m) * p  # linear


def make_scheduler(optimizer: torch.optim.Optimizer, schedule: Schedule) -> torch.optim.lr_scheduler.LambdaLR:
    """LambdaLR applying `schedule` to every group; it sets lr = base · factor(0) right away.

    Its state_dict holds plain numbers (loads with weights_only=True); on resume build it on the
    resumed optimizer, then `load_state_dict`.
    """
    return torch.optim.lr_scheduler.LambdaLR(optimizer, lr_lambda=schedule)
