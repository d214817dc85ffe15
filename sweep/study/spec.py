"""The study spec (`studies/*.yaml`): what to search, on which base run, judged how.

    name: demo                       # the study's folder under the results root
    trials: 8                        # trials per (width, parametrization); `--trials` overrides
    run: {...}                       # a partial RunConfig: the base settings of every trial
    search: {optimizer.lr: {low: 1.0e-4, high: 0.1, log: true}, ...}   # see sweep/study/space.py
    objective: {metric: val_loss, last: 1}   # minimise the mean of the last k evaluations
    sampler: {name: tpe, seed: 0, options: {}}
    pruner: {name: hyperband, options: {}}
    seeds_per_trial: 1
    storage: null                    # default: sqlite:///ROOT/NAME/optuna.db
    storage_retry_s: 300             # how long workers wait for an unreachable storage before they stop
    slurm: {partition: gpu, gpus_per_node: 1, time: 60}   # `--backend slurm` settings; flags override
    ray: {address: null, gpus_per_trial: 0.5}             # `--backend ray` settings (sweep/cluster/settings.py)

Parsing checks the spec's shape: a bad key or a search path that is not a RunConfig field is one line naming
it (an `InputError`, exit 2). What its values make (the runs, the model, the storage, the folders) is checked
by the pre-flight (sweep/study/preflight.py) before anything is written.
"""
from __future__ import annotations

import hashlib
import json
import types
import typing
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, Field, ValidationError

from sweep.cluster.settings import WORKERS, section
from sweep.errors import InputError
from sweep.study.bounds import MAX_TRIALS
from sweep.study.space import HALFLIFE_FIELDS, CategoricalParam, FixedParam, HalflifeParam, Param, Space, parse_param
from sweep.study.storage import STORAGE_RETRY_S
from trainer import yaml_io
from trainer.config import Name, RunConfig, Strict, one_line

SAMPLERS = ("tpe", "gp", "cmaes", "random", "grid", "qmc")
PRUNERS = ("hyperband", "median", "wilcoxon", "none")
# set by the sweep itself, never searched: where results go, what they came from, the width and the seeds
NOT_SEARCHABLE = ("output", "provenance", "model.width", "model.parametrization", "seed")


class SamplerSpec(Strict):
    name: Literal[SAMPLERS] = "tpe"
    seed: int | None = 0
    options: dict[str, Any] = {}  # passed to the Optuna sampler (grid: `points` per float range)


class PrunerSpec(Strict):
    name: Literal[PRUNERS] = "hyperband"
    options: dict[str, Any] = {}  # passed to the Optuna pruner


class ObjectiveSpec(Strict):
    metric: Literal["val_loss"] = "val_loss"
    last: int = Field(1, ge=1)  # mean of the last k evaluations; 1: the final validation loss


SlurmSpec = section("slurm", WORKERS)  # `slurm:` and `ray:`: the workers' settings of sweep/cluster/settings.py
RaySpec = section("ray", WORKERS)


class StudySpec(Strict):
    name: Name
    trials: int = Field(20, ge=1, le=MAX_TRIALS)  # as `--trials` (sweep/study/bounds.py)
    run: dict[str, Any] = {}
    search: dict[str, Any] = Field(min_length=1)
    objective: ObjectiveSpec = ObjectiveSpec()
    sampler: SamplerSpec = SamplerSpec()
    pruner: PrunerSpec = PrunerSpec()
    seeds_per_trial: int = Field(1, ge=1, le=1000)
    storage: str | None = None
    storage_password_env: str | None = None
    storage_retry_s: float = Field(STORAGE_RETRY_S, gt=0)
    slurm: SlurmSpec = SlurmSpec()
    ray: RaySpec = RaySpec()

    def space(self) -> Space:
        return Space({path: parse_param(raw) for path, raw in self.search.items()})

    def spec_hash(self) -> str:
        """A hash of what shapes the trials' results (not how they are sampled, pruned, stored or mirrored)."""
        run = {k: v for k, v in self.run.items() if k != "logging"}  # trackers may be added to a running study
        content = {"run": run, "search": self.search, "objective": self.objective.model_dump(),
                   "seeds_per_trial": self.seeds_per_trial}
        return hashlib.sha256(json.dumps(content, sort_keys=True, default=str).encode()).hexdigest()[:12]


def load_spec(path: str | Path) -> StudySpec:
    """Read and validate a study spec; every error is one line naming the key (InputError)."""
    path = Path(path)
    try:
        text = yaml_io.read_file(path)
    except FileNotFoundError:
        raise InputError(f"spec: {path} does not exist") from None
    except yaml.YAMLError as err:
        raise InputError(f"spec: {path} is refused ({err})") from None
    try:
        raw = yaml_io.load(text)
    except yaml.YAMLError as err:
        raise InputError(f"spec: {path} is not valid YAML ({yaml_io.reason(err)})") from None
    if not isinstance(raw, dict):
        raise InputError(f"spec: {path} must be a mapping of keys (name, run, search, …)")
    return parse_spec(raw)


def parse_spec(raw: dict) -> StudySpec:
    try:
        spec = StudySpec.model_validate(raw)
    except ValidationError as err:
        raise InputError(one_line(err, StudySpec)) from None
    if "output" in spec.run:
        raise InputError("run.output: set by the sweep (results go under the study's folder); remove it")
    for path, raw_param in spec.search.items():
        check_search_path(path)
        try:
            param = parse_param(raw_param)
        except ValueError as err:
            raise InputError(f"search.{path}.{err}") from None
        check_halflife(path, param, f"search.{path}")
        for choice in getattr(param, "when", {}):
            for bpath, bparam in param.branch(choice).items():
                where = f"search.{path}.when.{choice}.{bpath}"
                if bpath in spec.search or bpath == path:
                    raise InputError(f"{where}: also searched at the top level; give it in one place")
                check_search_path(bpath, where)
                check_halflife(bpath, bparam, where)
    return spec


def check_halflife(path: str, param: Param, where: str) -> None:
    if isinstance(param, HalflifeParam) and path not in HALFLIFE_FIELDS:
        raise InputError(f"{where}: type halflife applies to {', '.join(HALFLIFE_FIELDS)} only")


def check_search_path(path: str, where: str | None = None) -> None:
    """A search key must name a RunConfig field (any key below a free-form `options` dict); `where`: the key as
    the spec has it (a branch's path sits below its categorical's `when`)."""
    where = where or f"search.{path}"
    for fixed in NOT_SEARCHABLE:
        if path == fixed or path.startswith(fixed + "."):
            raise InputError(f"{where}: set by the sweep, not searchable ({', '.join(NOT_SEARCHABLE)})")
    owner: type[BaseModel] = RunConfig
    parts = path.split(".")
    for i, part in enumerate(parts):
        fields = owner.model_fields
        if part not in fields:
            at = ".".join(parts[:i]) or "the top level"
            raise InputError(f"{where}: not a RunConfig field (at {at}: {', '.join(fields)})")
        annotation = fields[part].annotation
        if typing.get_origin(annotation) in (typing.Union, types.UnionType):  # an optional section (optimizer.lion)
            annotation = next(a for a in typing.get_args(annotation) if a is not type(None))
        last = i == len(parts) - 1
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            if last:
                raise InputError(f"{where}: a section, not a value; "
                                 f"name a field under it ({', '.join(annotation.model_fields)})")
            owner = annotation
        elif typing.get_origin(annotation) is dict:
            if last:
                raise InputError(f"{where}: name a key under it, e.g. {path}.output_mult")
            return  # free-form options; the model or data builder checks the key at pre-flight
        elif not last:
            raise InputError(f"{where}: {'.'.join(parts[:i + 1])} is a value, not a section")


def model_name(run: dict) -> str:
    """The model a (partial) RunConfig names, its default when it names none."""
    return run.get("model", {}).get("name", RunConfig.model_fields["model"].default.name)


def builders_named(spec: StudySpec) -> set[str]:
    """The model builders the spec names: its run.model.name and any searched choice of it."""
    named = {model_name(spec.run)}
    param = spec.space().params.get("model.name")
    if isinstance(param, (CategoricalParam, FixedParam)):
        named |= {str(v) for v in param.extremes()}
    return named


def check_builder_named(name: str, spec: StudySpec | None, where: str) -> None:
    """A builder import path (`package.module:function`) read from a study, which someone else may have
    written, is imported only when the spec the user passed names it too; a zoo name imports nothing."""
    from proxies.registry import ZOO

    if name in ZOO or (spec is not None and name in builders_named(spec)):
        return
    raise InputError(f"model.name: {where} names the builder {name!r}, which the spec you gave does not; a builder is "
                     "imported only when named in the spec on the command line (run.model.name)")
