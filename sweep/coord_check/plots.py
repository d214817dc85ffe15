"""Plots, written as PNG files atomically (matplotlib's Agg backend, no display needed)."""
from __future__ import annotations

from pathlib import Path

import matplotlib
import matplotlib.pyplot as plt
import pandas as pd

from trainer.atomic import atomic_path

matplotlib.use("Agg")  # write files, never open a window (fine after importing pyplot: no figure exists yet)


def coord_check_grid(coords: pd.DataFrame, table: pd.DataFrame, path: str | Path, title: str) -> None:
    """The classic coordinate-check grid, log-log against width, a line per module and one panel per step:
    a row of mean |x_t| and a row of mean |Δx_t| = |x_t − x_0| per regime (one regime: two rows).

    Modules that pass are thin grey lines; those that fail are drawn in colour and named in the legend.
    """
    failed = table.loc[~table["passed"], ["regime", "module"]].itertuples(index=False, name=None)
    colours = {key: plt.get_cmap("tab20")(i % 20) for i, key in enumerate(failed)}
    mean = coords.groupby(["regime", "step", "module", "width"], sort=False)[["size", "delta"]].mean().reset_index()
    steps, widths = sorted(mean["step"].unique()), sorted(mean["width"].unique())
    rows = [(regime, column) for regime in mean["regime"].unique() for column in ("size", "delta")]
    fig, axes = plt.subplots(len(rows), len(steps), figsize=(2.6 * len(steps), 2.8 * len(rows)), sharey="row",
                             squeeze=False)
    for (regime, column), row in zip(rows, axes, strict=True):
        for ax, step in zip(row, steps, strict=True):
            if column == "delta" and step == 0:  # Δx_0 = 0 by definition: nothing to draw
                ax.set_axis_off()
                continue
            for module, g in mean[(mean["regime"] == regime) & (mean["step"] == step)].groupby("module", sort=False):
                g = g[g[column] > 0]
                colour = colours.get((regime, module))
                ax.plot(g["width"], g[column], marker=".", lw=0.7 if colour is None else 1.4,
                        alpha=0.45 if colour is None else 1.0, color=colour or "grey",
                        label=None if colour is None else module, zorder=1 if colour is None else 2)
            ax.set(xscale="log", yscale="log", title=f"t = {step}", xlabel="width")
            ax.set_xticks(widths, labels=[str(w) for w in widths])
            ax.minorticks_off()
        first = row[0] if column == "size" else row[1]
        first.tick_params(labelleft=True)
        first.set_ylabel(f"{regime}\n{'mean |x|' if column == 'size' else 'mean |Δx|'}".strip())
        if any(key[0] == regime for key in colours):
            row[-1].legend(fontsize=6, loc="upper left", bbox_to_anchor=(1.02, 1.0), title="fails", title_fontsize=7)
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    with atomic_path(path) as tmp:
        fig.savefig(tmp, dpi=90, format="png", bbox_inches="tight")
    plt.close(fig)
