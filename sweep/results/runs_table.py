"""The `runs` table: one row per run folder (ROOT/SWEEP/runs/RUN) of a scope, from its config.yaml and
result.json; a run without a result is `unfinished`, its last step read off its curve parts' names."""
from __future__ import annotations

from pathlib import Path

import pandas as pd

from sweep.paths import inside_root, read_json
from sweep.results.scope import Scope
from trainer.config import ConfigError, RunConfig
from trainer.curves import PART

COLUMNS = ("run", "sweep", "kind", "model", "width", "depth", "parametrization", "batch_size", "lr", "weight_decay",
           "steps", "tokens", "seed", "status", "last_step", "train_loss", "val_loss", "reason",
           "provenance_study", "provenance_trial", "provenance_trial_value", "created_by", "path")


def run_rows(scope: Scope) -> pd.DataFrame:
    """`sweep` is the run's output.study (its curves' `study` partition); `steps`/`tokens` its budget;
    `provenance_study`/`provenance_trial` the Optuna trial it was made from (a proxy trial's own runs,
    and a full run transferred from it), so `runs` joins `trials` on (study, number)."""
    rows = [run_row(config.parent, scope.root) for config in scope.files("runs/*/config.yaml")]
    return pd.DataFrame(rows, columns=COLUMNS)


def run_row(run_dir: Path, root: Path) -> dict:
    try:
        cfg = RunConfig.load(run_dir / "config.yaml")
    except ConfigError as err:
        raise ConfigError(f"runs: {run_dir / 'config.yaml'}: {err}") from None
    result = inside_root(run_dir / "result.json", root, "runs")
    done = read_json(result, "runs") or {}
    curve = (run_dir.parent.parent / "curves" / f"study={cfg.output.study}" / f"kind={cfg.output.kind}"
             / f"run={run_dir.name}")
    prov = cfg.provenance
    return {"run": run_dir.name, "sweep": cfg.output.study, "kind": cfg.output.kind, "model": cfg.model.name,
            "width": cfg.model.width, "depth": cfg.model.depth, "parametrization": cfg.model.parametrization,
            "batch_size": cfg.batch_size, "lr": cfg.optimizer.lr, "weight_decay": cfg.optimizer.weight_decay,
            "steps": cfg.steps, "tokens": cfg.tokens, "seed": cfg.seed,
            "status": done.get("status", "unfinished"),
            "last_step": done.get("step", last_logged_step(curve)),
            "train_loss": done.get("train_loss"), "val_loss": done.get("val_loss"), "reason": done.get("reason"),
            "provenance_study": prov.study, "provenance_trial": prov.trial, "provenance_trial_value": prov.trial_value,
            "created_by": prov.created_by, "path": str(run_dir)}


def last_logged_step(folder: Path) -> int | None:
    """The last step of a run's curve, from its part files' names (part-FIRST-LAST.parquet)."""
    lasts = [int(m.group(2)) for p in folder.glob("part-*.parquet") if (m := PART.fullmatch(p.name))]
    return max(lasts, default=None)
