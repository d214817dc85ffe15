"""RunConfig: the single, complete, validated description of one training run.

A proxy trial is a RunConfig made from a study spec plus sampled values; a full run is a
RunConfig made by transfer. It round-trips through YAML exactly (`to_yaml`/`from_yaml`), and a
bad value or an unknown key is a `ConfigError` whose message is one line naming the key.

Every written config carries `schema_version`: the layout it was written in. A config without one is
version 1 (written before the field existed); one newer than SCHEMA_VERSION is refused before any other
check, since its unknown keys or changed meanings would otherwise be misread.
"""
from trainer.config._base import NAME_RULE, ConfigError, Name, Strict, check_name
from trainer.config._logging import CREDENTIAL_IN_URL, LoggingConfig, MlflowConfig, WandbConfig
from trainer.config._optimizer import SETTINGS, UNUSED, OptimizerConfig, ScheduleConfig
from trainer.config._roles import LR_MAX, MULT_MAX, ROLES, InitMults, RoleMults, RoleSettings
from trainer.config._run import (
    MAX_BATCH,
    MAX_DEPTH,
    MAX_TOKENS,
    MAX_WIDTH,
    PG_TIMEOUT_S,
    SCHEMA_VERSION,
    CheckpointConfig,
    DataConfig,
    EvalConfig,
    GuardConfig,
    ModelConfig,
    OutputConfig,
    ParallelConfig,
    Provenance,
    RunConfig,
    SignalsConfig,
    one_line,
)

__all__ = ["CREDENTIAL_IN_URL", "LR_MAX", "MAX_BATCH", "MAX_DEPTH", "MAX_TOKENS", "MAX_WIDTH", "MULT_MAX", "NAME_RULE",
           "PG_TIMEOUT_S", "ROLES",
           "SCHEMA_VERSION", "SETTINGS", "UNUSED", "CheckpointConfig", "ConfigError", "DataConfig", "EvalConfig",
           "GuardConfig", "InitMults", "LoggingConfig", "MlflowConfig", "ModelConfig", "Name", "OptimizerConfig",
           "OutputConfig", "ParallelConfig", "Provenance", "RoleMults", "RoleSettings", "RunConfig",
           "ScheduleConfig", "SignalsConfig", "Strict", "WandbConfig", "check_name", "one_line"]
