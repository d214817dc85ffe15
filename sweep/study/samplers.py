"""The spec's `sampler:` as an Optuna sampler.

tpe (default): multivariate TPE (Falkner et al. 2018's joint density instead of one per parameter;
  it finds the lr × β × warmup interactions faster) with the constant liar, so workers sampling at
  the same time do not all pick the same point.
gp: Optuna's Gaussian-process sampler. cmaes: CMA-ES (floats and ints; categoricals fall back to
  random). random. qmc: scrambled Sobol points. grid: every combination of categorical choices,
  int ranges and stepped floats; an unstepped float range is cut into `options.points` (default 5)
  points, evenly in log space for a log range; a categorical with `when:` branches contributes each
  choice with every point of its own branch (a branch parameter exists only under its choice, so the
  grid is a union over choices, not a product with the other choices' ranges). `seed` seeds each of them.
"""
from __future__ import annotations

import itertools
import math
import warnings

import numpy as np
import optuna

from sweep.errors import InputError
from sweep.study.space import (
    CategoricalParam,
    FixedParam,
    FloatParam,
    HalflifeParam,
    IntParam,
    Param,
    Space,
    branch_name,
)
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
    """{Optuna name: values} of every searched parameter, branches included (the search space Optuna's grid
    sampler is given; the points a study visits are `grid_points`)."""
    points = spec.options.get("points", GRID_POINTS)
    return {name: grid_values(p, points) for name, p in space.searched().items()}


def grid_axes(spec: SamplerSpec, space: Space) -> list[list[dict]]:
    """The grid as axes of partial points: one per plain parameter ({name: value} per value), and one per
    categorical with branches ({name: choice, branch name: value, …} per choice and point of its branch)."""
    points = spec.options.get("points", GRID_POINTS)
    conditional = space.conditional()
    axes = []
    for path, param in space.params.items():
        if isinstance(param, FixedParam):
            continue
        name = param.optuna_name(path)
        if path not in conditional:
            axes.append([{name: value} for value in grid_values(param, points)])
            continue
        axis = []
        for choice in param.choices:
            branch = {branch_name(p.optuna_name(bpath), choice): p for bpath, p in param.branch(choice).items()
                      if not isinstance(p, FixedParam)}
            for values in itertools.product(*(grid_values(p, points) for p in branch.values())):
                axis.append({name: choice, **dict(zip(branch, values, strict=True))})
        axes.append(axis)
    return axes


def grid_points(spec: SamplerSpec, space: Space) -> list[dict]:
    """Every point of a grid sampler's grid, in order (none for the other samplers). Optuna's grid
    sampler draws an unvisited point per trial, and two workers drawing at once can draw the same."""
    if spec.name != "grid":
        return []
    return [{k: v for part in parts for k, v in part.items()} for parts in itertools.product(*grid_axes(spec, space))]


def grid_size(spec: SamplerSpec, space: Space) -> int | None:
    """How many points a grid sampler visits (None for the other samplers): a grid study's trial count."""
    if spec.name != "grid":
        return None
    return math.prod(len(axis) for axis in grid_axes(spec, space))
