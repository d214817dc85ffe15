"""The width ladder as a fidelity: narrow widths are the cheap level of a multi-fidelity search.

Under μP the optimum of every width-free setting (LR, decay, β's, per-role multipliers) stays put as width grows
(Tensor Programs V), so a narrow proxy ranks settings the way a wider one does, at a fraction of its FLOPs. Two
ways to spend that, both charged at each width's cost per trial (its FLOPs: `trainer.flops`):

- `halving`: successive halving across widths (Jamieson & Talwalkar 2016; Li et al. 2018, "Hyperband", with
  width as the resource instead of steps). Rung 0 samples n₀ trials at the narrowest width; each next rung trains
  the best ⌈n/η⌉ of the rung below at the next width, as they are. Charged Σ_k n_k · cost(w_k).
- `seeded`: each rung is its own search (the spec's sampler) whose box is the region of the rung below's best
  `top` trials (their range per setting, widened by `margin` octaves for a log range, a fraction of the range
  otherwise; a categorical keeps the choices they took), its best trial enqueued first.

Today's `--warm-start` (the narrow study's best 3 enqueued first, then the full box) is `seeded` with no narrowing.
Each rung is an Optuna study in memory; `evaluate(width, params)` trains one trial (Optuna's params by name).
"""
from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import optuna
from optuna.trial import FrozenTrial, TrialState

from sweep.study.space import CategoricalParam, FixedParam, FloatParam, HalflifeParam, IntParam, Param, Space

Evaluate = Callable[[int, dict[str, Any]], float]


@dataclass
class Rung:
    width: int
    cost: float  # charged per trial at this width (e.g. its FLOPs)
    trials: list[FrozenTrial] = field(default_factory=list)
    promoted: list[int] = field(default_factory=list)  # numbers, in the rung below, of the trials enqueued here

    def charged(self) -> float:
        return len(self.trials) * self.cost

    def ranked(self) -> list[FrozenTrial]:
        """Complete trials, best first (ties by trial number)."""
        complete = [t for t in self.trials if t.state == TrialState.COMPLETE]
        return sorted(complete, key=lambda t: (t.value, t.number))


@dataclass
class Ladder:
    rungs: list[Rung]

    def charged(self) -> float:
        return sum(r.charged() for r in self.rungs)

    def best(self) -> FrozenTrial:
        """The best trial at the widest width."""
        return self.rungs[-1].ranked()[0]


def run_rung(rung: Rung, space: Space, sampler: optuna.samplers.BaseSampler, n: int, evaluate: Evaluate,
             enqueue: list[dict[str, Any]] = ()) -> None:
    """`n` trials at the rung's width, the `enqueue`d params first; they land in `rung.trials`."""
    study = optuna.create_study(sampler=sampler)
    for params in enqueue:
        study.enqueue_trial(params)
    study.optimize(lambda trial: evaluate(rung.width, space.suggest(trial)), n_trials=n)
    rung.trials = study.get_trials(deepcopy=False)


def halving(widths: list[int], costs: dict[int, float], n0: int, eta: float, space: Space,
            make_sampler: Callable[[Space], optuna.samplers.BaseSampler], evaluate: Evaluate) -> Ladder:
    """Successive halving across `widths` (narrowest first): n₀ trials at widths[0], then the best ⌈n/η⌉ of each
    rung trained at the next width."""
    if eta <= 1 or n0 < 1:
        raise ValueError(f"eta: {eta} must exceed 1 and n0: {n0} be at least 1")
    rungs = [Rung(w, costs[w]) for w in widths]
    run_rung(rungs[0], space, make_sampler(space), n0, evaluate)
    for below, rung in zip(rungs, rungs[1:], strict=False):
        keep = below.ranked()[:max(1, math.ceil(len(below.trials) / eta))]
        rung.promoted = [t.number for t in keep]
        run_rung(rung, space, make_sampler(space), len(keep), evaluate, [t.params for t in keep])
    return Ladder(rungs)


def seeded(widths: list[int], costs: dict[int, float], trials: list[int], top: int, space: Space,
           make_sampler: Callable[[Space], optuna.samplers.BaseSampler], evaluate: Evaluate,
           margin: float = 0.5, narrow: bool = True) -> Ladder:
    """`trials[k]` trials at widths[k]; each rung above the first searches the region of the rung below's best
    `top` (`narrow=False`: the whole box, today's warm start) with the best `top` enqueued first."""
    if len(trials) != len(widths):
        raise ValueError(f"trials: {len(trials)} counts for {len(widths)} widths; give one per width")
    rungs = [Rung(w, costs[w]) for w in widths]
    run_rung(rungs[0], space, make_sampler(space), trials[0], evaluate)
    for below, rung, n in zip(rungs, rungs[1:], trials[1:], strict=False):
        keep = below.ranked()[:top]
        rung.promoted = [t.number for t in keep]
        region = narrowed(space, keep, margin) if narrow else space
        run_rung(rung, region, make_sampler(region), n, evaluate, [t.params for t in keep])
    return Ladder(rungs)


def narrowed(space: Space, best: list[FrozenTrial], margin: float) -> Space:
    """The box the `best` trials span per searched setting, widened by `margin` (octaves on a log range, a
    fraction of the range otherwise) and clipped to the original box; a categorical keeps the choices taken."""
    params: dict[str, Param] = {}
    for path, p in space.params.items():
        name = p.optuna_name(path)
        seen = [t.params[name] for t in best if name in t.params]
        params[path] = p if isinstance(p, FixedParam) or not seen else _region(p, seen, margin)
    return Space(params)


def _region(p: Param, seen: list[Any], margin: float) -> Param:
    if isinstance(p, CategoricalParam):
        return p.model_copy(update={"choices": [c for c in p.choices if c in seen]})  # `when:` branches kept whole
    if getattr(p, "step", None) not in (None, 1):  # a stepped range keeps its lattice
        return p
    lo, hi = min(seen), max(seen)
    if p.log:
        lo, hi = lo * 2.0 ** -margin, hi * 2.0 ** margin
    else:
        pad = margin * (p.high - p.low) / 2
        lo, hi = lo - pad, hi + pad
    lo, hi = max(lo, p.low), min(hi, p.high)
    if isinstance(p, IntParam):
        return p.model_copy(update={"low": math.floor(lo), "high": math.ceil(hi)})
    assert isinstance(p, (FloatParam, HalflifeParam))
    return p.model_copy(update={"low": lo, "high": hi})
