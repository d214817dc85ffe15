"""The report's opening: what a user decides from, before any diagnostic.

1. The settings: each transferred config's changed settings beside the textbook's (the rules a fitted law replaced).
2. The laws: each fitted law as prior → measured → posterior, as the transfer recorded them in the run's
   provenance (the published prior, the ladder's measurement and their conjugate update: sweep/rules/prior.py).
3. The prediction: the predicted final loss and its interval, and the full run's curve on its predicted band where
   the trainer logged one (predicted_low/high beside val_loss: trainer/predicted.py).
4. The verdicts: the run inside its band or the step where it left it (sweep/forecast/live.py), with what to do.
"""
from __future__ import annotations

import html
import math
from collections.abc import Callable
from pathlib import Path

import matplotlib.pyplot as plt
import pandas as pd

from sweep.forecast.live import apart, departure, latest_final
from sweep.paths import inside_root
from sweep.results.compare import total_steps
from sweep.results.runs_table import run_rows
from sweep.results.scope import Scope
from sweep.rules.prior import nan, prior_for, update
from trainer.config import RunConfig
from trainer.curves import read_run


def settings_table(config: RunConfig) -> str:
    rows = "".join(f"<tr><td>{html.escape(r['field'])}</td><td>{_num(r['before'])}</td><td>{_num(r['after'])}</td>"
                   f"<td>{html.escape(str(r['rule']))}</td></tr>" for r in config.provenance.rules)
    for law in config.provenance.laws:
        textbook = ", ".join(f"{k}: {_num(v)}" for k, v in (law.get("textbook") or {}).items())
        rows += (f"<tr><td>{html.escape(law['param'])}</td><td>{_num(law['before'])}</td><td><b>{_num(law['after'])}"
                 f"</b></td><td>fitted across {html.escape(law['axis'])}; textbook {html.escape(textbook)}</td></tr>")
    return ("<table><tr><th>setting</th><th>proxy</th><th>full run</th><th>rule (textbook beside the fitted)</th></tr>"
            f"{rows}</table>")


def laws_table(config: RunConfig) -> str:
    rows = "".join(law_row(law) for law in config.provenance.laws)
    if not rows:
        return "<p>no fitted law was applied (the transfer used the textbook rules)</p>"
    return ("<table><tr><th>law (slope of log₂ optimum)</th><th>prior (95 %)</th><th>measured (95 %)</th>"
            f"<th>posterior (95 %)</th></tr>{rows}</table>")


def law_row(law: dict) -> str:
    """One law as the transfer recorded it (sweep/rules/fitted.py's Law.record: prior, measurement, posterior); a
    provenance written before laws carried them: the published prior's update of the measured interval, computed
    by the same rule (sweep/rules/prior.py)."""
    measured = law.get("measurement") or dict(zip(("slope", "low", "high"), (law["slope"], *law["interval_slope"]),
                                                  strict=True))
    if "posterior" not in law:
        law = {**law, **update(measured, prior_for(law["param"], law["axis"]))}
    prior, post = law.get("prior"), law["posterior"]
    shown_prior = "none" if prior is None else \
        f"{_span(prior['centre'], prior['low'], prior['high'])} ({html.escape(prior['source'])})"
    weight = post.get("weight")
    share = f", measurement weight {weight:.0%}" if prior and weight is not None and math.isfinite(weight) else ""
    return (f"<tr><td>{html.escape(law['param'])} × {html.escape(law['axis'])}</td><td>{shown_prior}</td>"
            f"<td>{_span(measured['slope'], measured['low'], measured['high'])}</td>"
            f"<td><b>{_span(post['centre'], post['low'], post['high'])}</b>{share}</td></tr>")


def _span(centre: float, low: float | None, high: float | None) -> str:
    ends = (nan(low), nan(high))
    return f"{centre:.3f} [{ends[0]:.3f}, {ends[1]:.3f}]" if all(map(math.isfinite, ends)) else \
        f"{centre:.3f} (no interval)"


def band_figure(name: str, rows: pd.DataFrame, total_steps: int) -> plt.Figure:
    """The run's validation curve on its predicted band, and the final loss its own curve predicted at each
    evaluation (either where logged)."""
    figure, ax = plt.subplots(figsize=(7, 3.6))
    evals = rows.dropna(subset=["val_loss"]).sort_values("step")
    if {"predicted_low", "predicted_high"} <= set(evals.columns):
        banded = evals.dropna(subset=["predicted_low", "predicted_high"])
        x = banded["step"] / total_steps
        ax.fill_between(x, banded["predicted_low"], banded["predicted_high"], alpha=0.25, label="predicted (95 %)")
        ax.plot(x, banded["predicted_val_loss"], "--", label="predicted")
    if "predicted_final" in evals.columns:
        own = evals.dropna(subset=["predicted_final"])
        final, low, high = own["predicted_final"], own["predicted_final_low"], own["predicted_final_high"]
        ax.errorbar(own["step"] / total_steps, final, yerr=[final - low, high - final], fmt="s", ms=3, capsize=2,
                    label="final loss, from its own curve (95 %)")
    ax.plot(evals["step"] / total_steps, evals["val_loss"], "o-", ms=3, label=f"{name} (measured)")
    ax.set_xlabel("fraction of the run")
    ax.set_ylabel("validation loss")
    ax.legend()
    return figure


def band_line(prediction: dict) -> str:
    """Whether the transfer gave the full run a live band to be held to, and why not (one line, plain text)."""
    curve = (prediction or {}).get("curve")
    if curve:
        return (f"live band from {curve['fraction'][0]:.0%} of the run to its end: the trainer logs it beside "
                "val_loss, and the run is flagged at its first evaluation outside it")
    if not prediction:
        return "no live band: no predicted loss to draw it from (`sweep verify` across width and tokens makes one)"
    return f"no live band: {prediction.get('no_band') or 'the transfer that wrote this config recorded none'}"


def verdict(rows: pd.DataFrame | None, total_steps: int, prediction: dict | None = None) -> str:
    """The full run against its band: where it left it, or that it stayed inside (without a band logged, why:
    `prediction`, the run's provenance.prediction); then the final loss its own curve predicted by half the run
    (sweep/forecast/live.py: `ratios`) and the final loss it reached."""
    off = departure(rows, total_steps)
    if rows is None or "predicted_low" not in rows:
        held = (html.escape(band_line(prediction)) if prediction is not None and not prediction.get("curve") else
                "no predicted curve was logged beside this run yet")
    elif off is None:
        held = "inside its predicted band at every evaluation"
    else:
        held = (f"<b>left its predicted band at step {off['step']} ({off['fraction']:.0%} of the run), {off['side']}: "
                f"{off['val_loss']:.4f} vs [{off['low']:.4f}, {off['high']:.4f}]</b> — {html.escape(off['advice'])}")
    return held + own_said(rows, total_steps, prediction or {})


def own_said(rows: pd.DataFrame | None, total_steps: int, prediction: dict) -> str:
    """What the run's own curve predicted by half the run, whether that lay wholly outside the interval it was held
    to, and where it ended."""
    if rows is None:
        return ""
    own = latest_final(rows, total_steps / 2)
    side = apart(own, prediction) if own and "loss" in prediction else None
    said = (f"; at step {own['step']} its own curve predicted a final {own['loss']:.4f} "
            f"[{own['low']:.4f}, {own['high']:.4f}]" + (f", <b>{side} the interval it was held to</b>" if side else "")
            if own else "")
    evals = rows.dropna(subset=["val_loss"]) if "val_loss" in rows else rows.iloc[:0]
    if evals.empty or int(evals["step"].iloc[-1]) < total_steps:
        return said
    end = float(evals["val_loss"].iloc[-1])
    missed = own is not None and not own["low"] <= end <= own["high"]
    return said + f"; it ended at {end:.4f}" + (", <b>outside what its own curve predicted</b>" if missed else "")


def _num(value) -> str:
    return html.escape(f"{value:.4g}" if isinstance(value, float) else str(value))


def opening(root: Path, name: str, where: Scope, png: Callable[[plt.Figure, str], str]) -> str:
    """The opening section's body: per transferred config its settings, laws and prediction; per full run its
    curve on its predicted band and the verdict."""
    parts = []
    for path in sorted((root / name / "transfer").glob("*.yaml")):
        config = RunConfig.load(inside_root(path, root, "transfer"))
        p = config.provenance.prediction
        predicted = (f"predicted final validation loss {p['loss']:.4f} [{p['low']:.4f}, {p['high']:.4f}]; "
                     f"{band_line(p)}" if "loss" in p else
                     "no predicted loss (`sweep verify` across width and tokens makes one)")
        parts.append(f"<h3>{html.escape(path.name)}</h3><h4>settings</h4>{settings_table(config)}"
                     f"<h4>laws</h4>{laws_table(config)}<p>{html.escape(predicted)}</p>")
    runs = run_rows(where)
    for run in runs[runs["kind"] == "full"].itertuples():
        rows = full_curve(run, root)
        steps = int(total_steps(run, rows)) if rows is not None else 0
        figure = png(band_figure(run.run, rows, steps), f"{run.run} on its predicted band") \
            if rows is not None and rows["val_loss"].notna().any() else ""
        prediction = RunConfig.load(inside_root(Path(run.path) / "config.yaml", root, "runs")).provenance.prediction
        parts.append(f"<h3>full run {html.escape(run.run)}</h3><p>{verdict(rows, steps, prediction)}</p>{figure}")
    return "".join(parts) or '<p class="missing">not run yet: <code>sweep transfer</code>, then the full run</p>'


def full_curve(run, root: Path) -> pd.DataFrame | None:
    """Every logged row of a run (its predicted columns too), its folder kept inside the results root."""
    folder = Path(run.path).parent.parent / "curves" / f"study={run.sweep}" / f"kind={run.kind}" / f"run={run.run}"
    for path in [folder, *folder.glob("*")]:
        inside_root(path, root, "curves")
    return read_run(folder)
