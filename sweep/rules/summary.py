"""What `sweep verify` leaves for others to read: ROOT/NAME-verify-SETTING/summary.json across width (the grid,
the seeds, each parametrization's drift, noise and verdict, the law), ROOT/NAME-verify-SETTING-across-AXIS/
summary.json across another axis, and figure1.png beside each; `sweep transfer` records the width summary in the
full run's provenance and applies the laws of the others (`--batch-rule fitted`), `sweep report` shows them.

The certificate a law earns is an equivalence test of its interval (sweep/rules/equivalence.py): across width,
μP's promise s = 0 within ± max_drift per octave of the measured range (pass, FAIL, or undecided — measure more);
along another axis, the published slope (sweep/rules/prior.py: ½ across batch for Adam, −0.3 across tokens)
within ± TEXTBOOK_BAND. Each law also records its prior and posterior (`prior`, `posterior`).
"""
from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, ValidationInfo, field_validator, model_validator

from sweep.errors import InputError, printable
from sweep.paths import inside_root, read_json
from sweep.rules.equivalence import equivalence
from sweep.rules.prior import nan
from trainer.atomic import atomic_path
from trainer.config import MAX_BATCH, MAX_DEPTH, MAX_TOKENS, MAX_WIDTH

TEXTBOOK_BAND = 0.15  # a slope this close to the textbook's moves a 4× carry by ≤ 0.3 octave: inside any valley's floor
SLOPE_LIMIT = 64.0  # |slope| a law may have
ROUNDING = 1e-9  # a slope this close to a rule's value is that value (floating-point noise of the fit)
MAX_RUNS = 10**6  # an axis value's runs at most (a grid of 64 × seeds × 2 parametrizations)
MAX_PARAMS = 1e15  # a model's parameters at most: past it an edit, not a model (6·N·D must stay finite)
LOSS_LIMIT = 1e12  # |loss| a summary may hold: past it an overflow, not a measurement (a fit would square it)


def verify_name(spec_name: str, param: str) -> str:
    """NAME-verify-lr for optimizer.lr; a per-role setting keeps its role (NAME-verify-embedding-lr_mult,
    NAME-verify-init-readout), so two roles' grids never share a study."""
    parts = param.split(".")
    if param.startswith(("optimizer.roles.", "model.init.")) and len(parts) > 2:
        return f"{spec_name}-verify-{'-'.join(parts[2:]) if parts[0] == 'optimizer' else 'init-' + parts[2]}"
    return f"{spec_name}-verify-{parts[-1]}"


def axis_folder(spec_name: str, param: str, axis: str = "width", width: int | None = None,
                batch: int | None = None) -> str:
    """NAME-verify-SETTING across width (as before axes existed), NAME-verify-SETTING-across-AXIS otherwise,
    NAME-verify-SETTING-across-AXIS-wWIDTH for a ladder run at a width other than the proxy's (`--ladder-width`) and
    NAME-verify-SETTING-across-AXIS-bBATCH for a horizon ladder at a batch other than the proxy's (`--ladder-batch`)."""
    name = verify_name(spec_name, param)
    if axis == "width":
        return name
    return (f"{name}-across-{axis.rsplit('.', 1)[-1]}" + (f"-w{width}" if width is not None else "")
            + (f"-b{batch}" if batch is not None else ""))


def certificate(axis: str, parametrization: str, law: dict, max_drift: float, textbook: float | None = None) -> dict:
    """{certificate: one line, passed: bool | None, equivalence} for a law {slope, low, high, at} along `axis`: an
    equivalence test of its measured interval (sweep/rules/equivalence.py). Across width, μP's promise, s = 0 within
    ± max_drift per octave of the measured range (pass/fail judge μP; undecided is None); along another axis, the
    textbook slope (the law's published prior) within ± TEXTBOOK_BAND, shown and not judged."""
    if not has_interval(law):
        return {"certificate": "no certificate without an interval (add seeds or axis values)", "passed": None}
    if axis == "width" and parametrization == "mup":
        band = max_drift / math.log2(max(law["at"]) / min(law["at"]))
        said = equivalence(nan(law.get("low")), nan(law.get("high")), 0.0, band)
        passed = {"pass": True, "fail": False}.get(said.verdict)
        return {"certificate": f"μP: {said.text('s =')}", "passed": passed, "band": band,
                "equivalence": said.record()}
    if textbook is None:
        return {"certificate": f"the optimum scales as {axis}^{law['slope']:.3f} (no published slope to hold it to)",
                "passed": None}
    said = equivalence(nan(law.get("low")), nan(law.get("high")), textbook, TEXTBOOK_BAND)
    return {"certificate": f"textbook: {said.text('s =')}", "passed": None, "equivalence": said.record()}


def has_interval(law: dict) -> bool:
    """Whether the law has an interval (NaN in memory, null in summary.json when it has none)."""
    return all(law.get(end) is not None and math.isfinite(law[end]) for end in ("low", "high"))


def interval_text(law: dict, digits: int = 3) -> str:
    """A law's interval as shown: `[low, high] (95%, joint fit)`, or why there is none; with one seed, that the
    seed noise is unknown."""
    if not has_interval(law):
        return interval_basis(law)
    low, high = law["low"] + 0.0, law["high"] + 0.0  # + 0.0: an end at −0 is shown as 0
    return f"[{low:.{digits}f}, {high:.{digits}f}] {interval_basis(law)}"


def interval_basis(law: dict) -> str:
    """What a law's interval rests on: `(95%, joint valley)`, with one seed that its seed noise is unknown, or why it
    has none."""
    if not has_interval(law):
        return "(no interval: too few axis values and seeds for the scatter about the line to be seen)"
    seeds = "" if law.get("seed_noise_known", True) else "; one seed: the seed noise is unknown, only the scatter " \
        "about the line is priced"
    return f"({law['level']:.0%}, {law.get('fit', 'bootstrap')}{seeds})"


def octaves(value: float | None) -> str:
    """A drift or noise in octaves as shown: two decimals, or ? where verify measured none."""
    return "?" if value is None else f"{value:.2f}"


def write_summary(folder: Path, summary: dict) -> None:
    """summary.json as strict JSON: a number that is not finite (a law without an interval) is null."""
    with atomic_path(folder / "summary.json") as tmp:
        tmp.write_text(json.dumps(finite(summary), indent=2, allow_nan=False))


def finite(tree):
    """`tree` with every float that is not finite replaced by None."""
    if isinstance(tree, dict):
        return {k: finite(v) for k, v in tree.items()}
    if isinstance(tree, (list, tuple)):
        return [finite(v) for v in tree]
    return None if isinstance(tree, float) and not math.isfinite(tree) else tree


def schedule_folder(spec_name: str, param: str, depth: int, batch: int, tokens: int) -> str:
    """NAME-verify-SETTING-schedule-dDEPTH-bBATCH-tTOKENS: a width ladder on a full run's schedule (`sweep plan`'s
    own-curve runs, sweep/forecast/own_curve.py), apart from the width ladder on the proxy's."""
    return f"{verify_name(spec_name, param)}-schedule-d{depth}-b{batch}-t{tokens}"


def schedule_folders(root: str | Path, spec_name: str, param: str) -> list[str]:
    """The folders `schedule_folder` named that exist under `root`, by their names' pattern."""
    stem = f"{verify_name(spec_name, param)}-schedule-"
    return sorted(path.name for path in Path(root).glob(f"{stem}d*")
                  if re.fullmatch(r"d[1-9][0-9]{0,5}-b[1-9][0-9]{0,7}-t[1-9][0-9]{0,15}", path.name[len(stem):]))


def read_summary(root: str | Path, spec_name: str, param: str = "optimizer.lr", axis: str = "width",
                 width: int | None = None, batch: int | None = None) -> dict | None:
    """The summary of `param` across `axis` (at `width` or `batch` for a ladder at another width or batch than the
    proxy's), None when verify never wrote it; one that says it holds another setting, axis, width or batch than its
    folder's is bad input."""
    path = Path(root) / axis_folder(spec_name, param, axis, width, batch) / "summary.json"
    if not (path.exists() or path.is_symlink()):
        return None
    summary = load_summary(path, Path(root))
    held = (("param", param), ("axis", axis)) + ((("widths", [width]),) if width is not None else ())
    for field, value in held:
        if summary.get(field, value) != value:
            raise InputError(f"verify summary {path}: field {field}: {summary[field]!r}, where its folder holds "
                             f"{value!r}; rerun the `sweep verify` that wrote it")
    batches = shape_batches(summary)
    if batch is not None and batches != {batch}:
        raise InputError(f"verify summary {path}: field shapes: batch sizes {sorted(batches, key=str)}, where its "
                         f"folder holds {batch}; rerun the `sweep verify` that wrote it")
    return summary


def shape_batches(summary: dict) -> set:
    """The batch sizes a ladder's runs trained at (its shapes'; None where a shape has none)."""
    return {s.get("batch_size") for s in summary.get("shapes", [])}


def ladder_widths(root: str | Path, spec_name: str, param: str, axis: str, mark: str = "w") -> list[int]:
    """The widths other than the proxy's a ladder of `param` across `axis` was run at (`--ladder-width`), from
    their folders' names: ROOT/NAME-verify-SETTING-across-AXIS-wWIDTH; with `mark` "b", the batches
    (`--ladder-batch`, …-bBATCH)."""
    folder = axis_folder(spec_name, param, axis)
    found = (re.fullmatch(rf"-{mark}([1-9][0-9]{{0,7}})", path.name[len(folder):])
             for path in Path(root).glob(f"{folder}-{mark}*"))
    return sorted(int(match.group(1)) for match in found if match)


def load_summary(path: Path, root: Path) -> dict:
    """A summary.json under the results root (never through a link out of it), as `sweep verify` writes it: a
    broken one is bad input naming it and its first bad field (`_Summary`); the values are read as they are."""
    inside_root(path, root, "verify summary")
    summary = read_json(path, "verify summary")
    if summary is None:  # a folder, a FIFO or a device where the file should be
        raise InputError(f"verify summary: {path} is not a file `sweep verify` writes; rerun it")
    try:
        _Summary.model_validate(summary)
    except ValidationError as err:
        first = err.errors()[0]
        where = printable(".".join(map(str, first["loc"])))
        raise InputError(f"verify summary {path}: field {where}: {first['msg']}; rerun the `sweep verify` that "
                         "wrote it") from None
    return summary


_STRICT = ConfigDict(extra="allow", allow_inf_nan=False, strict=True)  # no string or bool read as a number
SOURCE = r"^(spec|[A-Za-z0-9_][A-Za-z0-9._-]*#[0-9]+)$"  # where verify took its settings: the spec, or STUDY#TRIAL
Parametrization = Literal["mup", "sp"]


class _Span(BaseModel):
    """A prior's or a posterior's slope and interval as a summary records them (sweep/rules/prior.py): the report
    and the demo print them, so each is a number where one is written and the interval holds its centre."""
    model_config = _STRICT
    centre: float = Field(ge=-SLOPE_LIMIT, le=SLOPE_LIMIT)
    low: float | None = Field(None, ge=-SLOPE_LIMIT, le=SLOPE_LIMIT)
    high: float | None = Field(None, ge=-SLOPE_LIMIT, le=SLOPE_LIMIT)
    weight: float | None = Field(None, ge=0, le=1)
    spread: float | None = Field(None, gt=0)
    source: str | None = None
    used: str | None = None

    @model_validator(mode="after")
    def _inside(self) -> _Span:
        inside("centre", self.centre, self.low, self.high)
        return self


class _Law(BaseModel):
    """What a reader relies on in a law: finite slopes within ±SLOPE_LIMIT (a larger one scales a setting by 2^64
    per doubling: no law a grid can measure) inside their interval, and two or more positive axis values."""
    model_config = _STRICT
    slope: float = Field(ge=-SLOPE_LIMIT, le=SLOPE_LIMIT)
    low: float | None = Field(None, ge=-SLOPE_LIMIT, le=SLOPE_LIMIT)
    high: float | None = Field(None, ge=-SLOPE_LIMIT, le=SLOPE_LIMIT)
    level: float = Field(0.95, gt=0, lt=1)  # the interval's level: 1 would read any interval as exact
    at: list[float] = Field(min_length=2)
    poor_at: list[float] = []
    prior: _Span | None = None
    posterior: _Span | None = None

    @field_validator("at")
    @classmethod
    def _positive(cls, at: list[float]) -> list[float]:
        if any(not v > 0 for v in at):
            raise ValueError(f"axis values must be positive, got {at}")
        return at

    @model_validator(mode="after")
    def _inside(self) -> _Law:
        inside("slope", self.slope, self.low, self.high)
        return self


def inside(name: str, value: float, low: float | None, high: float | None) -> None:
    """A law's point within its interval (up to ROUNDING) where it has one: a reader relies on it."""
    if low is not None and high is not None and not low - ROUNDING <= value <= high + ROUNDING:
        raise ValueError(f"the {name} {value} lies outside its interval [{low}, {high}]")


class _Shape(BaseModel):
    """One axis value's run shape: where `sweep transfer` looks for the proxy's own point."""
    model_config = _STRICT
    at: float = Field(gt=0)
    width: int | None = Field(None, ge=1, le=MAX_WIDTH)
    depth: int | None = Field(None, ge=1, le=MAX_DEPTH)
    batch_size: int | None = Field(None, ge=1, le=MAX_BATCH)
    params: float | None = Field(None, ge=1, le=MAX_PARAMS)
    tokens: float | None = Field(None, ge=1, le=MAX_TOKENS)


class _Optimum(BaseModel):
    """One axis value's optimum per parametrization: the vertex (null when none was fitted) and its losses."""
    model_config = _STRICT
    parametrization: Parametrization
    optimum: float | None = Field(None, gt=0)
    fitted: bool = False
    poor_fit: bool = False
    loss: float | None = Field(None, ge=-LOSS_LIMIT, le=LOSS_LIMIT)
    best_loss: float | None = Field(None, ge=-LOSS_LIMIT, le=LOSS_LIMIT)


class _Verdict(BaseModel):
    """A parametrization's verdict across the axis: its drift and noise in octaves, and whether it passed."""
    model_config = _STRICT
    drift: float | None = None
    noise: float | None = None
    passed: bool | None = None


class _Reused(BaseModel):
    """An axis value's runs another study trained (sweep/study/twin.py): tuning compute does not count them twice."""
    model_config = _STRICT
    at: float = Field(gt=0)
    runs: int = Field(ge=0, le=MAX_RUNS)


class _Summary(BaseModel):
    """The fields readers of a summary use (`sweep transfer`, `sweep report`, the demo), each of its type; every
    optima row names its axis value, a positive number."""
    model_config = _STRICT
    param: str | None = None
    axis: str | None = None
    source: str | None = Field(None, pattern=SOURCE)  # printed: never a terminal escape from a hand-edited file
    prior: Literal["published", "none"] | None = None
    optimizer: str | None = None  # picks the law's published prior (sweep/rules/prior.py)
    depth_rule: bool | None = None
    grid: list[float] = []
    seeds: int | None = Field(None, ge=1)
    max_drift: float | None = Field(None, gt=0)
    widths: list[int] = []
    values: list[float] = []
    parametrizations: dict[Parametrization, _Verdict] = {}
    laws: dict[Parametrization, _Law] = {}
    shapes: list[_Shape] = []
    reused: list[_Reused] = []
    optima: list[_Optimum] = []

    @field_validator("optima")
    @classmethod
    def _rows_name_their_value(cls, optima: list[_Optimum], info: ValidationInfo) -> list[_Optimum]:
        axis = info.data.get("axis") or "width"
        for row in optima:
            value = (row.model_extra or {}).get(axis)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value < math.inf:
                raise ValueError(f"a row's {axis} must be a positive number, got {value!r}")
        return optima

    @field_validator("shapes")
    @classmethod
    def _one_width(cls, shapes: list[_Shape], info: ValidationInfo) -> list[_Shape]:
        """Across another axis than width, every shape is at the one width the ladder ran at."""
        widths = info.data.get("widths") or []
        if (info.data.get("axis") or "width") != "width" and len(widths) == 1 and \
                any(s.width not in (None, widths[0]) for s in shapes):
            raise ValueError(f"a shape's width is not the ladder's width {widths[0]}")
        return shapes

    @field_validator("optima")
    @classmethod
    def _at_its_values(cls, optima: list[_Optimum], info: ValidationInfo) -> list[_Optimum]:
        """The optima, shapes and laws are at the values the summary lists (when it lists them)."""
        axis, values = info.data.get("axis") or "width", info.data.get("values")
        if values:
            found = {float((row.model_extra or {}).get(axis, 0)) for row in optima}
            found |= {s.at for s in info.data.get("shapes") or []}
            found |= {float(v) for law in (info.data.get("laws") or {}).values() for v in law.at}
            if not found <= {float(v) for v in values}:
                raise ValueError(f"values {values} do not hold {sorted(found - set(map(float, values)))}, where "
                                 "its optima, shapes or laws are")
        return optima
