"""A model's size and cost on paper: parameters and trainer FLOPs per token, from a copy on the meta device.

FLOPs per token are the trainer's own count (trainer/flops.py: 6·N_matmul + 12·L·d·T), so that a plan prices a
run as the trainer measures it; the full run is also shown at Kaplan's C = 6·N·D (all parameters), the figure
budgets are usually quoted in.
"""
from __future__ import annotations

from dataclasses import dataclass

from proxies.meta import shapes_only
from proxies.registry import call_builder, resolve_builder
from sweep.errors import InputError
from sweep.study.spec import StudySpec
from sweep.study.trial import base_run
from trainer.config import ConfigError, RunConfig
from trainer.flops import flops_per_token


@dataclass(frozen=True)
class Shape:
    width: int
    depth: int
    params: int  # all parameters
    flops_per_token: float  # the trainer's count


class Sizer:
    """The spec's model at any width and depth, on paper; its data opened once for the vocabulary and sequence."""

    def __init__(self, spec: StudySpec, width: int):
        try:
            self.run = RunConfig.parse(base_run(spec, width, "mup"))
        except ConfigError as err:
            raise InputError(f"spec run.{err}") from None
        data = self.run.data
        source = data.open(self.run.seed)
        self.tokens_per_example = source.tokens_per_example
        self.options = {**source.model_options(), **self.run.model.options}
        self.seq_len = data.seq_len
        self._cache: dict[tuple[int, int], Shape] = {}

    def shape(self, width: int, depth: int | None = None) -> Shape:
        depth = depth or self.run.model.depth
        if (width, depth) not in self._cache:
            name = self.run.model.name
            with shapes_only():
                model = call_builder(resolve_builder(name), name, width, depth, "mup", self.options)
            self._cache[width, depth] = Shape(width, depth, sum(p.numel() for p in model.parameters()),
                                              float(flops_per_token(model, self.seq_len)))
        return self._cache[width, depth]

    def proxy_tokens(self) -> int:
        """The spec's run length in tokens (its steps × tokens per step, or its tokens)."""
        return self.run.total_steps(self.tokens_per_example) * self.run.batch_size * self.tokens_per_example

    def width_for(self, params: float, depth: int | None, quantum: int) -> int:
        """The width, a multiple of `quantum`, whose model has the parameter count nearest `params`."""
        low, high = 1, 1
        while self.shape(high * quantum, depth).params < params:
            low, high = high, high * 2
            if high * quantum > 2 ** 20:
                raise InputError(f"--params: {params:.3g} needs a width past {2 ** 20} at this depth")
        while high - low > 1:
            mid = (low + high) // 2
            low, high = (mid, high) if self.shape(mid * quantum, depth).params < params else (low, mid)
        return min((low * quantum, high * quantum), key=lambda w: abs(self.shape(w, depth).params - params))
