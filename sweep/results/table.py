"""A study's trials as a ranked table: rank, value, params, state, steps run, duration, reason."""
from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

import optuna
import pandas as pd
from optuna.distributions import CategoricalDistribution
from rich.table import Table

from sweep.errors import plain_text
from sweep.study.lookup import trial_runs

if TYPE_CHECKING:
    from rich.text import Text

COLUMNS = ("rank", "trial", "value", "state", "steps", "duration_s")


def trials_frame(study: optuna.Study, root: Path) -> pd.DataFrame:
    """One row per trial; completed trials ranked by value (1 = best), the others after them unranked; its runs'
    folders under the results `root` (`trial_runs`), never the root a copied storage was written under."""
    rows = []
    for t in study.get_trials(deepcopy=False):
        finished = t.datetime_complete and t.datetime_start
        duration = (t.datetime_complete - t.datetime_start).total_seconds() if finished else None
        rows.append({"trial": t.number, "value": t.value if t.state == optuna.trial.TrialState.COMPLETE else None,
                     "state": t.state.name, "steps": t.user_attrs.get("steps"), "duration_s": duration,
                     **{f"params.{k}": v for k, v in t.params.items()},
                     "reason": t.user_attrs.get("error") or t.user_attrs.get("reason"),
                     "runs": [str(run) for run in trial_runs(t, root)]})
    frame = pd.DataFrame(rows)
    if frame.empty:
        return pd.DataFrame(columns=[*COLUMNS, "reason", "runs"])
    frame["rank"] = frame["value"].rank(method="min").astype("Int64")
    frame = frame.sort_values(["rank", "trial"], na_position="last", kind="stable")
    params = [c for c in frame.columns if c.startswith("params.")]
    return frame[[*COLUMNS, *params, "reason", "runs"]].reset_index(drop=True)


def optimizer_choices(study: optuna.Study) -> list:
    """The choices of a searched `optimizer.name`, as the trials that drew one were given them."""
    for t in study.get_trials(deepcopy=False):
        distribution = t.distributions.get("optimizer.name")
        if isinstance(distribution, CategoricalDistribution):
            return list(distribution.choices)
    return []


def optimizer_ranking(frame: pd.DataFrame, choices: list = ()) -> pd.DataFrame:
    """When the optimizer was searched: each optimizer ranked by its best completed trial (its value and number)
    with how many of its trials completed, then, unranked with no trial, the choices none of whose trials
    completed (`choices`: every choice searched, drawn or not); empty otherwise."""
    column, columns = "params.optimizer.name", ["rank", "optimizer", "best", "trial", "completed"]
    if column not in frame:
        return pd.DataFrame(columns=columns)
    done = frame.dropna(subset=["value"])
    best = done.sort_values(["value", "trial"], kind="stable").groupby(column, sort=False).first()
    counts = done[column].value_counts()
    names = [*best.index, *(c for c in dict.fromkeys([*choices, *frame[column].dropna()]) if c not in best.index)]
    return pd.DataFrame({
        "rank": pd.array([*range(1, len(best) + 1), *[pd.NA] * (len(names) - len(best))], dtype="Int64"),
        "optimizer": names, "best": [best["value"].get(n) for n in names],
        "trial": pd.array([best["trial"].get(n) for n in names], dtype="Int64"),
        "completed": [int(counts.get(n, 0)) for n in names]}, columns=columns)


def rich_table(frame: pd.DataFrame, title: str) -> Table:
    """Headers and cells as text, not Rich markup: a branch parameter's `optimizer.lr[lion]` keeps its `[lion]`."""
    table = Table(title=title, title_justify="left")
    shown = [c for c in frame.columns if c != "runs"]
    for column in shown:
        table.add_column(text(column.removeprefix("params.")), overflow="fold")
    for _, row in frame.iterrows():
        table.add_row(*(text(cell(row[c])) for c in shown))
    return table


def text(value) -> Text:
    """A table's header or cell (`cell`'s format) as `plain_text`: no markup read, no control character shown."""
    return plain_text(value if isinstance(value, str) else cell(value))


def cell(value) -> str:
    if value is None or (isinstance(value, float) and pd.isna(value)) or value is pd.NA:
        return "-"
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


def to_json(frames: dict[str, pd.DataFrame]) -> str:
    return json.dumps({name: json.loads(frame.to_json(orient="records")) for name, frame in frames.items()}, indent=2)
