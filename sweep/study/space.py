"""The search space: dotted RunConfig paths, each a float, an int, a categorical, a fixed value or a
β half-life, and how a sampled point becomes a RunConfig.

    search:
      optimizer.lr: {low: 1.0e-4, high: 0.1, log: true}         # float (log or linear, optional step)
      optimizer.weight_decay: {low: 0.0, high: 0.3}
      batch_size: {type: int, low: 8, high: 32, step: 8}          # int
      model.options.zero_readout: {choices: [true, false]}        # categorical
      optimizer.eps: 1.0e-8                                       # fixed (or {value: 1.0e-8})
      optimizer.beta2: {type: halflife, unit: tokens, low: 2.0e4, high: 2.0e6}

Conditional: a categorical's `when:` gives, per choice, parameters sampled only when that choice is drawn
(Optuna's define-by-run: the choice is suggested first, then its branch), e.g. the optimizer and its own box:

      optimizer.name:
        choices: [adamw, lion, muon]
        when:
          adamw: {optimizer.lr: {low: 1.0e-3, high: 0.1, log: true}}
          lion: {optimizer.lr: {low: 1.0e-4, high: 1.0e-2, log: true}, optimizer.lion.beta2: {low: 0.95, high: 0.995}}
          muon: {optimizer.lr: {low: 1.0e-3, high: 0.1, log: true}, optimizer.muon.momentum: {low: 0.85, high: 0.98}}

A branch parameter's Optuna name is `PATH[CHOICE]` (`optimizer.lr[lion]`), so each choice's range is its own
distribution; its value goes to PATH. A branch holds plain parameters (no `when:` inside).

Half-life (for a β of Adam or SGD momentum): an EMA with coefficient β gives a gradient h steps old
the weight β^h, so its half-life is the h with β^h = 1/2, i.e. β = 2^(-1/h). Optuna samples h
(log-uniform by default, where β's useful range lives: β2 = 0.9, 0.95, 0.99, 0.999 are h = 6.6,
13.5, 69, 693 steps). With `unit: tokens`, h_steps = h_tokens / (batch_size × tokens per example),
so the same spec keeps the averaging horizon when the batch changes. The Optuna parameter is
named `PATH.halflife_steps` or `PATH.halflife_tokens`; the β it maps to is recorded on the trial.
"""
from __future__ import annotations

import math
import sys
from typing import Any, Literal

import optuna
from pydantic import Field, ValidationError, model_validator

from sweep.study.bounds import INT_MAX, shown
from trainer import yaml_io
from trainer.config import Strict, one_line

HALFLIFE_FIELDS = ("optimizer.beta1", "optimizer.beta2", "optimizer.momentum")  # EMA coefficients
LATTICE_POINTS = 256  # an int range with at most this many points is checked at every point, not only its ends


class Param(Strict):

    def optuna_name(self, path: str) -> str:
        return path

    def extremes(self) -> list[Any]:
        """The ends of the range (every choice of a categorical)."""
        raise NotImplementedError

    def points(self) -> list[Any]:
        """The values checked before a sweep starts, so that every sampled point gives a valid run: the
        extremes, or every point of a small int range (a head count must divide the width, a batch the
        accumulation: a rule on the lattice that the ends alone do not test)."""
        return self.extremes()

    def suggest(self, trial: optuna.Trial, name: str) -> Any:
        raise NotImplementedError

    def contains(self, value: Any) -> bool:
        raise NotImplementedError


class FloatParam(Param):
    type: Literal["float"] = "float"
    low: float
    high: float
    log: bool = False
    step: float | None = Field(None, gt=0)

    @model_validator(mode="after")
    def _range(self) -> FloatParam:
        check_range(self.low, self.high, self.log)
        if self.log and self.step is not None:
            raise ValueError("step: not allowed with log: true")
        return self

    def suggest(self, trial: optuna.Trial, name: str) -> float:
        return trial.suggest_float(name, self.low, self.high, log=self.log, step=self.step)

    def contains(self, value: Any) -> bool:
        return isinstance(value, (int, float)) and not isinstance(value, bool) and self.low <= value <= self.high

    def extremes(self) -> list[Any]:
        return [self.low, self.high]


class IntParam(Param):
    type: Literal["int"]
    low: int
    high: int
    log: bool = False
    step: int = Field(1, ge=1)

    @model_validator(mode="after")
    def _range(self) -> IntParam:
        check_range(self.low, self.high, self.log)
        if max(abs(self.low), abs(self.high)) > INT_MAX:  # Optuna and numpy hold it as a float or an int64
            raise ValueError(f"low/high: integers of at most 2^53 in size (got {shown(self.low)}, {shown(self.high)})")
        if self.log and "step" in self.model_fields_set:
            raise ValueError("step: not allowed with log: true (a log int range is sampled in steps of 1)")
        return self

    def suggest(self, trial: optuna.Trial, name: str) -> int:
        return trial.suggest_int(name, self.low, self.high, log=self.log, step=self.step)

    def contains(self, value: Any) -> bool:
        return isinstance(value, int) and not isinstance(value, bool) and self.low <= value <= self.high

    def extremes(self) -> list[Any]:
        return [self.low, self.high]

    def points(self) -> list[Any]:
        lattice = range(self.low, self.high + 1, self.step)
        return list(lattice) if len(lattice) <= LATTICE_POINTS else [lattice[0], lattice[-1]]


class CategoricalParam(Param):
    type: Literal["categorical"] = "categorical"
    choices: list[bool | int | float | str | None] = Field(min_length=1)
    when: dict[str, dict[str, Any]] = {}  # choice → {RunConfig path: parameter}, sampled only with that choice

    @model_validator(mode="after")
    def _one_type(self) -> CategoricalParam:
        """Choices of one type (numbers, booleans or strings; null allowed beside them): `[1, "1", true]` is a
        typo that Optuna would sample as three values of three types."""
        kinds = {"boolean" if isinstance(c, bool) else "string" if isinstance(c, str) else "number"
                 for c in self.choices if c is not None}
        if len(kinds) > 1:
            mixed = ", ".join(sorted(kinds))
            raise ValueError(f"choices: mix {mixed}; give choices of one type (null allowed beside them)")
        return self

    @model_validator(mode="after")
    def _distinct(self) -> CategoricalParam:
        """Each choice once: a repeated one would be drawn twice as often, and a grid would visit it twice."""
        repeated = [c for i, c in enumerate(self.choices) if c in self.choices[:i]]
        if repeated:
            raise ValueError(f"choices: {repeated[0]!r} is given twice; give each choice once")
        return self

    @model_validator(mode="after")
    def _branches_of_choices(self) -> CategoricalParam:
        for choice, branch in self.when.items():
            if choice not in map(str, self.choices):
                raise ValueError(f"when.{choice}: not one of the choices ({', '.join(map(str, self.choices))})")
            for path, raw in branch.items():
                if isinstance(raw, dict) and "when" in raw:
                    raise ValueError(f"when.{choice}.{path}.when: a branch holds plain parameters, not another when")
                try:
                    parse_param(raw)
                except ValueError as err:
                    raise ValueError(f"when.{choice}.{path}.{err}") from None
        return self

    def branch(self, choice: Any) -> dict[str, Param]:
        """{path: Param} sampled when `choice` is drawn."""
        return {path: parse_param(raw) for path, raw in self.when.get(str(choice), {}).items()}

    def suggest(self, trial: optuna.Trial, name: str) -> Any:
        return trial.suggest_categorical(name, self.choices)

    def contains(self, value: Any) -> bool:
        return value in self.choices

    def extremes(self) -> list[Any]:
        return list(self.choices)


class FixedParam(Param):
    type: Literal["fixed"] = "fixed"
    value: Any

    def extremes(self) -> list[Any]:
        return [self.value]


class HalflifeParam(Param):
    """β = 2^(-1/h), h sampled in steps or tokens (see the module docstring)."""

    type: Literal["halflife"]
    unit: Literal["steps", "tokens"] = "steps"
    low: float = Field(gt=0)
    high: float = Field(gt=0)
    log: bool = True

    @model_validator(mode="after")
    def _range(self) -> HalflifeParam:
        check_range(self.low, self.high, self.log)
        return self

    def optuna_name(self, path: str) -> str:
        return f"{path}.halflife_{self.unit}"

    def suggest(self, trial: optuna.Trial, name: str) -> float:
        return trial.suggest_float(name, self.low, self.high, log=self.log)

    def contains(self, value: Any) -> bool:
        return isinstance(value, (int, float)) and not isinstance(value, bool) and self.low <= value <= self.high

    def beta(self, halflife: float, tokens_per_step: int) -> float:
        steps = halflife / tokens_per_step if self.unit == "tokens" else halflife
        return 2.0 ** (-1.0 / steps)

    def extremes(self) -> list[Any]:
        return [self.low, self.high]  # mapped to β by `Space.extreme_values`



def check_range(low: float, high: float, log: bool) -> None:
    if not (math.isfinite(low) and math.isfinite(high)):
        raise ValueError(f"low/high: must be finite numbers (got {low}, {high})")
    if low > high:
        raise ValueError(f"low: {low} is above high {high}")
    if log and low <= 0:
        raise ValueError(f"low: a log range needs low > 0 (got {low})")
    for name, value in (("low", low), ("high", high)):
        if 0 < abs(value) < sys.float_info.min:  # a subnormal: the storage gives it back as 0 (a log range's low)
            raise ValueError(f"{name}: 0 or at least {sys.float_info.min:.3g} in size (got {value})")


def param_kind(raw: Any) -> str:
    """Which parameter a raw YAML value describes: a scalar is fixed; `choices` categorical; else by `type`."""
    if not isinstance(raw, dict):
        return "fixed"
    if "type" in raw:
        return raw["type"]
    if "choices" in raw:
        return "categorical"
    if "value" in raw:
        return "fixed"
    return "float"


PARAM_TYPES = {"float": FloatParam, "int": IntParam, "categorical": CategoricalParam, "fixed": FixedParam,
               "halflife": HalflifeParam}


def parse_param(raw: Any) -> Param:
    """A raw `search:` value → its Param; a ValueError is one line `field: what is wrong`."""
    kind = param_kind(raw)
    if kind not in PARAM_TYPES:
        raise ValueError(f"type: {kind!r} is not one of {', '.join(PARAM_TYPES)}")
    if kind == "fixed" and not isinstance(raw, dict):
        raw = {"value": raw}
    try:
        return PARAM_TYPES[kind].model_validate(raw)
    except ValidationError as err:
        raise ValueError(one_line(err, PARAM_TYPES[kind])) from None


def set_path(tree: dict, path: str, value: Any) -> dict:
    """A copy of the nested dict `tree` with `a.b.c` set to value (missing levels created)."""
    head, _, rest = path.partition(".")
    out = dict(tree)
    out[head] = set_path(dict(out.get(head) or {}), rest, value) if rest else value
    return out


def get_path(tree: dict, path: str, default: Any = None) -> Any:
    for part in path.split("."):
        if not isinstance(tree, dict) or part not in tree:
            return default
        tree = tree[part]
    return tree


def value_of(p: Param, path: str, name: str, params: dict[str, Any], tokens_per_step: int) -> Any:
    """The RunConfig value of one parameter: fixed, β from a sampled half-life, or the sampled value."""
    if isinstance(p, FixedParam):
        return p.value
    if isinstance(p, HalflifeParam):
        return p.beta(params[name], tokens_per_step)
    return params[name]


def branch_name(name: str, choice: Any) -> str:
    """The Optuna name of a branch parameter: its own name, then the choice it belongs to."""
    return f"{name}[{choice}]"


class Space:
    """The parsed `search:` section: {RunConfig path: Param}, categoricals with their `when:` branches."""

    def __init__(self, params: dict[str, Param]):
        self.params = params

    def conditional(self) -> dict[str, CategoricalParam]:
        """The categoricals with branches, by path."""
        return {path: p for path, p in self.params.items() if isinstance(p, CategoricalParam) and p.when}

    def searched(self) -> dict[str, Param]:
        """{Optuna parameter name: Param} for every parameter that is sampled (not fixed), branches included."""
        out = {p.optuna_name(path): p for path, p in self.params.items() if not isinstance(p, FixedParam)}
        for cat in self.conditional().values():
            for choice in cat.choices:
                out |= {branch_name(p.optuna_name(bpath), choice): p for bpath, p in cat.branch(choice).items()
                        if not isinstance(p, FixedParam)}
        return out

    def suggest(self, trial: optuna.Trial) -> dict[str, Any]:
        """Sample every searched parameter, and the branch of each drawn choice; Optuna's params by their names."""
        out = {}
        for path, p in self.params.items():
            if isinstance(p, FixedParam):
                continue
            name = p.optuna_name(path)
            out[name] = p.suggest(trial, name)
            if isinstance(p, CategoricalParam):
                for bpath, bp in p.branch(out[name]).items():
                    if not isinstance(bp, FixedParam):
                        bname = branch_name(bp.optuna_name(bpath), out[name])
                        out[bname] = bp.suggest(trial, bname)
        return out

    def values(self, params: dict[str, Any], tokens_per_step: int) -> dict[str, Any]:
        """Sampled Optuna params (plus the fixed ones) → {RunConfig path: value}, the drawn branches' included."""
        out = {}
        for path, p in self.params.items():
            out[path] = value_of(p, path, p.optuna_name(path), params, tokens_per_step)
            if isinstance(p, CategoricalParam):
                for bpath, bp in p.branch(out[path]).items():
                    out[bpath] = value_of(bp, bpath, branch_name(bp.optuna_name(bpath), out[path]), params,
                                          tokens_per_step)
        return out

    def parse_assignments(self, text: str) -> dict[str, Any]:
        """`--enqueue optimizer.lr=0.01,optimizer.beta1=0.9` → Optuna params, each checked against its range."""
        searched = self.searched()
        params = {}
        for pair in filter(None, (p.strip() for p in text.split(","))):
            name, sep, raw = pair.partition("=")
            if not sep or name not in searched:
                raise ValueError(f"{pair!r} is not NAME=VALUE with NAME one of {', '.join(searched)}")
            value = yaml_io.load(raw)
            if not searched[name].contains(value):
                raise ValueError(f"{name}={value!r} is outside its search range")
            params[name] = value
        return params
