"""Helpers for the sweep tests: a tiny study spec, running `sweep` as a real process, reading a study."""
from __future__ import annotations

import copy
import os
import subprocess
import sys
import time
from pathlib import Path

import optuna
import pandas as pd
import yaml

TINY_SPEC = {
    "name": "tiny",
    "trials": 4,
    "run": {
        "model": {"name": "gpt", "depth": 1, "options": {"block_size": 16}},
        "data": {"kind": "synthetic-tokens", "seq_len": 16, "options": {"n_tokens": 20000}},
        "batch_size": 4,
        "steps": 20,
        "log_every": 5,
        "eval": {"every": 5, "batches": 2, "noise_scale_batches": 0},
    },
    "search": {
        "optimizer.lr": {"low": 1.0e-3, "high": 3.0e-2, "log": True},
        "schedule.warmup_fraction": {"low": 0.0, "high": 0.3},
    },
    "pruner": {"name": "none"},
}


# a study of the mlp on synthetic vectors: cheap enough for verify's grids of real runs
VERIFY_SPEC = {
    "name": "v",
    "trials": 2,
    "run": {"model": {"name": "mlp", "depth": 2, "width": 32},
            "data": {"kind": "synthetic-vectors", "options": {"in_features": 16, "classes": 10}},
            "optimizer": {"name": "adamw"}, "batch_size": 32, "steps": 40, "log_every": 10,
            "eval": {"every": 20, "batches": 2, "noise_scale_batches": 0}},
    "search": {"optimizer.lr": {"low": 1e-3, "high": 0.1, "log": True}},
    "pruner": {"name": "none"},
}


def spec_dict(**changes) -> dict:
    """The tiny spec; `changes` replace top-level keys, or merge into `run` when given as run={...}."""
    spec = copy.deepcopy(TINY_SPEC)
    for key, value in changes.items():
        if key == "run":
            for section, fields in value.items():
                if isinstance(fields, dict) and isinstance(spec["run"].get(section), dict):
                    spec["run"][section] = {**spec["run"][section], **fields}
                else:
                    spec["run"][section] = fields
        else:
            spec[key] = value
    return spec


def write_spec(folder: Path, **changes) -> Path:
    path = folder / "spec.yaml"
    path.write_text(yaml.safe_dump(spec_dict(**changes), sort_keys=False))
    return path


def sweep_env(root: Path, **extra) -> dict:
    env = {**os.environ, "SWEEP_ROOT": str(root), "PYTHONUNBUFFERED": "1", **extra}
    env.pop("CI_FORCE_TTY", None)
    return env


def sweep_cmd(*args) -> list[str]:
    return [sys.executable, "-m", "sweep", *map(str, args)]


def run_sweep(root: Path, *args, timeout: float = 240, env: dict | None = None, cwd: Path | None = None):
    """Run `sweep ARGS…` as its own process with SWEEP_ROOT=root; returns the CompletedProcess."""
    return subprocess.run(sweep_cmd(*args), env=env or sweep_env(root), cwd=cwd or root, capture_output=True,
                          text=True, timeout=timeout)


def load(root: Path, name: str = "tiny", width: int = 16, parametrization: str = "mup",
         storage: str | None = None) -> optuna.Study:
    url = storage or f"sqlite:///{root / name / 'optuna.db'}"
    if url.startswith("journal:"):
        from optuna.storages.journal import JournalFileBackend, JournalStorage

        url = JournalStorage(JournalFileBackend(url.removeprefix("journal:")))
    return optuna.load_study(study_name=f"{name}-w{width}-{parametrization}", storage=url)


def states(study: optuna.Study) -> dict[str, int]:
    out: dict[str, int] = {}
    for t in study.get_trials(deepcopy=False):
        out[t.state.name] = out.get(t.state.name, 0) + 1
    return out


def file_tree(folder: Path) -> set[str]:
    return {str(p.relative_to(folder)) for p in folder.rglob("*")}


def early_rows(root: Path, run: str = "w16-mup-t00000-s0") -> pd.DataFrame:
    """Step and wall time of the rows in a run's earliest curve part, in the tiny study, while it trains."""
    [folder] = (root / "tiny" / "curves").glob(f"study=*/kind=proxy/run={run}")
    return pd.read_parquet(min(folder.glob("part-*.parquet")), columns=["step", "wall_time"])


def kept(rows: pd.DataFrame, curve: pd.DataFrame) -> bool:
    """Whether `curve` still holds `rows` as they were logged. A run resumed from a checkpoint keeps the rows
    logged before it (compaction copies them); one started over logs those steps again at new wall times."""
    after = curve.set_index("step")["wall_time"].reindex(rows["step"])
    return after.tolist() == rows["wall_time"].tolist()


def wait_for(predicate, timeout: float, what: str):
    """Poll `predicate` every 0.2 s until it returns something true (returned), or fail after `timeout` s."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        if value := predicate():
            return value
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}")
