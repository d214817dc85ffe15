"""Trackers: TensorBoard, MLflow and W&B receive a mirror of a run's curve; Parquet stays the source of truth.

Rank 0 sends each logged row (its numbers: losses, LR, throughput, signals) at its step, the spike guard's events
as text at theirs, and once the RunConfig (MLflow params, W&B config, TensorBoard text), tagged with the study, kind,
run and, for a proxy trial, the trial number.

Every logged step reaches each tracker once, also across a kill and resume. A resume replays the steps after its
checkpoint, whose rows were already sent; so `RUN_DIR/trackers.json` records the step being sent before a row goes
out and the last step sent after it has gone to every tracker (TensorBoard's events flushed first), with the MLflow
run and W&B run ids that the resumed run continues; rows at or below the last step sent are not sent again. A kill
between the two records leaves one step in doubt, settled per tracker: TensorBoard's writer reopens with that
`purge_step` (TensorBoard hides the killed run's events from it on) and receives it again, MLflow receives it again
unless its history has it, W&B not again (its service may have written it: at most once). After a guard rewind the
trackers keep the abandoned branch's rows (a tracker cannot take a point back) and receive the rewound run from the
first step past them; the rewind itself is one of the events they receive.

A tracker that fails (a server down, a full disk) never stops training: its first error is one line on stderr and it
receives nothing more in this process. A tracker asked for whose package is missing, or whose folder cannot be
written, is bad input (`check_trackers`).
"""
from __future__ import annotations

import importlib.util
import json
import os
import sys
import time
import uuid
from pathlib import Path

from trainer.atomic import atomic_path
from trainer.config import ConfigError, RunConfig
from trainer.folders import check_writable

PACKAGES = {"tensorboard": "tensorboard", "mlflow": "mlflow", "wandb": "wandb"}  # tracker → module it imports
STATIC = ("trial", "width", "depth", "batch_size")  # row columns that are the run's tags, not curves
STATE_FILE = "trackers.json"


def check_trackers(cfg: RunConfig) -> None:
    """Each tracker the config asks for can start: its package imports (else a ConfigError naming it and its extra)
    and its folder (`tensorboard`, `wandb.dir`) can be written."""
    if cfg.logging is None:
        return
    if cfg.logging.tensorboard:
        check_writable(TensorBoard.folder(cfg), "logging.tensorboard")
    if cfg.logging.wandb and cfg.logging.wandb.dir:
        check_writable(Path(cfg.logging.wandb.dir), "logging.wandb.dir")
    for name in cfg.logging.asked():
        try:
            found = importlib.util.find_spec(PACKAGES[name])
        except (ImportError, ValueError):  # a broken install counts as none
            found = None
        if found is None:
            raise ConfigError(f"logging.{name}: {PACKAGES[name]} is not installed; pip install 'mup-sweep[{name}]', "
                              f"or remove logging.{name}")


def flat(tree: dict, prefix: str = "") -> dict[str, str]:
    """A nested config as dotted keys with string values (lists and dicts of options as JSON)."""
    out: dict[str, str] = {}
    for key, value in tree.items():
        if isinstance(value, dict) and value:
            out.update(flat(value, f"{prefix}{key}."))
        else:
            out[f"{prefix}{key}"] = value if isinstance(value, str) else json.dumps(value)
    return out


def tags(cfg: RunConfig) -> dict[str, str]:
    found = {"study": cfg.provenance.study or cfg.output.study, "kind": cfg.output.kind, "run": cfg.run_id()}
    if cfg.provenance.trial is not None:
        found["trial"] = str(cfg.provenance.trial)
    return found


class TensorBoard:
    """Scalars and text in `DIR/STUDY/RUN/` (torch's SummaryWriter), flushed after each row."""

    name = "tensorboard"

    def __init__(self, cfg: RunConfig, ids: dict, doubt: int | None):
        from torch.utils.tensorboard import SummaryWriter

        self.writer = SummaryWriter(str(self.folder(cfg)), purge_step=doubt)
        if "tensorboard" not in ids:
            self.writer.add_text("tags", json.dumps(tags(cfg)), 0)
            self.writer.add_text("config", "\n".join("    " + line for line in cfg.to_yaml().splitlines()), 0)
            ids["tensorboard"] = str(self.writer.log_dir)

    @staticmethod
    def folder(cfg: RunConfig) -> Path:
        return Path(cfg.logging.tensorboard) / cfg.output.study / cfg.run_id()

    def arrived(self, step: int, key: str) -> bool:
        return False  # the writer purged it on opening: it is sent again

    def log(self, step: int, metrics: dict[str, float]) -> None:
        for key, value in metrics.items():
            self.writer.add_scalar(key, value, step)
        self.writer.flush()

    def event(self, step: int, line: str) -> None:
        self.writer.add_text("guard", line, step)
        self.writer.flush()

    def close(self, status: str | None) -> None:
        self.writer.close()


class Mlflow:
    """One MLflow run per training run (named by it, in experiment `experiment` or the study), continued on resume;
    the RunConfig as params, the study, kind, run and trial as tags."""

    name = "mlflow"
    STATUS = {"completed": "FINISHED", "diverged": "FAILED", "pruned": "KILLED"}

    # MLflow's client retries a request 7 times with backoff and waits 120 s for each: an unreachable server held
    # a 3-step run for 4 minutes, deaf to SIGTERM. A user's own MLFLOW_HTTP_* settings are kept.
    PATIENCE = {"MLFLOW_HTTP_REQUEST_MAX_RETRIES": "1", "MLFLOW_HTTP_REQUEST_TIMEOUT": "5"}

    def __init__(self, cfg: RunConfig, ids: dict, doubt: int | None):
        for variable, value in self.PATIENCE.items():
            os.environ.setdefault(variable, value)
        from mlflow import MlflowClient

        settings = cfg.logging.mlflow
        self.client = MlflowClient(settings.tracking_uri)
        self.run_id = ids.get("mlflow")
        if self.run_id is None:  # a new run; a resumed one continues its own
            experiment = settings.experiment or cfg.output.study
            found = self.client.get_experiment_by_name(experiment)
            experiment_id = found.experiment_id if found else self.client.create_experiment(experiment)
            self.run_id = self.client.create_run(experiment_id, run_name=cfg.run_id(), tags=tags(cfg)).info.run_id
            self.log_params(flat(cfg.model_dump(mode="json")))
            ids["mlflow"] = self.run_id

    def log_params(self, params: dict[str, str]) -> None:
        from mlflow.entities import Param

        items = [Param(key, value[:6000]) for key, value in params.items()]
        for i in range(0, len(items), 100):  # MLflow takes at most 100 params per batch
            self.client.log_batch(self.run_id, params=items[i:i + 100])

    def arrived(self, step: int, key: str) -> bool:
        return any(m.step == step for m in self.client.get_metric_history(self.run_id, key))

    def log(self, step: int, metrics: dict[str, float]) -> None:
        from mlflow.entities import Metric

        now = int(time.time() * 1000)
        self.client.log_batch(self.run_id, metrics=[Metric(k, v, now, step) for k, v in metrics.items()])

    def event(self, step: int, line: str) -> None:
        self.client.set_tag(self.run_id, f"guard.step_{step}", line)

    def close(self, status: str | None) -> None:
        if status is not None:  # a preempted or killed run stays RUNNING: its resume continues it
            self.client.set_terminated(self.run_id, self.STATUS[status])


class Wandb:
    """One W&B run per training run (id kept for resume; group: the study; job type: the kind); the RunConfig as
    its config. Files go to `dir`, else the run's folder. No console capture, system metrics or metadata (W&B's
    metadata would record the command line, the host and the git remote, which may hold a token)."""

    name = "wandb"

    def __init__(self, cfg: RunConfig, ids: dict, doubt: int | None):
        import wandb

        settings = cfg.logging.wandb
        ids.setdefault("wandb", uuid.uuid4().hex[:12])
        folder = Path(settings.dir) if settings.dir else cfg.run_dir()
        folder.mkdir(parents=True, exist_ok=True)
        self.run = wandb.init(project=settings.project or cfg.output.study, id=ids["wandb"], name=cfg.run_id(),
                              group=cfg.provenance.study or cfg.output.study, job_type=cfg.output.kind,
                              tags=[f"{k}:{v}" for k, v in tags(cfg).items()][:64], config=cfg.model_dump(mode="json"),
                              dir=str(folder), mode=settings.mode, resume="allow", reinit="create_new",
                              settings=wandb.Settings(console="off", silent=True, x_disable_stats=True,
                                                      x_disable_meta=True, x_disable_machine_info=True))

    def arrived(self, step: int, key: str) -> bool:
        return True  # unknowable here (its service writes the file): never twice, maybe not at all

    def log(self, step: int, metrics: dict[str, float]) -> None:
        self.run.log(metrics, step=step)

    def event(self, step: int, line: str) -> None:
        self.run.log({"guard": line}, step=step)

    def close(self, status: str | None) -> None:
        self.run.finish(exit_code=0 if status in ("completed", "pruned") else 1)


KINDS = {"tensorboard": TensorBoard, "mlflow": Mlflow, "wandb": Wandb}


class Trackers:
    """The trackers a run's config asks for, on rank 0; each row and event at a step past `sent`, once."""

    def __init__(self, cfg: RunConfig, run_dir: Path):
        self.path = run_dir / STATE_FILE
        recorded = json.loads(self.path.read_text()) if self.path.exists() else {}
        self.sent: int = recorded.get("sent", 0)
        self.ids: dict = recorded.get("ids", {})
        self.doubt: int | None = recorded.get("sending") if (recorded.get("sending") or 0) > self.sent else None
        self.live: list = []
        for name in cfg.logging.asked() if cfg.logging is not None else ():
            self.guarded(name, lambda name=name: self.live.append(KINDS[name](cfg, self.ids, self.doubt)))
        if self.live:
            self.save(sending=self.doubt)  # still in doubt until it is sent again

    def guarded(self, name: str, call) -> None:
        """Run one tracker's call; its first failure is one line on stderr and the tracker is dropped."""
        try:
            call()
        except Exception as err:  # noqa: BLE001 — any failure of a tracker leaves training alone
            self.live = [t for t in self.live if t.name != name]
            found = " ".join(str(err).split())[:200]
            print(f"warning: logging.{name} failed ({type(err).__name__}: {found}); it receives nothing more from "
                  "this run, whose curve stays in Parquet", file=sys.stderr, flush=True)

    def log(self, row: dict) -> None:
        """The row's numbers at its step, unless that step was sent before (a resume replaying it)."""
        step = row["step"]
        if step <= self.sent or not self.live:
            return
        metrics = {k: float(v) for k, v in row.items()
                   if k != "step" and k not in STATIC and isinstance(v, (int, float)) and not isinstance(v, bool)}
        self.save(sending=step)
        for tracker in list(self.live):
            self.guarded(tracker.name, lambda t=tracker: self.send(t, step, metrics))
        self.sent = step
        self.save()

    def send(self, tracker, step: int, metrics: dict[str, float]) -> None:
        """The row to one tracker, unless it is the step in doubt and the tracker has it."""
        if step != self.doubt or not tracker.arrived(step, next(iter(metrics), "train_loss")):
            tracker.log(step, metrics)

    def event(self, event: dict) -> None:
        """A guard event (spike, skip, rewind, stop) as one line of text at its step."""
        step = event["step"]
        if step <= self.sent:
            return
        line = json.dumps({k: v for k, v in event.items() if v is not None})
        for tracker in list(self.live):
            self.guarded(tracker.name, lambda t=tracker: t.event(step, line))

    def save(self, sending: int | None = None) -> None:
        with atomic_path(self.path) as tmp:
            tmp.write_text(json.dumps({"sent": self.sent, "sending": sending, "ids": self.ids}))

    def close(self, status: str | None = None) -> None:
        """End each tracker's run: `status` completed, diverged or pruned; None for a run that stops unfinished."""
        for tracker in list(self.live):
            self.guarded(tracker.name, lambda t=tracker: t.close(status))
        self.live = []
