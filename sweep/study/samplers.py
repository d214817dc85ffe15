"""The spec's `sampler:` as an Optuna sampler.

tpe (default): multivariate TPE (Falkner et al. 2018's joint density instead of one per parameter;
  it finds the lr × β × warmup interactions faster) with the constant liar, so workers sampling at
  the same time do not all pick the same point.
gp: Optuna's Gaussian-process sampler. cmaes: CMA-ES (floats and ints; categoricals fall back to
  random). random. qmc: scrambled Sobol points. grid: every combination of categorical choices,
  int ranges and stepped floats; an unstepped float range is cut into `options.points` (default 5)
  points, evenly in log space for a log range. `seed` seeds each of them.
"""
from __future__ import annotations

import itertools
import warnings

import numpy as np
import optuna

from sweep.errors import InputError
from sweep.study.space import CategoricalParam, FloatParam, HalflifeParam, IntParam, Param, Space
from sweep.study.spec import SamplerSpec

GRID_POINTS = 5


def make_sampler(spec: SamplerSpec, space: Space) -> optuna.samplers.BaseSampler:
    options = dict(spec.options)
    try:
        if spec.name == "tpe":
            return optuna.samplers.TPESampler(**{"multivariate": True, "constant_liar": True, "seed": spec.seed,
                                                 **options})
        if spec.name == "gp":
            return optuna.samplers.GPSampler(**{"seed": spec.seed, **options})
        if spec.name == "cmaes":
            return optuna.samplers.CmaEsSampler(**{"seed": spec.seed, **options})
        if spec.name == "random":
            return optuna.samplers.RandomSampler(**{"seed": spec.seed, **options})
        if spec.name == "qmc":
            with warnings.catch_warnings():  # experimental since Optuna 3; chosen knowingly
                warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
                return optuna.samplers.QMCSampler(**{"qmc_type": "sobol", "scramble": True, "seed": spec.seed,
                                                     **options})
        options.pop("points", None)
        return GridSampler(grid(spec, space), **{"seed": spec.seed, **options})
    except (TypeError, ValueError) as err:
        raise InputError(f"sampler.options: {spec.name} rejected them ({' '.join(str(err).split())})") from None


class GridSampler(optuna.samplers.GridSampler):
    """Optuna's grid sampler without its stop at the last point: `Study.stop` works only inside
    `optimize`, and the sweep already caps the trial count at the grid's size. The points are queued
    when the study is created (`grid_points`); this sampler only fills in if that was interrupted."""

    def after_trial(self, study, trial, state, values) -> None:
        pass


def grid_values(param: Param, points: int) -> list:
    if isinstance(param, CategoricalParam):
        return list(param.choices)
    if isinstance(param, IntParam):
        return list(range(param.low, param.high + 1, param.step))
    if isinstance(param, FloatParam) and param.step is not None:
        return [float(v) for v in np.arange(param.low, param.high + param.step / 2, param.step)]
    if not isinstance(points, int) or points < 1:
        raise InputError(f"sampler.options.points: must be a positive integer, not {points!r}")
    log = isinstance(param, (FloatParam, HalflifeParam)) and param.log
    space = np.geomspace if log else np.linspace
    return [float(v) for v in space(param.low, param.high, points)]


def grid(spec: SamplerSpec, space: Space) -> dict[str, list]:
    points = spec.options.get("points", GRID_POINTS)
    return {name: grid_values(p, points) for name, p in space.searched().items()}


def grid_points(spec: SamplerSpec, space: Space) -> list[dict]:
    """Every point of a grid sampler's grid, in order (none for the other samplers). Optuna's grid
    sampler draws an unvisited point per trial, and two workers drawing at once can draw the same."""
    if spec.name != "grid":
        return []
    axes = grid(spec, space)
    return [dict(zip(axes, values, strict=True)) for values in itertools.product(*axes.values())]


def grid_size(spec: SamplerSpec, space: Space) -> int | None:
    """How many points a grid sampler visits (None for the other samplers): a grid study's trial count."""
    if spec.name != "grid":
        return None
    return int(np.prod([len(values) for values in grid(spec, space).values()]))
