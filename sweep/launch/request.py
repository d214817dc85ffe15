"""The flags of `sweep launch`, checked against the backend before anything is written."""
from __future__ import annotations

from dataclasses import dataclass, fields

from sweep.errors import InputError

# which flags each backend takes; a flag given to another backend is an error, not silently ignored
BACKEND_FLAGS = {
    "local": ("nproc", "gpus_per_node"),
    "slurm": ("nodes", "gpus_per_node", "partition", "time", "mem", "account", "qos", "detach"),
    "ray": ("gpus_per_node", "address"),
}


def flag(name: str) -> str:
    return "--" + name.replace("_", "-")


@dataclass(frozen=True)
class LaunchRequest:
    backend: str = "local"
    nodes: int | None = None
    gpus_per_node: int | None = None
    nproc: int | None = None  # local: processes (CPU, or one per GPU)
    partition: str | None = None
    time: int | None = None  # slurm: minutes before the job is requeued (and resumes)
    mem: float | None = None  # slurm: GB per node
    account: str | None = None
    qos: str | None = None
    address: str | None = None  # ray: a running cluster; none: a private local instance
    detach: bool = False

    @property
    def gpus(self) -> int:
        return self.gpus_per_node or 0

    @property
    def processes(self) -> int:
        """Local processes: --nproc, else one per GPU, else one."""
        return self.nproc or self.gpus or 1

    def check(self) -> None:
        """One InputError naming the flag: an unknown backend, a count below 1, a flag of another backend."""
        for name in ("nodes", "gpus_per_node", "nproc", "time"):
            value = getattr(self, name)
            if value is not None and value < (0 if name == "gpus_per_node" else 1):
                raise InputError(f"{flag(name)}: must be at least {0 if name == 'gpus_per_node' else 1}, got {value}")
        if self.mem is not None and self.mem <= 0:
            raise InputError(f"--mem: must be above 0 GB, got {self.mem:g}")
        allowed = BACKEND_FLAGS[self.backend]
        for field in fields(self):
            if field.name != "backend" and getattr(self, field.name) not in (None, False) and field.name not in allowed:
                owners = " or ".join(b for b, names in BACKEND_FLAGS.items() if field.name in names)
                raise InputError(f"{flag(field.name)}: a {owners} flag; --backend {self.backend} takes "
                                 f"{', '.join(map(flag, allowed))}")
        if self.backend == "local" and self.nproc and self.gpus and self.nproc != self.gpus:
            raise InputError(f"--nproc: {self.nproc} processes for {self.gpus} GPUs; "
                             "locally each process takes one GPU")
        if self.gpus and (self.backend == "local" or (self.backend == "ray" and self.address is None)):
            import torch

            if torch.cuda.device_count() < self.gpus:  # the run would wait, or fail, for a GPU that is not there
                raise InputError(f"--gpus-per-node: {self.gpus}, "
                                 f"but this machine has {torch.cuda.device_count()} GPU(s)")
