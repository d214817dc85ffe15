"""The trackers' section: TensorBoard, MLflow and W&B mirrors of the curve, with no credential in a config."""
from __future__ import annotations

import re
from typing import Literal

from pydantic import Field, field_validator

from trainer.config._base import Name, Strict
from trainer.secret_text import decoded, holds_secret

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
