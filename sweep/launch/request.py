"""The flags of `sweep launch`: the backend, its settings (sweep/cluster/settings.py, the `run` entry point), and
whether to detach; checked before anything is written."""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from sweep.cluster.settings import RUN, settings
from sweep.errors import InputError


@dataclass(frozen=True)
class LaunchRequest:
    backend: str = "local"
    flags: dict[str, Any] = field(default_factory=dict)  # the backend's settings given as flags (None: not given)
    detach: bool = False  # slurm: submit and return

    @cached_property
    def settings(self) -> Any:
        """The backend's settings for one run, the flags given over the defaults (an InputError naming a flag)."""
        return settings(self.backend, RUN, self.flags)

    @property
    def gpus(self) -> int:
        return self.settings.gpus_per_node

    @property
    def processes(self) -> int:
        """Local processes: --nproc, else one per GPU, else one."""
        return self.settings.nproc or self.gpus or 1

    def check(self) -> None:
        """One InputError naming the flag: a flag of another backend, a value its rule refuses, a GPU count this
        machine lacks."""
        s = self.settings
        if self.detach and self.backend != "slurm":
            raise InputError(f"--detach: a slurm flag; --backend {self.backend} runs with this command")
        if self.backend == "local" and s.nproc and self.gpus and s.nproc != self.gpus:
            raise InputError(f"--nproc: {s.nproc} processes for {self.gpus} GPUs; locally each process takes one GPU")
        if self.gpus and (self.backend == "local" or (self.backend == "ray" and s.address is None)):
            import torch

            if torch.cuda.device_count() < self.gpus:  # the run would wait, or fail, for a GPU that is not there
                raise InputError(f"--gpus-per-node: {self.gpus}, "
                                 f"but this machine has {torch.cuda.device_count()} GPU(s)")
