"""RunConfig: the run's sections put together, its budget, its name (run id) and its YAML."""
from __future__ import annotations

import hashlib
import json
import math
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, get_args

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from trainer import yaml_io
from trainer.config._base import ConfigError, Name, Strict
from trainer.config._logging import LoggingConfig
from trainer.config._optimizer import OptimizerConfig, ScheduleConfig
from trainer.config._prediction import check_prediction
from trainer.config._roles import InitMults

if TYPE_CHECKING:
    from proxies.data import DataSource

SCHEMA_VERSION = 1  # the RunConfig layout this code reads and writes; bump it when a field changes meaning
MAX_BATCH = 2**24  # examples per step a run takes at most
MAX_WIDTH = 2**20  # a model's width at most
MAX_DEPTH = 10**4  # a model's depth at most
MAX_TOKENS = 10**15  # a run's token budget at most
SEED_MAX = 2**62  # a torch generator takes a signed 64-bit seed; the loop adds its offsets and steps to it


class ModelConfig(Strict):
    name: str = "gpt"  # zoo name or package.module:function
    width: int = Field(128, ge=1, le=MAX_WIDTH)
    depth: int = Field(2, ge=1, le=MAX_DEPTH)
    parametrization: Literal["mup", "sp"] = "mup"
    base_width: int | None = Field(None, ge=1)  # recorded from the builder; must match it when given
    options: dict[str, Any] = {}  # builder options, multipliers included (output_mult, attn_mult, n_head, …)
    # per-role init multipliers; absent from dumps when all 1, so configs and run ids written before stay as they were
    init: InitMults = Field(InitMults(), exclude_if=lambda v: not v.given())


class DataConfig(Strict):
    kind: str = "stdlib"
    path: str | None = None
    seq_len: int = Field(128, ge=1)
    dtype: Literal["uint16", "uint32"] | None = None
    vocab_size: int | None = Field(None, ge=1)
    val_fraction: float = Field(0.1, gt=0, lt=1)
    options: dict[str, Any] = {}  # kind-specific: n_tokens, in_features, classes, channels, size

    def open(self, seed: int) -> DataSource:
        """The data source this section names (proxies.data.open_data); `seed` drives synthetic data."""
        from proxies.data import open_data

        return open_data(self.kind, path=self.path, seq_len=self.seq_len, dtype=self.dtype, vocab_size=self.vocab_size,
                         val_fraction=self.val_fraction, seed=seed, **self.options)


class EvalConfig(Strict):
    every: int = Field(100, ge=1)  # steps between evaluations (and one at the end)
    # bounds here and in the guard: what a run can do in one evaluation or hold in memory, not a loop past it
    batches: int = Field(8, ge=1, le=10**5)  # held-out batches per evaluation, the same ones every time
    # the held-out batches' seed; null: the run's seed. Runs that share it are judged on the same batches, so
    # their difference is training's alone (a study's seeds beyond the first take the first's)
    seed: int | None = Field(None, ge=0, le=SEED_MAX)
    noise_scale_batches: int = Field(8, ge=0, le=4096)  # small batches for B_simple at each eval; 0: off, else ≥ 2

    @model_validator(mode="after")
    def _two_batches(self) -> EvalConfig:
        if self.noise_scale_batches == 1:
            raise ValueError("noise_scale_batches: 0 (off) or at least 2, since B_simple compares two batch sizes")
        return self


class CheckpointConfig(Strict):
    every: int = Field(0, ge=0)  # steps between checkpoints; 0: only at the end
    keep: int = Field(2, ge=1)


class GuardConfig(Strict):
    """Loss-spike guard (PaLM, Chowdhery et al. 2022, §5.1: restart ~100 steps before a spike, skip the
    batches that led there); see trainer/guard.py. `enabled: null` means on for `output.kind: full`."""

    enabled: bool | None = None
    action: Literal["log", "skip", "rewind"] = "rewind"
    rule: Literal["ratio", "zscore"] = "ratio"
    factor: float = Field(1.5, gt=1)  # ratio rule: spike when loss > factor × rolling mean
    zscore: float = Field(6.0, gt=0)  # zscore rule: spike when (loss − mean) / std > zscore
    window: int = Field(100, ge=2, le=10**6)  # rolling window of accepted losses; detection starts once it is full
    rewind_steps: int = Field(100, ge=1)  # N: restore the newest ring checkpoint at least N steps before the spike
    ring_every: int = Field(50, ge=1)  # steps between ring checkpoints
    ring_size: int = Field(4, ge=2, le=1000)  # ring checkpoints kept on disk
    max_rewinds: int = Field(5, ge=0)  # rewinds (or skipped steps, for action skip) before the run stops

    @model_validator(mode="after")
    def _ring_reaches_back(self) -> GuardConfig:
        if self.action == "rewind" and (self.ring_size - 1) * self.ring_every < self.rewind_steps:
            raise ValueError(f"ring_size: {self.ring_size} checkpoints {self.ring_every} steps apart cannot reach "
                             f"{self.rewind_steps} steps back; need (ring_size − 1) × ring_every ≥ rewind_steps")
        return self


class SignalsConfig(Strict):
    """Instability signals (trainer/signals.py) measured every `every` steps; 0: off."""

    every: int = Field(0, ge=0)


PG_TIMEOUT_S = 3600.0  # a collective's wait before the process group gives up


class ParallelConfig(Strict):
    """How the processes of a run share it. `ddp`: each holds the whole model, gradients are averaged
    (DistributedDataParallel). `fsdp`: parameters, gradients and optimizer state are sharded across the processes
    (FSDP2, `torch.distributed.fsdp.fully_shard` per block and at the root; sharded checkpoints), so each holds
    about 1/N of them; `reshard_after_forward` frees the gathered weights after each block's forward (less memory,
    one more all-gather in the backward). `timeout_s`: how long a collective waits for the other processes before
the process group gives up (NCCL's own default, 10 min, is shorter than a large checkpoint write on rank 0)."""

    kind: Literal["ddp", "fsdp"] = "ddp"
    reshard_after_forward: bool = True
    timeout_s: float = Field(PG_TIMEOUT_S, gt=0, le=7 * 24 * 3600)


class OutputConfig(Strict):
    root: str = "studies"
    study: Name = "default"
    kind: Literal["proxy", "full"] = "proxy"
    run: Name | None = None  # default: derived from the config's content

    @field_validator("root")
    @classmethod
    def a_path_the_file_system_takes(cls, value: str) -> str:
        """The root reaches folders, logs and a SLURM script's `#SBATCH` lines: no control character (a newline would
        start a line of the script, a NUL is no path), and a length the file system takes (ENAMETOOLONG)."""
        if any(ord(c) < 32 or ord(c) == 127 for c in value):
            raise ValueError("a path without control characters (newline, tab, NUL)")
        encoded = value.encode("utf-8", "surrogateescape")
        if len(encoded) > 4095 or max(len(part) for part in encoded.split(b"/")) > 255:
            raise ValueError(f"a path of at most 4095 bytes with names of at most 255 bytes (got {len(encoded)} bytes)")
        return value


class Provenance(Strict):
    # a record, not input: a nan loss stays readable
    model_config = ConfigDict(extra="forbid", validate_assignment=True)
    study: str | None = None  # the Optuna study (a sweep's study name at one width and parametrization)
    trial: int | None = None
    storage: str | None = None  # the Optuna storage URL, never with a password
    created_by: str | None = None
    trial_value: float | None = None  # the proxy trial's objective (a transferred run)
    proxy: dict[str, Any] = {}  # the proxy's width, depth, batch, tokens, parametrization (a transferred run)
    verify: dict[str, Any] = {}  # the drift `sweep verify` measured, when it was run
    rules: list[dict[str, Any]] = []  # transfer rules applied: rule, field, before, after, formula
    laws: list[dict[str, Any]] = []  # fitted laws applied: slope, interval, measured range, textbook values
    prediction: dict[str, Any] = {}  # the predicted final loss: form, source, value, interval, fitted points
    tuning: dict[str, Any] = {}  # the tuning compute (proxy, verify runs) and its share of the full run's

    @field_validator("prediction")
    @classmethod
    def _prediction(cls, value: dict) -> dict:
        return check_prediction(value)


class RunConfig(Strict):
    schema_version: int = Field(SCHEMA_VERSION, ge=1, le=SCHEMA_VERSION)  # the layout it was written in
    model: ModelConfig = ModelConfig()
    data: DataConfig = DataConfig()
    optimizer: OptimizerConfig = OptimizerConfig()
    schedule: ScheduleConfig = ScheduleConfig()
    batch_size: int = Field(16, ge=1, le=MAX_BATCH)  # global batch, in examples (sequences), per optimizer step
    grad_accum: int = Field(1, ge=1)  # micro-steps per optimizer step (per process)
    # bounded where a budget stops being a number to train: 10^12 steps, 10^15 tokens (~10^3 × the largest runs)
    steps: int | None = Field(None, ge=1, le=10**12)
    tokens: int | None = Field(None, ge=1, le=MAX_TOKENS)  # budget in tokens; steps = ceil(tokens / tokens per step)
    precision: Literal["auto", "fp32", "bf16", "fp16"] = "auto"  # auto: bf16 autocast on CUDA, fp32 on CPU
    compile: bool = False
    seed: int = Field(0, ge=0, le=SEED_MAX)
    device: str = Field("auto", pattern=r"^(auto|cpu|cuda(:\d+)?)$")
    log_every: int = Field(10, ge=1)
    divergence_factor: float = Field(2.0, gt=1)  # stop when loss stays > factor × the first step's loss (or is nan/inf)
    z_loss: float = Field(0.0, ge=0)  # coefficient on mean log²Z of the output logits (PaLM: 1e-4); 0: off
    guard: GuardConfig = GuardConfig()
    # absent from dumps when unset, like the optimizers' sections: configs written before them stay as they were
    parallel: ParallelConfig | None = Field(None, exclude_if=lambda v: v is None)  # unset: ddp
    activation_checkpointing: bool = Field(False, exclude_if=lambda v: not v)  # recompute each block in the backward
    signals: SignalsConfig = SignalsConfig()
    logging: LoggingConfig | None = Field(None, exclude_if=lambda v: v is None)  # trackers mirroring the curve
    eval: EvalConfig = EvalConfig()
    checkpoint: CheckpointConfig = CheckpointConfig()
    output: OutputConfig = OutputConfig()
    provenance: Provenance = Provenance()

    @model_validator(mode="before")
    @classmethod
    def _not_newer(cls, data: Any) -> Any:
        """A newer layout is refused first: its other keys cannot be read by this version."""
        version = data.get("schema_version") if isinstance(data, dict) else None
        if isinstance(version, int) and not isinstance(version, bool) and version > SCHEMA_VERSION:
            raise ValueError(f"schema_version: {version} is newer than this mup-sweep reads (up to {SCHEMA_VERSION}); "
                             "upgrade mup-sweep to run this config")
        return data

    @model_validator(mode="after")
    def _budget(self) -> RunConfig:
        if (self.steps is None) == (self.tokens is None):
            raise ValueError("steps and tokens: give exactly one")
        if self.batch_size % self.grad_accum:
            raise ValueError(f"batch_size: {self.batch_size} is not divisible by grad_accum {self.grad_accum}")
        return self

    @model_validator(mode="after")
    def _block_holds_a_sequence(self) -> RunConfig:
        """A model's block_size (its positions) is at least the data's seq_len: shorter, the first forward pass failed
        with a traceback, after the run's folder was made (found by the fuzzer through `sweep doctor`). A block_size
        that is not a positive integer is the builder's to refuse."""
        block = self.model.options.get("block_size")
        if isinstance(block, int) and not isinstance(block, bool) and 0 < block < self.data.seq_len:
            raise ValueError(f"model.options.block_size: {block} is shorter than data.seq_len {self.data.seq_len}; "
                             "at least the sequence length")
        return self

    @model_validator(mode="after")
    def _schedule_free_is_constant(self) -> RunConfig:
        """Schedule-Free's averaging replaces the decay (Defazio et al. 2024): a decaying schedule on top is refused."""
        if self.optimizer.name == "schedulefree_adamw" and self.schedule.kind != "constant":
            raise ValueError(f"schedule.kind: {self.schedule.kind} decays the LR, schedulefree_adamw needs constant "
                             "(its averaging replaces the decay; warmup stays allowed)")
        return self

    @model_validator(mode="after")
    def _fsdp_precision(self) -> RunConfig:
        if self.sharded() and self.precision == "fp16":
            raise ValueError("precision: fp16 is not supported with parallel.kind fsdp (its GradScaler does not "
                             "handle sharded gradients); use bf16 or fp32")
        return self

    def pg_timeout_s(self) -> float:
        return self.parallel.timeout_s if self.parallel is not None else PG_TIMEOUT_S

    def sharded(self) -> bool:
        """Whether parameters, gradients and optimizer state are sharded across processes (FSDP2)."""
        return self.parallel is not None and self.parallel.kind == "fsdp"

    def tokens_per_step(self, tokens_per_example: int) -> int:
        return self.batch_size * tokens_per_example

    def total_steps(self, tokens_per_example: int) -> int:
        if self.steps is not None:
            return self.steps
        return math.ceil(self.tokens / self.tokens_per_step(tokens_per_example))

    def guard_on(self) -> bool:
        """The spike guard's effective switch: `guard.enabled`, or by default on for full runs only."""
        return self.guard.enabled if self.guard.enabled is not None else self.output.kind == "full"

    def run_id(self) -> str:
        """`output.run`, or a name derived from everything that shapes the run's curve
        (not where it is written, how often it is logged, checkpointed or its signals measured, which trackers
        mirror it, its provenance,
        the schema version it was written in, nor how it is laid out over processes and memory: `parallel`,
        `activation_checkpointing`).

        The spike guard enters only when it can change the curve (on, and skip or rewind), z_loss only when
        non-zero, `eval.seed` only when it differs from the run's seed, and an optimizer's own section only when set
        (unset ones are not dumped), so runs named before these options existed keep their names.
        """
        if self.output.run:
            return self.output.run
        content = self.model_dump(mode="json", exclude={"model": {"base_width"}, "output": True, "provenance": True,
                                                        "checkpoint": True, "log_every": True, "signals": True,
                                                        "logging": True,
                                                        "schema_version": True, "parallel": True,
                                                        "activation_checkpointing": True})
        if not self.z_loss:
            del content["z_loss"]
        if self.eval.seed in (None, self.seed):  # the same held-out batches as before the field existed
            del content["eval"]["seed"]
        if self.guard_on() and self.guard.action != "log":
            content["guard"]["enabled"] = True
        else:
            del content["guard"]
        digest = hashlib.sha256(json.dumps(content, sort_keys=True).encode()).hexdigest()[:10]
        name = self.model.name.rsplit(":", 1)[-1]
        return f"{name}-w{self.model.width}-d{self.model.depth}-{digest}"

    def run_dir(self) -> Path:
        return Path(self.output.root) / self.output.study / "runs" / self.run_id()

    def curves_root(self) -> Path:
        return Path(self.output.root) / self.output.study / "curves"

    def events_root(self) -> Path:
        return Path(self.output.root) / self.output.study / "events"

    def to_yaml(self) -> str:
        return yaml.safe_dump(self.model_dump(mode="json"), sort_keys=False, allow_unicode=True)

    @classmethod
    def from_yaml(cls, text: str | bytes) -> RunConfig:
        try:
            data = yaml_io.load(text)
        except yaml.YAMLError as err:
            raise ConfigError(f"config: not valid YAML ({yaml_io.reason(err)})") from None
        return cls.parse(data or {})

    @classmethod
    def load(cls, path: str | Path) -> RunConfig:
        path = Path(path)
        try:
            text = yaml_io.read_file(path)
        except FileNotFoundError:
            raise ConfigError(f"config: {path} does not exist") from None
        except yaml.YAMLError as err:
            raise ConfigError(f"config: {path} is refused ({err})") from None
        return cls.from_yaml(text)

    @classmethod
    def parse(cls, data: Any) -> RunConfig:
        try:
            return cls.model_validate(data)
        except ValidationError as err:
            raise ConfigError(one_line(err)) from None


def one_line(err: ValidationError, root: type[BaseModel] | None = None) -> str:
    """The first validation error as `key.path: message`, naming the allowed keys for an unknown one.

    `root` is the model that was validated (RunConfig by default), whose fields name the allowed keys.
    """
    first = err.errors()[0]
    key = ".".join(str(part) for part in first["loc"]) or "config"
    if first["type"] == "extra_forbidden":
        owner = root or RunConfig
        for part in first["loc"][:-1]:
            annotation = owner.model_fields[part].annotation
            owner = next((t for t in (annotation, *get_args(annotation)) if hasattr(t, "model_fields")), annotation)
        return f"{key}: unknown key (allowed: {', '.join(owner.model_fields)})"
    message = first["msg"].removeprefix("Value error, ")
    if first["type"] == "value_error":  # a rule across keys; the message names them
        return message if not first["loc"] else f"{key}: {message}"
    if not first["loc"]:  # the whole document is no mapping: say what it is, never its text (a file read by mistake)
        return f"{key}: a mapping of settings is expected, got {type(first.get('input')).__name__}"
    return f"{key}: {message} (got {first.get('input')!r})"
