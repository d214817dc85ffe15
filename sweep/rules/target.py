"""The full-size run a proxy's settings are carried to, and the rules a user picks for it: the one place their
defaults are written (the `sweep transfer` command reads them). Light: the command line imports it to start.
"""
from __future__ import annotations

from dataclasses import dataclass

from sweep.errors import InputError

PRIOR_CHOICES = ("published", "none")
BATCH_RULES = ("none", "linear", "sqrt", "noise", "fitted")
HORIZON_RULES = ("none", "fitted")
DEPTH_RULES = ("model", "fitted")
ROLE_RULES = ("kept", "fitted")
WARMUP_RULES = ("fraction", "tokens")
BETA2_RULES = ("halflife", "none")
WEIGHT_DECAY_RULES = ("tokens", "fraction", "none")
MIN_STEPS = 50  # a full run (or a ladder's rung) shorter than this measures its warmup, not its optimum


@dataclass(frozen=True)
class Target:
    """The full-size run: its width, and what else changes from the proxy (None: kept)."""

    width: int
    depth: int | None = None
    batch_size: int | None = None
    steps: int | None = None
    tokens: int | None = None
    batch_rule: str = "none"
    warmup: str = "fraction"
    beta2: str = "halflife"
    weight_decay: str = "tokens"
    horizon: str = "none"  # the LR across the token budget: kept, or the fitted law
    depth_rule: str = "model"  # the model's own depth rule (depth_alpha), or the fitted law
    role_rule: str = "kept"  # per-role multipliers kept (width-free under μP), or each by its measured width law
    extrapolate: bool = False  # apply a fitted law past EXTRAPOLATION× its measured range (flagged)
    prior: str = "published"  # fitted laws: the posterior over each law's published prior, or none (measured alone)

    def check(self) -> None:
        for flag, value, allowed in (("--batch-rule", self.batch_rule, BATCH_RULES),
                                     ("--horizon-rule", self.horizon, HORIZON_RULES),
                                     ("--depth-rule", self.depth_rule, DEPTH_RULES),
                                     ("--role-rule", self.role_rule, ROLE_RULES),
                                     ("--warmup-rule", self.warmup, WARMUP_RULES),
                                     ("--beta2-rule", self.beta2, BETA2_RULES),
                                     ("--wd-rule", self.weight_decay, WEIGHT_DECAY_RULES),
                                     ("--prior", self.prior, PRIOR_CHOICES)):
            if value not in allowed:
                raise InputError(f"{flag}: {value!r} is not one of {', '.join(allowed)}")
        for flag, value in (("--width", self.width), ("--depth", self.depth), ("--batch-size", self.batch_size),
                            ("--tokens", self.tokens)):
            if value is not None and value < 1:
                raise InputError(f"{flag}: must be a positive integer, got {value}")
        if self.steps is not None and self.tokens is not None:
            raise InputError("--steps, --tokens: give one, not both")
        if self.steps is not None and self.steps < MIN_STEPS:  # as `sweep plan` holds the full run's --tokens
            raise InputError(f"--steps: at least {MIN_STEPS} (a full run shorter than that measures its warmup, "
                             f"not its optimum), got {self.steps}")
