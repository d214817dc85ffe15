"""What `sweep plan` is asked to do: the target and the tuning budget (`cli.py` fills it from flags and reads its
defaults here). Light: the command line imports it to start."""
from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

from sweep.errors import InputError

SHARE = 0.05  # the tuning budget's default share of the full run's FLOPs (Tensor Programs V spent 7 % on GPT-3 6.7B)
GOAL = (1e-6, 100.0)  # octaves of LR at the target: the bounds plan.yaml is read back with (sweep/forecast/planfile.py)
MAX_FLOPS = 1e30  # ~1000× the largest training run to date; past it the share prints hundreds of digits


@dataclass(frozen=True)
class PlanRequest:
    spec: Path
    tokens: float  # a whole number (26e9 is one)
    width: int | None = None
    depth: int | None = None
    params: float | None = None
    batch_size: int | None = None
    share: float | None = None
    flops: float | None = None
    goal: float = 0.5  # octaves of LR at the target
    proxy_width: int | None = None
    out: Path | None = None

    def check(self) -> None:
        if (self.width is None) == (self.params is None):
            raise InputError("--width, --params: give one (the full run's width, or its parameter count)")
        if self.share is not None and self.flops is not None:
            raise InputError("--share, --flops: give one budget, not both")
        for flag, value in (("--tokens", self.tokens), ("--width", self.width), ("--depth", self.depth),
                            ("--params", self.params), ("--batch-size", self.batch_size), ("--flops", self.flops),
                            ("--goal", self.goal), ("--proxy-width", self.proxy_width)):
            if value is not None and not (math.isfinite(value) and value > 0):
                raise InputError(f"{flag}: must be a positive number, got {value}")
        if not GOAL[0] <= self.goal <= GOAL[1]:  # a plan `sweep verify --plan` refuses was written (tests/fuzz)
            raise InputError(f"--goal: the LR's 95 % half-width at the target, {GOAL[0]:g} to {GOAL[1]:g} octaves, "
                             f"got {self.goal:g}")
        if not float(self.tokens).is_integer():
            raise InputError(f"--tokens: a whole number of tokens, got {self.tokens}")
        if self.flops is not None and self.flops > MAX_FLOPS:
            raise InputError(f"--flops: at most {MAX_FLOPS:.0e} (a tuning budget; a toy target's may pass its full "
                             f"run's), got {self.flops:.3g}")
        if self.share is not None and not 0 < self.share <= 1:
            raise InputError(f"--share: a fraction of the full run's FLOPs in (0, 1], got {self.share}")
        if self.width is not None and self.proxy_width is not None and self.proxy_width >= self.width:
            raise InputError(f"--proxy-width: narrower than the full run's width {self.width}, got {self.proxy_width}")
