"""Execution backends: where the workers of a sweep run. Each starts `sweep.study.worker.run_worker`
somewhere and reports whether they still run; the Optuna storage is the source of truth, so any
backend can continue a study another one started."""
from __future__ import annotations

from sweep.backends.base import Backend, Execution
from sweep.backends.local import LocalBackend
from sweep.errors import InputError

BACKENDS = {"local": LocalBackend}


def get_backend(name: str, **options) -> Backend:
    if name not in BACKENDS:
        raise InputError(f"--backend: {name!r} is not one of {', '.join(BACKENDS)}")
    return BACKENDS[name](**options)


__all__ = ["Backend", "Execution", "get_backend", "BACKENDS"]
