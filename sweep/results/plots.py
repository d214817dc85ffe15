"""Plots of a study, as PNG (matplotlib) and one self-contained HTML page (Optuna's plotly views):
optimization history, parameter importance (PED-ANOVA, no scikit-learn), parallel coordinates,
slice, the loss curves of the top trials read from the Parquet curve store, and the best trial's
instability signals when its run logged them (`signals.every`)."""
from __future__ import annotations

import warnings
from pathlib import Path

import matplotlib
import matplotlib.pyplot as plt
import optuna
from markupsafe import Markup
from optuna.trial import TrialState

from sweep.study.lookup import read_curve
from trainer.atomic import atomic_path

matplotlib.use("Agg")  # write files, never open a window (fine after importing pyplot: no figure exists yet)


def importance_evaluator() -> optuna.importance.BaseImportanceEvaluator:
    return optuna.importance.PedAnovaImportanceEvaluator()


VIEWS = {
    "history": lambda v, s: v.plot_optimization_history(s),
    "importance": lambda v, s: v.plot_param_importances(s, evaluator=importance_evaluator()),
    "parallel": lambda v, s: v.plot_parallel_coordinate(s),
    "slice": lambda v, s: v.plot_slice(s),
}


def write_plots(study: optuna.Study, out: Path, top: int) -> tuple[list[Path], dict[str, str]]:
    """Write every plot that the study's trials allow; returns (files written, {plot: why skipped})."""
    written, skipped = [], {}
    complete = [t for t in study.get_trials(deepcopy=False) if t.state == TrialState.COMPLETE]
    if len(complete) < 2:
        return written, {"all": f"{len(complete)} complete trial(s); plots need 2"}
    figures = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        for name, view in VIEWS.items():
            try:
                axes = view(optuna.visualization.matplotlib, study)
                written.append(save_png(figure_of(axes), out / f"{name}.png"))
                figures.append((name, view(optuna.visualization, study)))
            except (ValueError, RuntimeError, ZeroDivisionError) as err:  # e.g. importance with one varying parameter
                skipped[name] = " ".join(str(err).split())[:200]
    ranked = sorted(complete, key=lambda t: t.value)
    curves = curves_figure(ranked[:top])
    if curves is not None:
        written.append(save_png(curves, out / "curves.png"))
    signals = signals_figure(ranked[0])
    if signals is not None:
        written.append(save_png(signals, out / "signals.png"))
    if figures:
        written.append(save_html(figures, out / "plots.html", study.study_name))
    return written, skipped


def figure_of(axes) -> plt.Figure:
    first = axes.flat[0] if hasattr(axes, "flat") else axes
    return first.get_figure()


def save_png(figure: plt.Figure, path: Path) -> Path:
    with atomic_path(path) as tmp:
        figure.savefig(tmp, format="png", dpi=110, bbox_inches="tight")
    plt.close(figure)
    return path


def save_html(figures: list, path: Path, title: str) -> Path:
    """One page, plotly.js embedded once (no network needed to open it); the title is escaped (`Markup.format`)."""
    parts = Markup("").join(Markup("<h2>{}</h2>{}").format(name, Markup(fig.to_html(full_html=False,
                                                                                   include_plotlyjs=(i == 0))))
                            for i, (name, fig) in enumerate(figures))
    page = Markup("<!doctype html><html><head><meta charset='utf-8'><title>{title}</title></head>"
                  "<body><h1>{title}</h1>{parts}</body></html>").format(title=title, parts=parts)
    with atomic_path(path) as tmp:
        tmp.write_text(page)
    return path


def curves_figure(trials: list) -> plt.Figure | None:
    """Validation (markers) and training (line) loss against step for each trial's first seed."""
    frames = [(t, curve) for t in trials if (curve := read_curve(t)) is not None]
    if not frames:
        return None
    figure, ax = plt.subplots(figsize=(7, 4.5))
    for t, curve in frames:
        line, = ax.plot(curve["step"], curve["train_loss"], alpha=0.35, lw=1)
        val = curve.dropna(subset=["val_loss"])
        ax.plot(val["step"], val["val_loss"], "o-", color=line.get_color(), ms=3,
                label=f"trial {t.number}: {t.value:.4f}")
    ax.set_xlabel("step")
    ax.set_ylabel("loss (line: train, dots: validation)")
    ax.set_title(f"top {len(frames)} trials")
    ax.legend(fontsize=8)
    return figure


SIGNAL_FAMILIES = ("grad_norm", "update_ratio", "act_max", "attn_logit_max", "logit")


def signals_figure(trial) -> plt.Figure | None:
    """The instability signals of one trial (`trainer/signals.py` columns, when its run logged them): one
    panel per family (grad norms, update/weight ratios, block activation maxima, attention-logit maxima,
    output logit max and mean log Z), a line per group, block or layer, log scale."""
    curve = read_curve(trial)
    if curve is None:
        return None
    families = {f: [c for c in curve.columns if c.split(".")[0] == f or (f == "logit" and c.startswith("logit_"))]
                for f in SIGNAL_FAMILIES}
    families = {f: columns for f, columns in families.items() if columns and curve[columns].notna().any().any()}
    if not families:
        return None
    figure, axes = plt.subplots(1, len(families), figsize=(4.2 * len(families), 3.6), squeeze=False)
    for ax, (family, columns) in zip(axes.flat, families.items(), strict=True):
        for column in columns:
            points = curve.dropna(subset=[column])
            ax.plot(points["step"], points[column].abs(), marker=".", ms=3, lw=1,
                    label=column.removeprefix(f"{family}."))
        ax.set_yscale("log")
        ax.set_title(family, fontsize=9)
        ax.set_xlabel("step")
        ax.legend(fontsize=6)
    figure.suptitle(f"signals of trial {trial.number} (best, {trial.value:.4f})", fontsize=10)
    figure.tight_layout()
    return figure
