"""The axis `sweep verify` runs its grid along: `--across AXIS=v1,v2,…`.

- `width` (the default, `--widths`): μP's axis; one study per width and parametrization.
- `batch_size`: the token budget of the base run held, so the steps change (the optimum at a fixed budget); with
  AdamW, β₁, β₂ and ε move with the batch by the SDE rule (Malladi et al. 2022), as `sweep transfer --batch-rule
  fitted` moves them: a law is measured on the runs it is then applied to.
- `tokens` or `steps`: the run's length, the batch held (the horizon).
- `depth`: `model.depth`, under whatever depth rule the spec's model has (`model.options.depth_alpha`).
- any other RunConfig path with positive values (e.g. `model.options.block_size`), set as it is.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from sweep.errors import InputError
from sweep.study.bounds import check_list
from sweep.study.space import set_path
from sweep.study.spec import check_search_path
from trainer.config import MAX_BATCH, RunConfig

PATHS = {"width": "model.width", "depth": "model.depth", "batch_size": "batch_size", "tokens": "tokens",
         "steps": "steps"}
INTEGER = {"width", "depth", "batch_size", "tokens", "steps"}


@dataclass(frozen=True)
class Axis:
    name: str  # width, depth, batch_size, tokens, steps or a RunConfig path; the points' column
    values: tuple[float, ...]  # sorted, distinct, positive

    @property
    def path(self) -> str:
        return PATHS.get(self.name, self.name)

    def apply(self, run: dict, at: float, base_tokens: int) -> dict:
        """The base run at this axis value (width is set by the study, not here; AdamW's moments across batch by
        `moved_moments`)."""
        if self.name == "width":
            return run
        if self.name == "batch_size":
            run = {**set_path(run, "batch_size", int(at)), "steps": None, "tokens": base_tokens}
        elif self.name in ("tokens", "steps"):
            run = {**run, "steps": None, "tokens": None, self.name: int(at)}
        else:
            # a builder option takes a whole value as the int a spec's YAML would give it (block_size, n_head)
            whole = self.name in INTEGER or (self.path.startswith("model.options.") and float(at).is_integer())
            run = set_path(run, self.path, int(at) if whole else at)
        return run


def sde_adam_moments(beta1: float, beta2: float, eps: float, kappa: float) -> tuple[float, float, float]:
    """The square-root rule's moments alone, (1 − κ(1 − β₁), 1 − κ(1 − β₂), ε/√κ): Adam's SDE keeps its EMAs'
    timescales in examples and ε against the gradient noise's √v ∝ 1/√κ whatever sets the LR (Malladi et al. 2022,
    §4). Raises ValueError when a β' leaves (0, 1)."""
    b1, b2 = 1 - kappa * (1 - beta1), 1 - kappa * (1 - beta2)
    for name, before, after in (("beta1", beta1, b1), ("beta2", beta2, b2)):
        if not 0 < after < 1:
            limit = 1 / (1 - before)
            raise ValueError(f"κ = {kappa:g} makes {name} = 1 − κ(1 − {before:g}) = {after:.4g}, outside (0, 1); "
                             f"the SDE rule holds only for κ < {limit:.4g} (Malladi et al. 2022)")
    return b1, b2, eps / math.sqrt(kappa)


def moved_moments(run: dict, base: RunConfig, kappa: float) -> dict:
    """AdamW's (β₁, β₂, ε) at κ× the base batch: (1 − κ(1 − β₁), 1 − κ(1 − β₂), ε/√κ) (`sde_adam_moments`)."""
    opt = base.optimizer
    if opt.name != "adamw" or kappa == 1 or not 1 <= run["batch_size"] <= MAX_BATCH:  # else the run refuses it
        return run
    try:
        moments = sde_adam_moments(opt.beta1, opt.beta2, opt.eps, kappa)
    except ValueError as err:
        raise InputError(f"AdamW's moments at this batch: {err}") from None
    for path, value in zip(("optimizer.beta1", "optimizer.beta2", "optimizer.eps"), moments, strict=True):
        run = set_path(run, path, value)
    return run


def parse_axis(text: str) -> Axis:
    """`AXIS=v1,v2,…` → Axis; an InputError names what is wrong."""
    name, sep, listed = text.partition("=")
    name = name.strip()
    if not sep or not name:
        raise InputError(f"--across: {text!r} is not AXIS=v1,v2,… (e.g. batch_size=8,16,32)")
    if name not in PATHS:
        try:
            check_search_path(name)
        except InputError as err:
            why = str(err).removeprefix(f"search.{name}: ")
            raise InputError(f"--across: {name!r} is not an axis ({why}; the named axes: {', '.join(PATHS)})") from None
    try:
        given = [float(v) for v in listed.split(",") if v.strip()]
    except ValueError:
        raise InputError(f"--across {name}: {listed[:80]!r} is not a comma-separated list of numbers") from None
    values = sorted(set(given))
    if len(values) < len(given):  # a typo (16,16,32 for 16,32,64) would be run as a shorter ladder in silence
        twice = next(v for v in given if given.count(v) > 1)
        raise InputError(f"--across {name}: each value once, got {listed[:80]!r} ({twice:g} more than once)")
    check_list(f"--across {name}", values)
    if len(values) < 2:
        raise InputError(f"--across {name}: at least two distinct values are needed for a law, got {listed!r}")
    if any(not v > 0 or v == float("inf") for v in values):
        raise InputError(f"--across {name}: values must be positive and finite, got {listed!r}")
    if name in INTEGER and any(v != int(v) for v in values):
        raise InputError(f"--across {name}: values must be whole numbers, got {listed!r}")
    return Axis(name, tuple(values))


def label(at: Any) -> str:
    """An axis value as written in names and tables: 16, not 16.0."""
    return f"{int(at)}" if float(at) == int(at) else f"{at:g}"
