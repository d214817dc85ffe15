"""How big each kind of number on the command line may be: one bound per kind, checked before a command starts.

A count past what a machine can do (`--trials 10^23`, `coord-check --steps 10^9`, `--workers 10^6`, a width of
10^9 for `inspect`) was accepted and then ran "forever" or overflowed deep inside torch; an integer past what a
float holds exactly turned into another number on its way to Optuna or numpy. Each flag names its kind here;
an integer flag of no kind is still held to INT_MAX. The same kinds bound the spec and the RunConfig
(trainer.config's MAX_* and the spec's MAX_TRIALS), so a flag cannot reach what a file may not.
"""
from __future__ import annotations

import math

from sweep.cluster.settings import MAX_GB, MAX_MINUTES, MAX_NODES, MAX_PROCESSES
from sweep.errors import InputError
from trainer.config import LR_MAX, MAX_BATCH, MAX_DEPTH, MAX_TOKENS, MAX_WIDTH

INT_MAX = 2**53  # integers a float (Optuna's storage, numpy, JSON readers) holds exactly
MAX_TRIALS = 10**6  # trials of one study: Optuna's samplers slow down long before
MAX_SEEDS = 1000  # seeds per point (as the spec's seeds_per_trial)
MAX_CHECK_STEPS = 1000  # a coordinate check's recorded steps: μP shows in the first few (the default is 8)
MAX_LIST = 64  # values in one comma-separated list (widths): each is a model, a study or a run per seed
MAX_SHOWN = 10**6  # rows a table shows

# kind → (lowest, highest, what it is); the lowest is checked where the value is used, the highest here
KINDS = {
    "width": (1, MAX_WIDTH, "a width"),
    "depth": (1, MAX_DEPTH, "a depth"),
    "batch": (1, MAX_BATCH, "a batch size"),
    "tokens": (1, MAX_TOKENS, "a token budget"),
    "steps": (1, 10**12, "a step budget"),
    "check-steps": (2, MAX_CHECK_STEPS, "a coordinate check's recorded steps"),
    "trials": (1, MAX_TRIALS, "a trial count"),
    "seeds": (1, MAX_SEEDS, "seeds per point"),
    "processes": (1, MAX_PROCESSES, "processes, tasks or devices of one command"),
    "devices": (0, MAX_PROCESSES, "devices of one task or node"),
    "nodes": (1, MAX_NODES, "nodes of one job"),
    "minutes": (0, MAX_MINUTES, "minutes, about two years"),
    "gb": (0, MAX_GB, "GB of memory"),
    "lr": (0, LR_MAX, "a learning rate"),
    "rows": (1, MAX_SHOWN, "rows shown"),
}
# flag (its Python name) → kind; a name several commands share means the same kind in each
FLAGS = {"width": "width", "proxy_width": "width", "ladder_width": "width", "ladder_batch": "batch",
         "warm_start": "width",
         "depth": "depth", "batch_size": "batch", "tokens": "tokens", "steps": "steps", "trials": "trials",
         "warm_start_top": "trials", "seeds": "seeds", "workers": "processes", "nproc": "processes",
         "max_concurrent": "processes", "array_parallelism": "processes", "cpus_per_task": "processes",
         "gpus_per_node": "devices", "gpus_per_trial": "devices",
         "cpus_per_trial": "devices", "nodes": "nodes", "time": "minutes", "timeout": "minutes", "mem": "gb",
         "lr_max": "lr", "top": "rows"}  # coord-check's --lr has its own line (above 0 and at most LR_MAX)
COMMAND_FLAGS = {("coord-check", "steps"): "check-steps"}  # a flag whose kind differs in one command


def check_number(field: str, kind: str, value: int | float) -> None:
    """An InputError naming `field` when `value` is past its kind's highest (each command keeps its own lowest,
    and its own line for it: `--trials: must be at least 1`)."""
    _, high, what = KINDS[kind]
    if value > high:
        raise InputError(f"{field}: at most {shown(high)} ({what}), got {shown(value)}")


def check_flag(command: str, name: str, field: str, value: object) -> None:
    """A flag's number at most its kind's highest (an integer of no kind within ±INT_MAX)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return
    kind = COMMAND_FLAGS.get((command, name)) or FLAGS.get(name)
    if kind is not None:
        check_number(field, kind, value)
    elif isinstance(value, int) and abs(value) > INT_MAX:
        raise InputError(f"{field}: an integer of at most 2^53 in size, got {shown(value)}")


def check_list(field: str, values: list, kind: str | None = None) -> None:
    """A comma-separated list of at most MAX_LIST values, each at most `kind`'s highest."""
    if len(values) > MAX_LIST:
        raise InputError(f"{field}: at most {MAX_LIST} values, got {len(values)}")
    for value in values if kind else ():
        check_number(field, kind, value)


def shown(value: int | float) -> str:
    """`value` for an error line; a huge integer by its size (Python refuses to print one of 4,300 digits)."""
    if isinstance(value, int) and abs(value) > 10**15:
        return f"an integer of about {int(abs(value).bit_length() * math.log10(2)) + 1} digits"
    return f"{value:g}" if isinstance(value, float) else str(value)
