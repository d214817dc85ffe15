"""The spec's `pruner:` as an Optuna pruner. Intermediate values are validation losses reported at
each evaluation, at the training step they were measured, so the resource is training steps.

hyperband (default; Li et al. 2018): successive-halving brackets with rungs at multiples of the
  evaluation cadence: min_resource = eval.every, max_resource = the run's steps.
median: stop a trial whose loss is above the median of earlier trials at the same step, after
  5 finished trials and the first evaluation.
wilcoxon: the Wilcoxon signed-rank test between this trial's curve and the best trial's, paired at
  the same evaluation steps (p < 0.1): a pruner that reads the whole curve rather than one rung.
none: every trial runs its full budget.
`options` go to the Optuna pruner and override these defaults.
"""
from __future__ import annotations

import warnings

import optuna

from sweep.errors import InputError
from sweep.study.spec import PrunerSpec


def make_pruner(spec: PrunerSpec, eval_every: int, total_steps: int | None) -> optuna.pruners.BasePruner:
    options = dict(spec.options)
    try:
        if spec.name == "hyperband":
            defaults = {"min_resource": eval_every, "max_resource": total_steps or "auto", "reduction_factor": 3}
            return optuna.pruners.HyperbandPruner(**{**defaults, **options})
        if spec.name == "median":
            return optuna.pruners.MedianPruner(**{"n_startup_trials": 5, "n_warmup_steps": eval_every, **options})
        if spec.name == "wilcoxon":
            with warnings.catch_warnings():  # experimental in Optuna 4-5; chosen knowingly
                warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
                return optuna.pruners.WilcoxonPruner(**{"p_threshold": 0.1, "n_startup_steps": 2, **options})
        return optuna.pruners.NopPruner(**options)
    except (TypeError, ValueError) as err:
        raise InputError(f"pruner.options: {spec.name} rejected them ({' '.join(str(err).split())})") from None
