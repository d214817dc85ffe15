"""What `sweep proxy` is asked to do: one request object instead of a long signature (`cli.py` fills it from
flags, `demo.py` from its own settings); unset fields take the spec's values."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional


@dataclass(frozen=True)
class SweepRequest:
    spec: Path
    width: Optional[int] = None  # the proxy width [default: the spec's run.model.width]
    trials: Optional[int] = None  # trials to reach [default: the spec's]
    workers: int = 1
    storage: Optional[str] = None  # Optuna storage URL [default: the spec's, or SQLite in the study folder]
    password_env: Optional[str] = None
    enqueue: tuple[str, ...] = ()  # trials to run first, NAME=VALUE,…
    timeout: Optional[float] = None  # minutes after which no new trial starts
    backend: str = "local"
    parametrization: Optional[str] = None  # mup or sp [default: the spec's]
    warm_start: Optional[int] = None  # a narrower width whose best trials are enqueued first
    backend_flags: dict = field(default_factory=dict)  # ray and slurm flags, by name (None: not given)
    detach: bool = False
