"""What `sweep proxy` is asked to do: one request object instead of a long signature (`cli.py` fills it from
flags, `demo.py` from its own settings); unset fields take the spec's values."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

WARM_START_TOP = 3  # the best trials --warm-start enqueues when --warm-start-top is not given


@dataclass(frozen=True)
class SweepRequest:
    spec: Path
    width: int | None = None  # the proxy width [default: the spec's run.model.width]
    trials: int | None = None  # trials to reach [default: the spec's]
    workers: int = 1
    storage: str | None = None  # Optuna storage URL [default: the spec's, or SQLite in the study folder]
    password_env: str | None = None
    enqueue: tuple[str, ...] = ()  # trials to run first, NAME=VALUE,…
    timeout: float | None = None  # minutes after which no new trial starts
    backend: str = "local"
    parametrization: str | None = None  # mup or sp [default: the spec's]
    warm_start: int | None = None  # a narrower width whose best trials are enqueued first
    warm_start_top: int | None = None  # how many of them [default: WARM_START_TOP]; None: not given
    backend_flags: dict = field(default_factory=dict)  # ray and slurm flags, by name (None: not given)
    detach: bool = False
