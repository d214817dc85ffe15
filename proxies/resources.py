"""Will it fit: the memory a model's training state or a data set's in-memory copy needs, checked against the
memory this machine has available before anything is allocated.

    model: parameters × 16 bytes = fp32 weights (4) + gradients (4) + two optimizer moments (8, AdamW's;
           SGD, Lion and Muon keep one, so this bounds every optimizer here); counted on a copy of the model
           built on torch's meta device, which allocates no memory.
    data:  what a source reads into memory (a text corpus, a synthetic token chain); .bin files are
           memory-mapped and count nothing.
    available: /proc/meminfo's MemAvailable, or less when a cgroup (v2 `memory.max`, v1
           `memory.limit_in_bytes`) limits this process.

Activations are not counted (they scale with batch and sequence, not width alone). Someone who knows
better (swap, a larger machine the run goes to) sets SWEEP_ALLOW_BIG=1 to skip the check.
"""
from __future__ import annotations

import os
from pathlib import Path

ALLOW_BIG = "SWEEP_ALLOW_BIG"
BYTES_PER_PARAMETER = 16
CGROUP_LIMITS = (("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory.current"),
                 ("/sys/fs/cgroup/memory/memory.limit_in_bytes", "/sys/fs/cgroup/memory/memory.usage_in_bytes"))


class ResourceError(ValueError):
    """The input asks for more memory than the machine has; str() is one line with both numbers."""


def available_bytes() -> int:
    """Memory this process can still take: MemAvailable, capped by a cgroup's limit minus its usage."""
    meminfo = dict(line.split(":", 1) for line in Path("/proc/meminfo").read_text().splitlines())
    available = int(meminfo["MemAvailable"].split()[0]) * 1024
    for limit_path, usage_path in CGROUP_LIMITS:
        try:
            limit, usage = Path(limit_path).read_text().strip(), Path(usage_path).read_text().strip()
        except OSError:
            continue
        if limit.isdigit() and usage.isdigit():
            available = min(available, max(0, int(limit) - int(usage)))
    return available


def gib(n: int | float) -> str:
    return f"{n / 2 ** 30:.1f} GiB"


def check_fits(need: int, what: str, field: str) -> None:
    """A ResourceError naming `field` when `need` bytes exceed the available memory (unless SWEEP_ALLOW_BIG=1)."""
    if os.environ.get(ALLOW_BIG) == "1":
        return
    have = available_bytes()
    if need > have:
        raise ResourceError(f"{field}: {what} needs {gib(need)} of memory, but this machine has {gib(have)} available; "
                            f"set {ALLOW_BIG}=1 to try anyway")
