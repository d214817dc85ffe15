"""Execution backends: where the workers of a sweep run. Each starts `sweep.study.worker.run_worker`
somewhere and reports whether they still run; the Optuna storage is the source of truth, so any
backend can continue a study another one started."""
from __future__ import annotations

from sweep.backends.base import Backend, Execution
from sweep.backends.local import LocalBackend
from sweep.backends.ray import RayBackend
from sweep.backends.slurm import SlurmBackend
from sweep.study.spec import StudySpec

BACKENDS = {"local": LocalBackend, "ray": RayBackend, "slurm": SlurmBackend}


def get_backend(name: str, spec: StudySpec, workers: int = 1, flags: dict | None = None) -> Backend:
    """The backend `name` with its settings (sweep/cluster/settings.py): the spec's section of its name, under the
    flags given; a flag of another backend is one InputError naming it."""
    return BACKENDS[name].create(spec, workers, flags or {})


__all__ = ["Backend", "Execution", "get_backend", "BACKENDS"]
