"""The backend interface: launch workers for a job; watch them; stop them."""
from __future__ import annotations

from abc import ABC, abstractmethod

from sweep.cluster.settings import WORKERS, settings
from sweep.study.spec import StudySpec
from sweep.study.study import SweepJob


class Execution(ABC):
    """Workers launched for one job."""

    @abstractmethod
    def running(self) -> bool:
        """Whether any worker may still run trials."""

    @abstractmethod
    def stop(self) -> None:
        """Stop the workers; each releases its running trial for a retry."""

    @abstractmethod
    def errors(self) -> list[str]:
        """One line per worker that ended abnormally (empty while running or when all ended well)."""

    @abstractmethod
    def describe(self) -> str:
        """Where the workers run, in a line (pids, a job id and its log folder, …)."""


class Backend(ABC):
    name: str

    @classmethod
    def create(cls, spec: StudySpec, workers: int, flags: dict) -> Backend:
        """The backend with its settings: the spec's section of its name, if it has one, under the flags given."""
        section = getattr(spec, cls.name, None)
        options = settings(cls.name, WORKERS, flags, base=section)
        return cls(workers) if section is None else cls(workers, options)

    def check(self, job: SweepJob) -> None:  # noqa: B027 (an optional hook: the local backend accepts every job)
        """Reject what this backend cannot run (an InputError), before anything is written."""

    @abstractmethod
    def launch(self, job: SweepJob) -> Execution:
        """Start workers running `run_worker(job)`; return at once."""
