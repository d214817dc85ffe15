"""What `sweep verify` is asked to do: one request object instead of a long signature (`cli.py` fills it from
flags, `demo.py` from its own settings)."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from sweep.rules.bracket import REFINE

WIDTHS = "32,64,128,256"  # the width axis when neither --widths nor --across is given


@dataclass(frozen=True)
class VerifyRequest:
    spec: Path
    widths: str | None = None  # comma-separated (the width axis) [default: WIDTHS]; None: not given
    across: str | None = None  # AXIS=v1,v2,… (sweep/rules/axis.py) [default: width over `widths`]
    param: str = "optimizer.lr"  # the setting on the grid, a RunConfig path with positive values
    values: str | None = None  # the grid, comma-separated
    span: str | None = None  # LO,HI,N [default: the base value × 2^-3 … 2^3]
    parametrizations: str | None = None  # [default: mup,sp across width, else mup]
    seeds: int = 2
    trials_from: str = "best"  # the sweep's best trial, or the spec's defaults: best|spec
    proxy_width: int | None = None  # the sweep's width whose best trial is used [default: its only one]
    ladder_width: int | None = None  # the width a ladder across another axis runs at [default: the proxy's]
    ladder_batch: int | None = None  # the batch a ladder across tokens or steps runs at [default: the proxy's]
    schedule: tuple[int, int, int] | None = None  # (depth, batch, tokens): a width ladder on a full run's schedule,
    # sweep plan's own-curve runs (set by `verify --plan`, no flag; sweep/verify/checks.py `on_schedule`)
    max_drift: float = 1.0  # octaves
    refine: int = REFINE  # extra grid points per axis value until its optimum is bracketed (sweep/rules/bracket.py)
    prior: str = "published"  # each law's published prior (sweep/rules/prior.py), or none: the measurement alone
    backend: str = "local"
    workers: int = 1
    storage: str | None = None
    password_env: str | None = None
    backend_flags: dict = field(default_factory=dict)  # ray and slurm flags, by name (None: not given)
