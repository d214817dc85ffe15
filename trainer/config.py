"""RunConfig: the single, complete, validated description of one training run.

A proxy trial is a RunConfig made from a study spec plus sampled values; a full run is a
RunConfig made by transfer. It round-trips through YAML exactly (`to_yaml`/`from_yaml`), and a
bad value or an unknown key is a `ConfigError` whose message is one line naming the key.

Every written config carries `schema_version`: the layout it was written in. A config without one is
version 1 (written before the field existed); one newer than SCHEMA_VERSION is refused before any other
check, since its unknown keys or changed meanings would otherwise be misread.
"""
from __future__ import annotations

import hashlib
import json
import math
import re
from pathlib import Path
from typing import Annotated, Any, Literal, get_args

import yaml
from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

from trainer import yaml_io
from trainer.secret_text import decoded, holds_secret

SCHEMA_VERSION = 1  # the RunConfig layout this code reads and writes; bump it when a field changes meaning
MAX_BATCH = 2**24  # examples per step a run takes at most


class ConfigError(ValueError):
    """A bad run config; str() is one line: `key.path: what is wrong (what is allowed)`."""


# A name that becomes a folder (a study, a run): never `.`, `..`, hidden or flag-like, and short enough that
# the folders made from it (NAME-w1024-mup, curve partitions) stay under the file system's 255 bytes.
NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9._-]{0,99}")
NAME_RULE = "1 to 100 letters, digits, '.', '_' or '-', not starting with '.' or '-'"


def check_name(value: str) -> str:
    """`value` if it is a NAME, else a ValueError stating the rule."""
    if not NAME.fullmatch(value):
        shown = value if len(value) <= 40 else value[:40] + "…"
        raise ValueError(f"a name of {NAME_RULE} (got {shown!r})")
    return value


Name = Annotated[str, AfterValidator(check_name)]


class Strict(BaseModel):
    # allow_inf_nan=False: a float field is finite whatever its bounds (`lr: .inf` passes `gt=0` otherwise)
    model_config = ConfigDict(extra="forbid", validate_assignment=True, allow_inf_nan=False)


# The parameter roles of the μP table (`proxies.parametrization.ROLES`, equal by test: config imports no torch).
ROLES = ("hidden", "input", "embedding", "readout", "tied", "bias", "norm", "other")
# far above any trained setting, far below where float32 overflows (3.4e38) in lr × multipliers × updates
LR_MAX = MULT_MAX = 1e4
Mult = Annotated[float, Field(gt=0, le=MULT_MAX)]  # a positive, finite multiplier (Strict refuses inf and nan)


def _one(value: float) -> bool:
    return value == 1.0


def _unset(value: RoleSettings) -> bool:
    return value == RoleSettings()


class InitMults(Strict):
    """`model.init.<role>`: each parameter of that role is multiplied by it after the model's own init (μP's or
    SP's), the same number at every width, so the init's width scaling is kept; 1 (the default) leaves it as drawn.
    A role left at 1 is absent from dumps (here and in `RoleMults`): a config states the multipliers it changes."""

    hidden: Mult = Field(1.0, exclude_if=_one)
    input: Mult = Field(1.0, exclude_if=_one)
    embedding: Mult = Field(1.0, exclude_if=_one)
    readout: Mult = Field(1.0, exclude_if=_one)
    tied: Mult = Field(1.0, exclude_if=_one)
    bias: Mult = Field(1.0, exclude_if=_one)
    norm: Mult = Field(1.0, exclude_if=_one)
    other: Mult = Field(1.0, exclude_if=_one)

    def given(self) -> dict[str, float]:
        """{role: multiplier} for the roles set away from 1."""
        return {role: v for role, v in self.model_dump().items() if v != 1.0}


class RoleSettings(Strict):
    """One role's multipliers: its LR is base LR × μP multiplier × lr_mult; its weight decay × weight_decay_mult."""

    lr_mult: Mult = 1.0
    weight_decay_mult: Mult = 1.0


class RoleMults(Strict):
    """`optimizer.roles.<role>`: per-role multipliers on top of the optimizer's μP table (roles as `sweep inspect`
    names them); every role at 1 (the default) gives the μP groups unchanged."""

    hidden: RoleSettings = Field(RoleSettings(), exclude_if=_unset)
    input: RoleSettings = Field(RoleSettings(), exclude_if=_unset)
    embedding: RoleSettings = Field(RoleSettings(), exclude_if=_unset)
    readout: RoleSettings = Field(RoleSettings(), exclude_if=_unset)
    tied: RoleSettings = Field(RoleSettings(), exclude_if=_unset)
    bias: RoleSettings = Field(RoleSettings(), exclude_if=_unset)
    norm: RoleSettings = Field(RoleSettings(), exclude_if=_unset)
    other: RoleSettings = Field(RoleSettings(), exclude_if=_unset)

    def given(self) -> dict[str, tuple[float, float]]:
        """{role: (lr_mult, weight_decay_mult)} for the roles set away from 1."""
        return {role: (s.lr_mult, s.weight_decay_mult) for role in ROLES
                if (s := getattr(self, role)) != RoleSettings()}


class ModelConfig(Strict):
    name: str = "gpt"  # zoo name or package.module:function
    width: int = Field(128, ge=1, le=2**20)
    depth: int = Field(2, ge=1, le=10**4)
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


class MuonSettings(Strict):
    """`torch.optim.Muon` on the hidden matrices; AdamW (optimizer.beta1, beta2, eps) on the rest.

    `adjust_lr_fn` is torch's update scale: "original" (Keller Jordan: lr · √max(1, A/B)) or
    "match_rms_adamw" (Moonlight, Liu et al. 2025: lr · 0.2 · √max(A, B), an update RMS like AdamW's), the
    default here because one `optimizer.lr` drives both the Muon and the AdamW parts."""

    momentum: float = Field(0.95, ge=0, lt=1)
    nesterov: bool = True
    ns_steps: int = Field(5, ge=1, lt=100)  # Newton–Schulz iterations (torch refuses 100 or more)
    adjust_lr_fn: Literal["original", "match_rms_adamw"] = "match_rms_adamw"


class LionSettings(Strict):
    """Lion (Chen et al. 2023, "Symbolic Discovery of Optimization Algorithms"): its own β's, not AdamW's."""

    beta1: float = Field(0.9, ge=0, lt=1)  # interpolation of momentum and gradient inside the sign
    beta2: float = Field(0.99, ge=0, lt=1)  # the momentum's decay


class ScheduleFreeSettings(Strict):
    """Schedule-Free AdamW (Defazio et al. 2024, "The Road Less Scheduled"); β's and ε are optimizer.beta1/2, eps."""

    warmup_steps: int = Field(0, ge=0)  # its own linear warmup, on top of schedule.warmup_*
    # polynomial weighting of the average: c_t ∝ t^r · lr_max^weight_lr_power, summed in Python floats (float64):
    # at most 10 each keeps t^r · lr^power below 1e160 for any step and LR this config allows
    r: float = Field(0.0, ge=0, le=10)
    weight_lr_power: float = Field(2.0, ge=0, le=10)


SETTINGS = {"muon": MuonSettings, "lion": LionSettings, "schedulefree_adamw": ScheduleFreeSettings}
# flat fields an optimizer does not read, and where its own value lives instead
UNUSED = {"muon": {"momentum": "optimizer.muon.momentum"},
          "lion": {"beta1": "optimizer.lion.beta1", "beta2": "optimizer.lion.beta2", "eps": "none: Lion has no ε",
                   "momentum": "optimizer.lion.beta2"},
          "adam_atan2": {"eps": "none: atan2 replaces the ε division", "momentum": "optimizer.beta1"},
          "schedulefree_adamw": {"momentum": "optimizer.beta1"},
          "sgd": {"beta1": "optimizer.momentum", "beta2": "none: SGD has no second moment",
                  "eps": "none: SGD divides by nothing"},
          "adamw": {"momentum": "optimizer.beta1"}}


class OptimizerConfig(Strict):
    """The optimizer; the section named after it (`muon`, `lion`, `schedulefree_adamw`) holds its own settings,
    filled with their defaults when absent, and is refused under another optimizer."""

    name: Literal["adamw", "sgd", "muon", "lion", "schedulefree_adamw", "adam_atan2"] = "adamw"
    lr: float = Field(2 ** -6, gt=0, le=LR_MAX)  # base LR: the LR at the base width, before μP multipliers
    weight_decay: float = Field(0.0, ge=0)
    wd_mode: Literal["coupled", "independent"] = "coupled"
    decay_embeddings: bool = False
    beta1: float = Field(0.9, ge=0, lt=1)
    beta2: float = Field(0.95, ge=0, lt=1)
    eps: float = Field(1e-8, gt=0)
    momentum: float = Field(0.9, ge=0, lt=1)  # SGD only
    grad_clip: float | None = Field(1.0, gt=0)  # max global grad norm; null: no clipping
    roles: RoleMults = Field(RoleMults(), exclude_if=lambda v: not v.given())  # per-role LR and decay multipliers
    # absent from dumps when unset: configs and run ids written before these sections existed stay as they were
    muon: MuonSettings | None = Field(None, exclude_if=lambda v: v is None)
    lion: LionSettings | None = Field(None, exclude_if=lambda v: v is None)
    schedulefree_adamw: ScheduleFreeSettings | None = Field(None, exclude_if=lambda v: v is None)

    @model_validator(mode="before")
    @classmethod
    def _own_section(cls, data: Any) -> Any:
        """The chosen optimizer's section, with its defaults, so the written config states every setting."""
        if isinstance(data, dict) and isinstance(data.get("name"), str) and data["name"] in SETTINGS \
                and data.get(data["name"]) is None:
            data = {**data, data["name"]: {}}
        return data

    @field_validator("beta1", "beta2", "eps", "momentum")
    @classmethod
    def _read_by_optimizer(cls, value: float, info: ValidationInfo) -> float:
        instead = UNUSED.get(info.data.get("name"), {}).get(info.field_name)
        if instead and value != cls.model_fields[info.field_name].default:
            raise ValueError(f"{info.data['name']} does not read it (instead: {instead}); leave it at its default")
        return value

    @field_validator("muon", "lion", "schedulefree_adamw")
    @classmethod
    def _section_of_name(cls, value: Any, info: ValidationInfo) -> Any:
        if value is not None and info.data.get("name") != info.field_name:
            raise ValueError(f"settings of {info.field_name}, but optimizer.name is {info.data.get('name')} "
                             f"(give this section only with name {info.field_name})")
        return value

    def settings(self) -> BaseModel | None:
        """The chosen optimizer's own settings (None for adamw, sgd and adam_atan2, which have none)."""
        return getattr(self, self.name, None) if self.name in SETTINGS else None


class ScheduleConfig(Strict):
    kind: Literal["cosine", "wsd", "linear", "constant"] = "cosine"
    warmup_steps: int | None = Field(None, ge=0)
    warmup_fraction: float | None = Field(None, ge=0, lt=1)
    min_lr_ratio: float = Field(0.1, ge=0, le=1)
    decay_fraction: float = Field(0.2, gt=0, le=1)  # wsd
    decay_shape: Literal["linear", "cosine", "sqrt"] = "linear"  # wsd

    @model_validator(mode="after")
    def _one_warmup(self) -> ScheduleConfig:
        if self.warmup_steps is not None and self.warmup_fraction is not None:
            raise ValueError("warmup_steps and warmup_fraction: give one, not both")
        return self

    def warmup_for(self, total_steps: int) -> int:
        if self.warmup_steps is not None:
            return self.warmup_steps
        return round((self.warmup_fraction or 0.0) * total_steps)


class EvalConfig(Strict):
    every: int = Field(100, ge=1)  # steps between evaluations (and one at the end)
    batches: int = Field(8, ge=1)  # held-out batches per evaluation, the same ones every time
    # the held-out batches' seed; null: the run's seed. Runs that share it are judged on the same batches, so
    # their difference is training's alone (a study's seeds beyond the first take the first's)
    seed: int | None = Field(None, ge=0)
    noise_scale_batches: int = Field(8, ge=0)  # small batches for B_simple at each eval; 0: off, else ≥ 2

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
    window: int = Field(100, ge=2)  # rolling window of accepted losses; detection starts once it is full
    rewind_steps: int = Field(100, ge=1)  # N: restore the newest ring checkpoint at least N steps before the spike
    ring_every: int = Field(50, ge=1)  # steps between ring checkpoints
    ring_size: int = Field(4, ge=2)  # ring checkpoints kept on disk
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


# beyond the shared rule, in a tracking URI: any user info (a token alone before `@`), and query keys that carry a
# signature or credential (`?auth=`, `?sig=` of a SAS URL, `?x-api-key=`)
CREDENTIAL_IN_URL = re.compile(r"://[^/?#]*@|[?&;#](?:auth\w*|sig|signature|credential\w*|[\w-]*key)=", re.IGNORECASE)


class MlflowConfig(Strict):
    """An MLflow tracking server (or a local `file:`/`sqlite:` store). Credentials come only from MLflow's own
    environment variables (MLFLOW_TRACKING_USERNAME, MLFLOW_TRACKING_PASSWORD, MLFLOW_TRACKING_TOKEN)."""

    tracking_uri: str = Field(min_length=1, max_length=2000)
    experiment: Name | None = None  # default: output.study

    @field_validator("tracking_uri")
    @classmethod
    def _no_secret(cls, value: str) -> str:
        if holds_secret(value) or CREDENTIAL_IN_URL.search(decoded(value).replace("\\", "/")):  # never shown
            raise ValueError("holds a password or token, which a config would write to disk; give the URI without "
                             "it and set MLFLOW_TRACKING_USERNAME/MLFLOW_TRACKING_PASSWORD (or MLFLOW_TRACKING_TOKEN) "
                             "in the environment")
        return value


class WandbConfig(Strict):
    """Weights & Biases; `online` reads its key from the environment (WANDB_API_KEY), never from a config."""

    mode: Literal["offline", "online"] = "offline"
    project: Name | None = None  # default: output.study
    dir: str | None = None  # where its run files go; default: the run's folder


class LoggingConfig(Strict):
    """Trackers that mirror the curve (Parquet stays the source of truth): each logged row, the guard's events and
    the RunConfig as parameters. Each needs its optional dependency (`pip install 'mup-sweep[tensorboard]'`, …)."""

    tensorboard: str | None = Field(None, min_length=1)  # a folder: events go to DIR/STUDY/RUN
    mlflow: MlflowConfig | None = None
    wandb: WandbConfig | None = None

    def asked(self) -> list[str]:
        return [name for name in ("tensorboard", "mlflow", "wandb") if getattr(self, name) is not None]


class OutputConfig(Strict):
    root: str = "studies"
    study: Name = "default"
    kind: Literal["proxy", "full"] = "proxy"
    run: Name | None = None  # default: derived from the config's content


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
    tokens: int | None = Field(None, ge=1, le=10**15)  # budget in tokens; steps = ceil(tokens / tokens per step)
    precision: Literal["auto", "fp32", "bf16", "fp16"] = "auto"  # auto: bf16 autocast on CUDA, fp32 on CPU
    compile: bool = False
    seed: int = Field(0, ge=0)
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
            raise ConfigError(f"config: not valid YAML ({' '.join(str(err).split())})") from None
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
    return f"{key}: {message} (got {first.get('input')!r})"
