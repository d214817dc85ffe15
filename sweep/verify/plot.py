"""The Figure-1 plot of Tensor Programs V: loss against log₂ of the setting, a line per axis value (width by
default), one panel per parametrization (μP beside SP), each value's fitted optimum marked, the drift and the
law (slope of log₂ optimum against log₂ axis value, with its interval) in the title."""
from __future__ import annotations

from pathlib import Path

import matplotlib
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from sweep.verify.analysis import Verdict, seed_mean
from trainer.atomic import atomic_path

matplotlib.use("Agg")  # write files, never open a window (fine after importing pyplot: no figure exists yet)

NAMES = {"mup": "μP", "sp": "SP"}


def figure_one(points: pd.DataFrame, table: pd.DataFrame, verdicts: list[Verdict], param: str, path: Path,
               axis: str = "width", laws: dict | None = None) -> None:
    params = sorted(points["parametrization"].unique(), key=lambda p: p != "mup")
    widths = sorted(points[axis].unique())
    colours = {w: plt.get_cmap("viridis")(i / max(1, len(widths) - 1)) for i, w in enumerate(widths)}
    fig, axes = plt.subplots(1, len(params), figsize=(5.2 * len(params), 4.2), sharey=True, squeeze=False)
    by_param = {v.parametrization: v for v in verdicts}
    finite = points["loss"].dropna()
    top = float(np.nanmin([points["loss_init"].median(), finite.quantile(0.9) + 0.25])) if len(finite) else 1.0
    for ax, p in zip(axes[0], params, strict=True):
        for w in widths:
            g = points[(points["parametrization"] == p) & (points[axis] == w)]
            mean = seed_mean(g)
            ax.plot(mean.index, mean.to_numpy(), marker=".", color=colours[w], label=f"{axis} {w:g}")
            best = table[(table["parametrization"] == p) & (table[axis] == w)].iloc[0]
            if np.isfinite(best["optimum_x"]):
                ax.plot(best["optimum_x"], best["loss"], marker="*", markersize=13, color=colours[w],
                        mec="black", mew=0.6)
        v = by_param[p]
        law = (laws or {}).get(p)
        slope = f"\nslope {law['slope']:.2f} [{law['low']:.2f}, {law['high']:.2f}] per octave of {axis}" if law else ""
        noise = f"seed noise ±{v.noise:.2f}" if np.isfinite(v.noise) else "seed noise unknown: one seed"
        ax.set_title(f"{NAMES.get(p, p)}: drift {v.drift:.2f} octaves ({noise}){slope}", fontsize=10)
        ax.set_xlabel(f"log₂ {param}")
        lowest = min(float(finite.min()), float(table["loss"].min())) if len(finite) else None
        ax.set_ylim(bottom=lowest - 0.03 if lowest is not None else None, top=top)
        ax.grid(alpha=0.3)
    axes[0][0].set_ylabel("validation loss")
    axes[0][-1].legend(fontsize=8)
    fig.tight_layout()
    with atomic_path(path) as tmp:
        fig.savefig(tmp, dpi=100, format="png")
    plt.close(fig)
