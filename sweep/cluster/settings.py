"""One settings model per backend: every setting of `--backend local|slurm|ray`, declared once.

A field is one setting: its type and default, its one rule, its help, and the entry points that take it:
`workers` (a sweep's workers: `sweep proxy`, `sweep verify` and the spec's `slurm:`/`ray:` sections) and `run`
(one full run: `sweep launch`). Every text that reaches a scheduler, an environment variable or a script has a
pattern here: sbatch reads `#SBATCH --account=…` up to the end of its line, so a newline in a value would start a
command of the job script. Derived from these models and declared nowhere else:
- the command-line options of each entry point (`options`), with their help;
- the spec's sections (`section`: the `workers` fields of SLURM and Ray);
- the settings a backend gets (`settings`): the spec's section, if any, under the flags given; a flag of another
  backend, or a value its rule refuses, is one InputError naming the flag.

One vocabulary: a node is one machine; each task of a sweep's job array is a job of one node, so `gpus_per_node`
and `mem` (GB per node) mean the same for an array task and for a full run. `gpus_per_task`, the name sweeps used,
is an alias (`--gpus-per-task`, `slurm.gpus_per_task`).
"""
from __future__ import annotations

from functools import cache
from typing import Any

from pydantic import AliasChoices, Field, ValidationError, create_model, field_validator

from sweep.errors import InputError
from trainer.config import Strict

# the highest of each kind of scheduling number: here, for the flags (sweep/study/bounds.py reads them), the spec's
# sections and the launch request alike
MAX_PROCESSES = 1024  # workers, processes, tasks, CPUs or devices of one command, task or node
MAX_NODES = 65536
MAX_MINUTES = 10**6  # about two years
MAX_GB = 2**20  # a node's or device's memory, GB
WORKERS, RUN = "workers", "run"  # the two entry points: a sweep's workers, one full run
WORD = r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,63}"  # a SLURM partition, account or QOS name: no space, newline, `=`, `#`
ADDRESS = r"^(auto|(ray://)?([A-Za-z0-9_][A-Za-z0-9_.-]{0,252}|\[[0-9A-Fa-f:.]{2,45}\]):[0-9]{1,5})$"


def setting(default: Any, help: str, takes: tuple[str, ...] = (WORKERS, RUN), aliases: tuple[str, ...] = (),
            **rule: Any) -> Any:
    """A field of a settings model: `help` is the flag's help, `takes` the entry points that take it, `aliases` the
    names it had (the field's own name first), `rule` its pydantic bound or pattern."""
    alias = {"validation_alias": AliasChoices(*aliases)} if aliases else {}
    return Field(default, description=help, json_schema_extra={"takes": list(takes)}, **alias, **rule)


class SlurmSettings(Strict):
    """`--backend slurm`: a job array of workers, or one job of `nodes` nodes for a full run (submitit, sbatch)."""
    partition: str | None = setting(None, "partition (several: a,b)", pattern=rf"^{WORD}(,{WORD}){{0,15}}$")
    account: str | None = setting(None, "account", pattern=rf"^{WORD}$")
    qos: str | None = setting(None, "quality of service", pattern=rf"^{WORD}$")
    time: int = setting(60, "minutes per job (per array task) before it requeues and resumes", ge=1,
                       le=MAX_MINUTES)
    mem: float | None = setting(None, "memory per node, GB (an array task is a job of one node)", gt=0,
                                le=MAX_GB)
    gpus_per_node: int = setting(0, "GPUs per node (a full run: one task each)", ge=0,
                                 le=MAX_PROCESSES, aliases=("gpus_per_node", "gpus_per_task"))
    cpus_per_task: int = setting(1, "CPUs per array task", (WORKERS,), ge=1, le=MAX_PROCESSES)
    array_parallelism: int | None = setting(None, "array tasks running at once [default: all]", (WORKERS,), ge=1,
                                            le=MAX_PROCESSES)
    nodes: int = setting(1, "nodes of the run", (RUN,), ge=1, le=MAX_NODES)


class Shares(Strict):
    """Ray's rule for a trial's share of a machine (a base, so that every view of Ray's settings keeps it)."""

    @field_validator("gpus_per_trial", "cpus_per_trial", check_fields=False)
    @classmethod
    def whole_above_one(cls, value: float) -> float:
        """Ray shares one GPU or CPU between trials (0.5 each), but never gives a trial part of a second one."""
        if value > 1 and not value.is_integer():
            raise ValueError("a fraction is allowed up to 1, above it whole numbers only")
        return value


class RaySettings(Shares):
    """`--backend ray`: Ray Tune trials on a cluster or a private local instance, or one task training a run."""
    address: str | None = setting(None, "cluster address, HOST:PORT, ray://HOST:PORT or auto [default: a private "
                                  "local Ray instance]", pattern=ADDRESS)
    gpus_per_trial: float = setting(0.0, "GPUs per trial (fractions share a GPU)", (WORKERS,), ge=0,
                                    le=MAX_PROCESSES)
    cpus_per_trial: float = setting(1.0, "CPUs per trial", (WORKERS,), gt=0, le=MAX_PROCESSES)
    max_concurrent: int | None = setting(None, "trials at once [default: --workers]", (WORKERS,), ge=1,
                                         le=MAX_PROCESSES)
    gpus_per_node: int = setting(0, "GPUs of the run's task (one node)", (RUN,), ge=0, le=MAX_PROCESSES)


class LocalSettings(Strict):
    """`--backend local`: worker processes on this machine, or a run under torchrun here."""
    gpus_per_node: int = setting(0, "GPUs of this machine the run takes, one process each", (RUN,), ge=0,
                                 le=MAX_PROCESSES)
    nproc: int | None = setting(None, "processes under torchrun (gloo on CPU, NCCL on GPUs) [default: one per GPU, "
                                "else one]", (RUN,), ge=1, le=MAX_PROCESSES)


BACKENDS: dict[str, type[Strict]] = {"local": LocalSettings, "slurm": SlurmSettings, "ray": RaySettings}


def takes(model: type[Strict], name: str, entry: str) -> bool:
    return entry in model.model_fields[name].json_schema_extra["takes"]


@cache
def section(backend: str, entry: str = WORKERS) -> type[Strict]:
    """The settings of `backend` that `entry` takes, as a model of their own (the spec's `slurm:`/`ray:` section is
    `section(…, WORKERS)`): a setting of the other entry point is an unknown key there."""
    model = BACKENDS[backend]
    fields = {name: (info.annotation, info) for name, info in model.model_fields.items() if takes(model, name, entry)}
    return create_model(f"{model.__name__.removesuffix('Settings')}{entry.title()}", __base__=model.__base__,
                        __doc__=model.__doc__, **fields)


# each view as a name of this module, so that a job holding one pickles (a spawned worker, a SLURM task)
SlurmWorkers, SlurmRun = section("slurm", WORKERS), section("slurm", RUN)
RayWorkers, RayRun = section("ray", WORKERS), section("ray", RUN)
LocalWorkers, LocalRun = section("local", WORKERS), section("local", RUN)


def options(entry: str) -> dict[str, tuple[type, str, tuple[str, ...]]]:
    """The command-line options of `entry`, derived from every backend's settings: flag name → (type, help, the
    option's names). A setting several backends share is one option whose help names each, and takes every name
    any of them gives it (`--gpus-per-task`, SLURM's alias of `--gpus-per-node`, on `sweep launch` too)."""
    found: dict[str, tuple[type, list[str], tuple[str, ...]]] = {}
    for backend, model in BACKENDS.items():
        for name, info in model.model_fields.items():
            if not takes(model, name, entry):
                continue
            names = tuple(f"--{alias.replace('_', '-')}" for alias in
                          (info.validation_alias.choices if info.validation_alias else (name,)))
            kind, helps, known = found.get(name, (info.annotation, [], ()))
            default = "" if info.default is None or "[default" in info.description else f" [default: {info.default:g}]"
            helps = [*helps, f"{backend}: {info.description}{default}"]
            found[name] = (kind, helps, tuple(dict.fromkeys(known + names)))
    return {name: (kind | None, "; ".join(helps), names) for name, (kind, helps, names) in found.items()}


def flag(name: str) -> str:
    return "--" + name.replace("_", "-")


def settings(backend: str, entry: str, given: dict[str, Any], base: Strict | None = None) -> Strict:
    """The settings of `backend` for `entry`: `base` (the spec's section) or the defaults, under the flags `given`
    (None: not given). A flag of another backend or entry point, or a value its rule refuses, is one InputError
    naming the flag."""
    given = {name: value for name, value in given.items() if value is not None}
    model = section(backend, entry)
    for name in given:
        if name not in model.model_fields:
            owners = [b for b, m in BACKENDS.items() if name in m.model_fields and takes(m, name, entry)]
            allowed = ", ".join(map(flag, model.model_fields)) or "none of these flags"
            raise InputError(f"{flag(name)}: a {' or '.join(owners)} flag; --backend {backend} takes {allowed}")
    try:
        checked = model.model_validate(given)
    except ValidationError as err:
        raise InputError(flag_error(err)) from None
    base = base if base is not None else model()
    return base.model_copy(update={name: getattr(checked, name) for name in given})


def flag_error(err: ValidationError) -> str:
    """A refused flag in one line: `--nodes: must be at least 1, got 0`, `--account: …` (the value's rule)."""
    first = err.errors()[0]
    name, got, context = str(first["loc"][0]), first.get("input"), first.get("ctx", {})
    bound = {"greater_than_equal": "must be at least {ge:g}", "greater_than": "must be above {gt:g}",
             "less_than_equal": "must be at most {le:g}"}.get(first["type"])
    if bound:
        return f"{flag(name)}: {bound.format(**context)}, got {got}"
    return f"{flag(name)}: {first['msg']} (got {got!r})"
