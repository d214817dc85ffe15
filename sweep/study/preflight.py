"""Pre-flight: everything about a sweep that can be wrong is found here, before anything is written.

The spec (parsed by sweep/study/spec.py) is checked as the RunConfigs its trials would get: each searched value
at its extremes (at every point of a small int range), every other one under each choice of a categorical
(`check_run`); the data is opened and the model built once at the proxy width, its roles checked, and the model
built on the meta device at each point of a searched model setting (`check_points`); the sampler's and pruner's
options, the storage URL's form, and the study's folder (and a SQLite or journal storage's) must be writable
(`prepare`).
"""
from __future__ import annotations

import time
from typing import Any

from torch import nn

from proxies.parametrization import param_rules, scale_init
from proxies.registry import ModelError, build_model, count_parameters
from proxies.resources import BYTES_PER_PARAMETER, check_fits
from sweep.errors import InputError
from sweep.paths import check_writable, default_storage, inside_root, results_root
from sweep.study.pruners import make_pruner
from sweep.study.samplers import grid_size, make_sampler
from sweep.study.space import CategoricalParam, FixedParam, HalflifeParam, Param, set_path
from sweep.study.spec import StudySpec
from sweep.study.storage import storage_url
from sweep.study.study import SweepJob
from sweep.study.trial import base_run
from trainer.config import ConfigError, RunConfig
from trainer.optim import check_roles as check_model_roles
from trainer.resolve import resolve
from trainer.tracking import check_trackers

# searched fields that change a run's length, so Hyperband's max_resource is read off the first trial
LENGTH_FIELDS = ("steps", "tokens", "batch_size", "data.")
DECAY_EMBEDDINGS = "optimizer.decay_embeddings"  # a searched choice decides which role settings change anything


def check_model_points(spec: StudySpec, cfg: RunConfig, data_options: dict) -> None:
    """Every checked point (`Param.points`) of a searched model setting builds, and fits in memory: a head count
    that does not divide the width, or a depth too deep, is refused naming its search key. Counted on the meta
    device (no memory); one setting varies at a time, the others at the base run's values."""
    model = cfg.model
    base = {"name": model.name, "depth": model.depth, "options": {**data_options, **model.options}}
    for path, param in spec.space().params.items():
        if not path.startswith("model."):
            continue
        for value in param.points():
            point = set_path(base, path.removeprefix("model."), value)
            try:
                count = count_parameters(point["name"], model.width, point["depth"], model.parametrization,
                                         **point["options"])
            except ModelError as err:
                raise InputError(f"search.{path}: {value!r} is rejected by the model ({err})") from None
            check_fits(count * BYTES_PER_PARAMETER, f"{value!r} gives {count:,} parameters, which", f"search.{path}")


def check_roles(spec: StudySpec, cfg: RunConfig, model: nn.Module) -> None:
    """Every role the run or the search gives a multiplier (`optimizer.roles.<role>.…`, `model.init.<role>`) is one
    the model has, a decay multiplier's role has a decayed parameter, and an init multiplier's role is not all
    zeros: each would change nothing. A searched multiplier counts as set (its value is not known yet). When the
    search draws `optimizer.decay_embeddings`, each choice is checked with the multipliers it can be drawn with."""
    space = spec.space()
    decay = space.params.get(DECAY_EMBEDDINGS)
    branches = {path: cat for path, cat in space.conditional().items() if path != DECAY_EMBEDDINGS}
    paths = [*space.params, *(path for cat in branches.values() for choice in cat.choices
                              for path in cat.branch(choice))]
    if decay is None:
        check_role_paths(cfg, model, paths, cfg.optimizer.decay_embeddings or DECAY_EMBEDDINGS in paths)
        return
    for choice in decay.extremes():  # every choice of a categorical, the value of a fixed one
        drawn = f" (with {DECAY_EMBEDDINGS}: {str(choice).lower()}, which the search draws)"
        branch = list(decay.branch(choice)) if isinstance(decay, CategoricalParam) else []
        check_role_paths(cfg, model, [*paths, *branch], bool(choice), drawn)


def check_role_paths(cfg: RunConfig, model: nn.Module, paths: list[str], decay_embeddings: bool,
                     drawn: str = "") -> None:
    """`check_roles` for the run's multipliers and the searched `paths`, embeddings decayed or not."""
    roles = cfg.optimizer.roles.given()
    inits = set(cfg.model.init.given())
    for path in paths:
        if path.startswith("model.init."):
            inits.add(path.split(".")[2])
        elif path.startswith("optimizer.roles.") and path.count(".") == 3:
            role, field = path.split(".")[2:]
            lr, wd = roles.get(role, (1.0, 1.0))
            roles[role] = (2.0 if field == "lr_mult" else lr, 2.0 if field == "weight_decay_mult" else wd)
    try:
        check_model_roles(roles, param_rules(model, decay_embeddings=decay_embeddings))
        scale_init(model, dict.fromkeys(inits, 1.0))
    except ValueError as err:  # the message names the role's path
        raise InputError(f"{err}{drawn}") from None


def check_run(spec: StudySpec, base: dict, tokens_per_step: int | None = None) -> None:
    """Every checked point of every searched range (`Param.points`: the extremes, every point of a small int
    range) must make a valid RunConfig (ConfigError → InputError). Each choice of a categorical is checked with
    its `when:` branch set (at its first points), and every other parameter at its points under that choice (another
    categorical at each choice with its branch): only valid combinations can be sampled, pairwise."""
    try:
        check_trackers(RunConfig.parse(base))
    except ConfigError as err:
        raise InputError(f"run.{err}") from None
    space = spec.space()
    categoricals = {path: p for path, p in space.params.items() if isinstance(p, CategoricalParam)}
    check_values({path: p for path, p in space.params.items() if path not in categoricals}, base, "search",
                 tokens_per_step)
    for path, cat in categoricals.items():
        chosen = {choice: check_choice(path, choice, cat, base, tokens_per_step) for choice in cat.choices}
        for other_path, other in space.params.items():
            if other_path != path:
                check_under_choices(path, chosen, other_path, other, tokens_per_step)


def check_choice(path: str, choice: Any, cat: CategoricalParam, base: dict, tokens_per_step: int | None,
                 context: str = "") -> dict:
    """One choice of a categorical with its branch on `base`; returns the run with both set."""
    chosen = check_branch(path, choice, cat.branch(choice), base, tokens_per_step, context)
    check_values({path: FixedParam(value=choice)}, chosen, "search", tokens_per_step, context)
    return chosen


def check_under_choices(path: str, chosen: dict[Any, dict], other_path: str, other: Param,
                        tokens_per_step: int | None) -> None:
    """`other` at its points (a categorical: each choice with its branch) under each choice of the categorical at
    `path` (`chosen`: choice → the run with it set); refused under some, it belongs in the others' `when:`."""
    refused = {}
    for choice, run in chosen.items():
        context = f" with {path} {choice}"
        try:
            if isinstance(other, CategoricalParam):
                for other_choice in other.choices:
                    check_choice(other_path, other_choice, other, run, tokens_per_step, context)
            else:
                check_values({other_path: other}, run, "search", tokens_per_step, context)
        except InputError as err:
            refused[choice] = err
    if refused:
        readers = ", ".join(f"{choice}: …" for choice in chosen if choice not in refused)
        hint = f"move it under when: {{{readers}}}" if readers else f"no choice of {path} takes it"
        raise InputError(f"{next(iter(refused.values()))}; {hint}")


def check_branch(path: str, choice: Any, branch: dict[str, Param], base: dict, tokens_per_step: int | None,
                 context: str = "") -> dict:
    """Each branch parameter at its points with the choice and the branch's other parameters set (at their
    first points); returns the base with all of them set."""
    firsts = {bpath: points(bparam, tokens_per_step)[0] for bpath, bparam in branch.items()}

    def with_values(values: dict[str, Any]) -> dict:
        run = set_path(base, path, choice)
        for bpath, value in values.items():
            run = set_path(run, bpath, value)
        return run

    for bpath, bparam in branch.items():
        others = with_values({p: v for p, v in firsts.items() if p != bpath})
        check_values({bpath: bparam}, others, f"search.{path}.when.{choice}", tokens_per_step, context)
    return with_values(firsts)


def points(param: Param, tokens_per_step: int | None) -> list[Any]:
    """The RunConfig values checked for one parameter (`Param.points`, a half-life's mapped to β)."""
    if isinstance(param, HalflifeParam):
        return [param.beta(v, tokens_per_step or 1) for v in param.points()]
    return param.points()


def check_values(params: dict[str, Param], base: dict, where: str, tokens_per_step: int | None,
                 context: str = "") -> None:
    """Each parameter at each of its `points` on `base` parses as a RunConfig."""
    for path, param in params.items():
        for value in points(param, tokens_per_step):
            try:
                RunConfig.parse(set_path(base, path, value))
            except ConfigError as err:
                raise InputError(f"{where}.{path}: {value!r} is rejected by the RunConfig{context} ({err})") from None


def check_points(spec: StudySpec, base: dict) -> tuple[RunConfig, int]:
    """The study's base run (`base_run` at one width) parses, its data opens, and the points the search can reach are
    ones the run and the model take (`check_run`, `check_roles`, `check_model_points`); the resolved run and its
    tokens per example."""
    try:
        cfg = resolve(RunConfig.parse(base))
    except ConfigError as err:
        raise InputError(f"run.{err}") from None
    data = cfg.data.open(cfg.seed)
    check_run(spec, base, tokens_per_step=cfg.batch_size * data.tokens_per_example)
    options = {path.removeprefix("model.options."): p.points()[0]
               for path, p in spec.space().params.items() if path.startswith("model.options.")}
    model = build_model(cfg.model.name, cfg.model.width, cfg.model.depth, cfg.model.parametrization,
                        **{**data.model_options(), **cfg.model.options, **options})
    check_roles(spec, cfg, model)
    check_model_points(spec, cfg, data.model_options())
    return cfg, data.tokens_per_example


def prepare(spec: StudySpec, *, width: int | None, parametrization: str | None, trials: int | None,
            storage: str | None, password_env: str | None, timeout_min: float | None = None,
            root: str | None = None) -> SweepJob:
    """Validate a sweep of `spec` at one width and return its job; an InputError names what is wrong."""
    width = width if width is not None else spec.run.get("model", {}).get("width")
    if width is None:
        raise InputError("--width: required (or set run.model.width in the spec)")
    if width < 1:
        raise InputError(f"--width: must be a positive integer, got {width}")
    parametrization = parametrization or spec.run.get("model", {}).get("parametrization", "mup")
    if parametrization not in ("mup", "sp"):
        raise InputError(f"--parametrization: {parametrization!r} is not one of mup, sp")
    if timeout_min is not None and timeout_min <= 0:
        raise InputError(f"--timeout: must be a positive number of minutes, got {timeout_min}")

    cfg, tokens_per_example = check_points(spec, base_run(spec, width, parametrization))
    searched = [path for path, p in spec.space().params.items() if not isinstance(p, FixedParam)]
    changes_length = any(path.startswith(LENGTH_FIELDS) for path in searched)
    total_steps = None if changes_length else cfg.total_steps(tokens_per_example)
    make_sampler(spec.sampler, spec.space())  # their options are checked here, before anything is written
    make_pruner(spec.pruner, cfg.eval.every, total_steps)
    n_trials = trials or spec.trials
    if trials is not None and trials < 1:
        raise InputError(f"--trials: must be at least 1, got {trials}")
    points = grid_size(spec.sampler, spec.space())
    if points is not None:
        n_trials = min(n_trials, points)
    root_path = results_root(root)
    url = storage_url(storage or spec.storage, password_env or spec.storage_password_env,
                      default_sqlite=default_storage(root_path, spec.name), retry_s=spec.storage_retry_s)
    inside_root(root_path / spec.name, root_path, "results root ($SWEEP_ROOT)")  # never a link out of it
    check_writable(root_path / spec.name, "results root ($SWEEP_ROOT)")
    if url.file() is not None:
        check_writable(url.file().parent, "storage")
    return SweepJob(spec=spec, width=width, parametrization=parametrization, storage=url, root=str(root_path.resolve()),
                    n_trials=n_trials, eval_every=cfg.eval.every,
                    total_steps=total_steps,
                    tokens_per_example=tokens_per_example,
                    deadline=time.time() + 60 * timeout_min if timeout_min else None)
